package git

import (
	"slices"
	"strings"
	"testing"
)

func TestDiffPatch(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	r := newRepo(t, map[string]string{
		"a.go":       "l1\nl2\nl3\nl4\nl5\n",
		"old.go":     "x\ny\n",
		"moved.go":   "m\n",
		"bin.dat":    "\x00\x01",
		"sp ace.txt": "s\n",
	})
	base, _ := r.RevParse(ctx, "HEAD")
	head := commitOn(t, r, "c", base, map[string]string{
		"a.go":       "l1\nL2\nl3\nl5\nl6\n", // l2 changed, l4 removed, l6 added
		"old.go":     "",
		"new.go":     "n1\nn2\n",
		"bin.dat":    "\x00\x02",
		"sp ace.txt": "S\n",
		"é.txt":      "accent\n",
	})
	ps, err := r.DiffPatch(ctx, base, head)
	if err != nil {
		t.Fatal(err)
	}
	byPath := map[string]FilePatch{}
	for _, p := range ps {
		byPath[p.Path()] = p
	}
	a := byPath["a.go"]
	want := []Line{
		{Op: '-', OldLine: 2, Text: "l2"}, {Op: '+', NewLine: 2, Text: "L2"},
		{Op: '-', OldLine: 4, Text: "l4"},
		{Op: '+', NewLine: 5, Text: "l6"},
	}
	if !slices.Equal(a.Lines, want) {
		t.Errorf("a.go lines %+v, want %+v", a.Lines, want)
	}
	if o := byPath["old.go"]; o.NewPath != "" || o.OldPath != "old.go" || len(o.Lines) != 2 || o.Lines[1].OldLine != 2 {
		t.Errorf("deleted file %+v", o)
	}
	if n := byPath["new.go"]; n.OldPath != "" || n.NewPath != "new.go" || len(n.Lines) != 2 || n.Lines[0].NewLine != 1 {
		t.Errorf("added file %+v", n)
	}
	if b := byPath["bin.dat"]; !b.Binary || len(b.Lines) != 0 {
		t.Errorf("binary file %+v", b)
	}
	if s := byPath["sp ace.txt"]; len(s.Lines) != 2 {
		t.Errorf("path with a space %+v", s)
	}
	if e := byPath["é.txt"]; len(e.Lines) != 1 || e.Lines[0].Text != "accent" {
		t.Errorf("non-ASCII path %+v (all: %v)", e, ps)
	}
	// Limited to paths.
	only, err := r.DiffPatch(ctx, base, head, "a.go")
	if err != nil || len(only) != 1 {
		t.Errorf("DiffPatch(a.go) = %+v, %v", only, err)
	}
	blob, err := r.ReadBlob(ctx, head, "a.go")
	if err != nil || string(blob) != "l1\nL2\nl3\nl5\nl6\n" {
		t.Errorf("ReadBlob = %q, %v", blob, err)
	}
	blobs, err := r.ReadBlobs(ctx, head, []string{"new.go", "old.go", "sp ace.txt", "bin.dat", "pkgdir"})
	if err != nil {
		t.Fatal(err)
	}
	if len(blobs) != 3 || string(blobs["new.go"]) != "n1\nn2\n" || string(blobs["sp ace.txt"]) != "S\n" || string(blobs["bin.dat"]) != "\x00\x02" {
		t.Errorf("ReadBlobs = %q", blobs)
	}
}

func TestParsePatch(t *testing.T) {
	t.Parallel()
	patch := `diff --git "a/q\"uote.go" "b/q\"uote.go"
index 1..2 100644
--- "a/q\"uote.go"
+++ "b/q\"uote.go"
@@ -3 +3,2 @@ func x() {
-old
+new
+newer
\ No newline at end of file
diff --git a/empty.txt b/empty.txt
new file mode 100644
index 0000000..e69de29
diff --git a/mode.sh b/mode.sh
old mode 100644
new mode 100755
diff --git a/ctx.go b/ctx.go
--- a/ctx.go
+++ b/ctx.go
@@ -10,3 +10,3 @@
 keep
-gone
+here
 keep
`
	ps, err := ParsePatch(patch)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 4 {
		t.Fatalf("%d files: %+v", len(ps), ps)
	}
	if ps[0].Path() != `q"uote.go` || len(ps[0].Lines) != 3 || ps[0].Lines[2].NewLine != 4 {
		t.Errorf("quoted: %+v", ps[0])
	}
	if ps[1].OldPath != "" || ps[1].NewPath != "empty.txt" {
		t.Errorf("empty new file: %+v", ps[1])
	}
	if ps[2].Path() != "mode.sh" || len(ps[2].Lines) != 0 {
		t.Errorf("mode change: %+v", ps[2])
	}
	if l := ps[3].Lines; len(l) != 2 || l[0].OldLine != 11 || l[1].NewLine != 11 {
		t.Errorf("context lines: %+v", l)
	}
	for _, bad := range []string{
		"diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n",               // ends inside a hunk
		"diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -x +1 @@\n",                   // bad header
		"diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1,2 +1 @@\n-a\nunexpected\n", // junk in hunk
		"diff --git a/x b/x\n--- \"a/x\\9\"\n",                                  // bad escape
	} {
		if _, err := ParsePatch(bad); err == nil {
			t.Errorf("ParsePatch(%q) succeeded", bad)
		}
	}
}

func TestParseMergeTree(t *testing.T) {
	t.Parallel()
	tree := strings.Repeat("e", 40)
	out := tree + "\x00a.txt\x00b.txt\x00\x001\x00a.txt\x00Auto-merging\x00Auto-merging a.txt\x00" +
		"2\x00a.txt\x00b.txt\x00CONFLICT (contents)\x00Merge conflict in a.txt\x00"
	res, err := parseMergeTree(out, false)
	if err != nil {
		t.Fatal(err)
	}
	if res.Tree != tree || !slices.Equal(res.Conflicts, []string{"a.txt", "b.txt"}) || len(res.Messages) != 2 {
		t.Fatalf("%+v", res)
	}
	if m := res.Messages[1]; m.Type != "CONFLICT (contents)" || !slices.Equal(m.Paths, []string{"a.txt", "b.txt"}) {
		t.Errorf("message %+v", m)
	}
	for _, bad := range []string{"", "\x00", tree + "\x00a\x00\x00x\x00", tree + "\x00a\x00\x009\x00p\x00"} {
		if _, err := parseMergeTree(bad, false); err == nil {
			t.Errorf("parseMergeTree(%q) succeeded", bad)
		}
	}
}

// FuzzParsePatch: no input panics; line numbers are positive and ops
// consistent.
func FuzzParsePatch(f *testing.F) {
	f.Add("diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1,2 +1 @@\n-a\n-b\n+c\n")
	f.Add("diff --git \"a/\\303\\251\" \"b/\\303\\251\"\n--- /dev/null\n+++ \"b/\\303\\251\"\n@@ -0,0 +1 @@\n+x\n")
	f.Add("Binary files a/x and b/x differ\n")
	f.Fuzz(func(t *testing.T, s string) {
		ps, err := ParsePatch(s)
		if err != nil {
			return
		}
		for _, p := range ps {
			for _, l := range p.Lines {
				if l.Op == '-' && l.OldLine < 1 || l.Op == '+' && l.NewLine < 1 || l.Op != '-' && l.Op != '+' {
					t.Fatalf("bad line %+v in %q", l, s)
				}
			}
		}
	})
}
