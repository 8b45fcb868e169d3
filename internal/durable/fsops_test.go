package durable_test

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apiary-dev/apiary/internal/durable"
)

func intp(i int) *int { return &i }

func TestRead(t *testing.T) {
	t.Parallel()
	f := newFixture(t, durable.Config{})
	must(t, os.WriteFile(f.path("l.txt"), []byte("1\n2\n3\n4\n5"), 0o644))
	must(t, os.WriteFile(f.path("bin"), []byte{0, 0xff, 1}, 0o644))
	ctx := t.Context()
	for _, tc := range []struct {
		p          durable.ReadParams
		want       string
		start, end int
	}{
		{durable.ReadParams{Path: "l.txt"}, "1\n2\n3\n4\n5", 1, 5},
		{durable.ReadParams{Path: "l.txt", Head: intp(2)}, "1\n2\n", 1, 2},
		{durable.ReadParams{Path: "l.txt", Tail: intp(2)}, "4\n5", 4, 5},
		{durable.ReadParams{Path: "l.txt", StartLine: intp(2), EndLine: intp(3)}, "2\n3\n", 2, 3},
		{durable.ReadParams{Path: "l.txt", StartLine: intp(9)}, "", 9, 8},
	} {
		r, err := f.w.Read(ctx, tc.p)
		must(t, err)
		if r["content"] != tc.want || r["start_line"] != tc.start || r["end_line"] != tc.end || r["sha256"] != sha("1\n2\n3\n4\n5") || r["total_lines"] != 5 {
			t.Errorf("%+v: %v", tc.p, r)
		}
	}
	_, err := f.w.Read(ctx, durable.ReadParams{Path: "l.txt", Head: intp(1), Tail: intp(1)})
	asErr(t, err)
	_, err = f.w.Read(ctx, durable.ReadParams{Path: "bin"})
	if e := asErr(t, err); reasonOf(e) != "not_valid_utf8" || e.Action != durable.ActionRetryLater {
		t.Fatalf("binary as utf-8: %v", e)
	}
	r, err := f.w.Read(ctx, durable.ReadParams{Path: "bin", Encoding: "base64"})
	must(t, err)
	if r["content"] != base64.StdEncoding.EncodeToString([]byte{0, 0xff, 1}) {
		t.Fatalf("base64 %v", r)
	}
	_, err = f.w.Read(ctx, durable.ReadParams{Path: "missing"})
	if e := asErr(t, err); e.Kind != durable.KindStalePrecondition {
		t.Fatalf("missing %v", e)
	}
	big := strings.Repeat(strings.Repeat("x", 1000)+"\n", 1500)
	must(t, os.WriteFile(f.path("big.txt"), []byte(big), 0o644))
	r, err = f.w.Read(ctx, durable.ReadParams{Path: "big.txt"})
	must(t, err)
	if r["truncated"] != true || len(r["content"].(string)) > 1<<20 || r["next_start_line"] != r["end_line"].(int)+1 {
		t.Fatalf("big read: truncated=%v end=%v", r["truncated"], r["end_line"])
	}
}

func TestEdit(t *testing.T) {
	t.Parallel()
	f := newFixture(t, durable.Config{})
	ctx := t.Context()
	must(t, os.WriteFile(f.path("crlf.txt"), []byte("a\r\nfoo\r\nb\r\n"), 0o600))
	r, err := f.w.Edit(ctx, durable.EditParams{Path: "crlf.txt", OldString: "foo\nb", NewString: "bar\nbaz"})
	must(t, err)
	fi, _ := os.Stat(f.path("crlf.txt"))
	if got := f.read(t, "crlf.txt"); got != "a\r\nbar\r\nbaz\r\n" || fi.Mode().Perm() != 0o600 || r["replacements"] != 1 {
		t.Fatalf("crlf edit %q mode %v", got, fi.Mode())
	}
	must(t, os.WriteFile(f.path("x.go"), []byte("x := 1\ny := 1\n"), 0o644))
	_, err = f.w.Edit(ctx, durable.EditParams{Path: "x.go", OldString: "1", NewString: "2"})
	if e := asErr(t, err); reasonOf(e) != "occurrence_count_mismatch" || e.Context["actual_count"] != 2 {
		t.Fatalf("ambiguous %v", e)
	}
	r, err = f.w.Edit(ctx, durable.EditParams{Path: "x.go", OldString: "1", NewString: "2", ExpectedCount: intp(2), DryRun: true})
	must(t, err)
	wantDiff := "--- a/x.go\n+++ b/x.go\n@@ -1,2 +1,2 @@\n-x := 1\n-y := 1\n+x := 2\n+y := 2\n"
	if r["diff"] != wantDiff || f.read(t, "x.go") != "x := 1\ny := 1\n" {
		t.Fatalf("dry run diff %q", r["diff"])
	}
	_, err = f.w.Edit(ctx, durable.EditParams{Path: "x.go", OldString: "x", NewString: "z", ExpectedPrevSHA256: strp(sha("stale"))})
	if e := asErr(t, err); e.Kind != durable.KindStalePrecondition {
		t.Fatalf("hash guard %v", e)
	}
	_, err = f.w.Edit(ctx, durable.EditParams{Path: "x.go", OldString: "y := 1\n", NewString: "", ExpectedPrevSHA256: strp(sha("x := 1\ny := 1\n"))})
	must(t, err)
	if f.read(t, "x.go") != "x := 1\n" {
		t.Fatal("delete edit")
	}
}

func TestUnifiedDiffHunks(t *testing.T) {
	t.Parallel()
	f := newFixture(t, durable.Config{})
	var lines []string
	for i := 1; i <= 20; i++ {
		lines = append(lines, fmt.Sprintf("line %d", i))
	}
	text := strings.Join(lines, "\n") + "\n"
	must(t, os.WriteFile(f.path("d.txt"), []byte(text), 0o644))
	r, err := f.w.Edit(t.Context(), durable.EditParams{Path: "d.txt", OldString: "line 2\n", NewString: "two\n", DryRun: true})
	must(t, err)
	want := "--- a/d.txt\n+++ b/d.txt\n@@ -1,5 +1,5 @@\n line 1\n-line 2\n+two\n line 3\n line 4\n line 5\n"
	if r["diff"] != want {
		t.Fatalf("diff:\n%s\nwant:\n%s", r["diff"], want)
	}
	r, err = f.w.Edit(t.Context(), durable.EditParams{Path: "d.txt", OldString: "line 20\n", NewString: "line 20", DryRun: true})
	must(t, err)
	if !strings.Contains(r["diff"].(string), "+line 20\n\\ No newline at end of file\n") || !strings.Contains(r["diff"].(string), "@@ -17,4 +17,4 @@") {
		t.Fatalf("eof diff:\n%s", r["diff"])
	}
}

func TestListMoveMkdirStatSearch(t *testing.T) {
	t.Parallel()
	f := newFixture(t, durable.Config{})
	ctx := t.Context()
	for _, p := range []string{"a/b/c.go", "a/d.go", "e.txt", ".git/config"} {
		_, err := f.w.SafeWrite(ctx, durable.SafeWriteParams{Path: p, Content: "package x // " + p + "\n"})
		must(t, err)
	}
	names := func(r durable.Result) string {
		var s []string
		for _, e := range r["entries"].([]map[string]any) {
			s = append(s, e["path"].(string))
		}
		return strings.Join(s, " ")
	}
	r, err := f.w.List(ctx, durable.ListParams{})
	must(t, err)
	if got := names(r); got != ".apiary .git a e.txt" {
		t.Fatalf("list . = %q", got)
	}
	r, err = f.w.List(ctx, durable.ListParams{Path: "a", Depth: intp(3)})
	must(t, err)
	if got := names(r); got != "a/b a/b/c.go a/d.go" {
		t.Fatalf("tree a = %q", got)
	}
	r, err = f.w.List(ctx, durable.ListParams{Glob: strp("**/*.go")})
	must(t, err)
	if got := names(r); got != "a/b/c.go a/d.go" {
		t.Fatalf("glob = %q", got)
	}
	_, err = f.w.Move(ctx, durable.MoveParams{From: "e.txt", To: "a/d.go"})
	if e := asErr(t, err); reasonOf(e) != "destination_exists" || f.read(t, "a/d.go") != "package x // a/d.go\n" {
		t.Fatalf("move over existing %v", e)
	}
	mv, err := f.w.Move(ctx, durable.MoveParams{From: "e.txt", To: "new/dir/e.txt"})
	must(t, err)
	if mv["to"] != "new/dir/e.txt" || f.read(t, "new/dir/e.txt") != "package x // e.txt\n" {
		t.Fatalf("move %v", mv)
	}
	_, err = f.w.Move(ctx, durable.MoveParams{From: "new/dir/e.txt", To: "a/d.go", Overwrite: true, ExpectedPrevSHA256: strp(sha("package x // a/d.go\n"))})
	must(t, err)
	md, err := f.w.Mkdir(ctx, durable.MkdirParams{Path: "m/n"})
	must(t, err)
	again, err := f.w.Mkdir(ctx, durable.MkdirParams{Path: "m/n"})
	must(t, err)
	if md["created"] != true || again["created"] != false {
		t.Fatalf("mkdir %v %v", md, again)
	}
	st, err := f.w.Stat(ctx, "a/d.go")
	must(t, err)
	if st["sha256"] != sha("package x // e.txt\n") || st["type"] != "file" || st["mode"] != "0644" {
		t.Fatalf("stat %v", st)
	}
	if st, _ := f.w.Stat(ctx, "nope"); st["exists"] != false {
		t.Fatalf("stat missing %v", st)
	}
	s, err := f.w.Search(ctx, durable.SearchParams{Pattern: "PACKAGE X //", CaseInsensitive: true})
	must(t, err)
	if ms := s["matches"].([]map[string]any); len(ms) != 2 || ms[0]["path"] != "a/b/c.go" || ms[0]["line"] != 1 || ms[0]["col"] != 1 {
		t.Fatalf("search %v", s)
	}
	s, err = f.w.Search(ctx, durable.SearchParams{Pattern: `x // [a-z]`, Regex: true, MaxResults: intp(1)})
	must(t, err)
	if s["truncated"] != true || len(s["matches"].([]map[string]any)) != 1 {
		t.Fatalf("bounded search %v", s)
	}
	if _, err := f.w.Search(ctx, durable.SearchParams{Pattern: "(", Regex: true}); err == nil {
		t.Fatal("bad regex accepted")
	}
}

// TestGlobPathological: globs agents send to rw.list and rw.search are
// matched in time linear in the pattern times the path. With the
// backtracking matcher this package had, eight "**" against a 25-segment
// path took 228 ms per candidate and each further "**" multiplied that;
// these sixteen would not finish before the test's deadline.
func TestGlobPathological(t *testing.T) {
	t.Parallel()
	f := newFixture(t, durable.Config{})
	deep := strings.Repeat("d/", 18) + "leaf.txt" // rw.list descends 20 levels
	must(t, os.MkdirAll(filepath.Dir(f.path(deep)), 0o755))
	must(t, os.WriteFile(f.path(deep), []byte("needle\n"), 0o644))
	ctx := t.Context()
	for _, tc := range []struct {
		glob string
		want int
	}{
		{strings.Repeat("**/", 8) + "x.go", 0},
		{strings.Repeat("**/d/", 8) + "nomatch", 0},
		{strings.Repeat("**/", 16) + "*.txt", 1},
		{"**/" + strings.Repeat("d/**/", 12) + "leaf.txt", 1},
		{strings.Repeat("*/", 18) + "leaf.{txt,md}", 1},
	} {
		res, err := f.w.List(ctx, durable.ListParams{Glob: strp(tc.glob)})
		must(t, err)
		files := 0
		for _, e := range res["entries"].([]map[string]any) {
			if e["type"] == "file" {
				files++
			}
		}
		if files != tc.want {
			t.Fatalf("list %q: %d files, want %d", tc.glob, files, tc.want)
		}
		sr, err := f.w.Search(ctx, durable.SearchParams{Pattern: "needle", Glob: strp(tc.glob)})
		must(t, err)
		if n := len(sr["matches"].([]map[string]any)); n != tc.want {
			t.Fatalf("search %q: %d matches, want %d", tc.glob, n, tc.want)
		}
	}
	if _, err := f.w.List(ctx, durable.ListParams{Glob: strp("[")}); err == nil {
		t.Fatal("a malformed glob was accepted")
	}
}
