package durable_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apiary-dev/apiary/internal/durable"
)

// TestDurableOnDisk runs the write recipe on the real disk (t.TempDir), not
// tmpfs: create, overwrite keeping the mode, append, and the journal.
func TestDurableOnDisk(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	w, err := durable.Open(t.Context(), durable.Config{Roots: []string{ws}})
	must(t, err)
	defer w.Close()
	ctx := t.Context()
	_, err = w.SafeWrite(ctx, durable.SafeWriteParams{Path: "d/e/f.sh", Content: "#!/bin/sh\n"})
	must(t, err)
	must(t, os.Chmod(filepath.Join(ws, "d/e/f.sh"), 0o750))
	_, err = w.SafeWrite(ctx, durable.SafeWriteParams{Path: "d/e/f.sh", Content: "echo\n", Mode: "append"})
	must(t, err)
	fi, err := os.Stat(filepath.Join(ws, "d/e/f.sh"))
	must(t, err)
	b, _ := os.ReadFile(filepath.Join(ws, "d/e/f.sh"))
	if fi.Mode().Perm() != 0o750 || string(b) != "#!/bin/sh\necho\n" {
		t.Fatalf("mode %v content %q", fi.Mode(), b)
	}
	tail, err := w.JournalTail(ctx, durable.JournalTailParams{})
	must(t, err)
	if n := len(tail["entries"].([]map[string]any)); n != 2 {
		t.Fatalf("%d journal rows", n)
	}
}

// TestCreateNeverClobbers races rw.safe_write create against an external
// O_EXCL creator of the same file 200 times: exactly one wins each time and
// the file holds the winner's bytes (a create implemented as check-then-
// rename would replace the external file and report success).
func TestCreateNeverClobbers(t *testing.T) {
	t.Parallel()
	f := newFixture(t, durable.Config{})
	for i := range 200 {
		name := fmt.Sprintf("race%d.txt", i)
		var wg sync.WaitGroup
		var extErr, ourErr error
		wg.Go(func() {
			var file *os.File
			file, extErr = os.OpenFile(f.path(name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
			if extErr == nil {
				file.WriteString("external")
				file.Close()
			}
		})
		wg.Go(func() {
			_, ourErr = f.w.SafeWrite(t.Context(), durable.SafeWriteParams{Path: name, Content: "ours"})
		})
		wg.Wait()
		got := f.read(t, name)
		switch {
		case ourErr == nil && extErr == nil:
			t.Fatalf("%s: both creates succeeded; file %q", name, got)
		case ourErr == nil && got != "ours", extErr == nil && got != "external":
			t.Fatalf("%s: winner's bytes lost: %q (ours %v, external %v)", name, got, ourErr, extErr)
		case ourErr != nil && !errors.Is(ourErr, durable.ErrStalePrecondition):
			t.Fatalf("%s: %v", name, ourErr)
		}
	}
}

// TestCancelBeforeCommit: a cancelled call leaves no file, temp or journal
// row behind.
func TestCancelBeforeCommit(t *testing.T) {
	t.Parallel()
	f := newFixture(t, durable.Config{})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := f.w.SafeWrite(ctx, durable.SafeWriteParams{Path: "c.txt", Content: "x"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
	_, err := f.w.ChunkWrite(t.Context(), durable.ChunkWriteParams{Session: "s", Index: 1, Content: "x"})
	must(t, err)
	if _, err := f.w.ChunkCompose(ctx, durable.ChunkComposeParams{Session: "s", OutputPath: "out.txt"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("compose: %v", err)
	}
	for _, p := range []string{"c.txt", "out.txt"} {
		if _, err := os.Lstat(f.path(p)); err == nil {
			t.Fatalf("%s written", p)
		}
	}
	filepath.WalkDir(f.ws, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.Contains(d.Name(), ".tmp.") {
			t.Errorf("temp left: %s", p)
		}
		return nil
	})
	tail, _ := f.w.JournalTail(t.Context(), durable.JournalTailParams{})
	if n := len(tail["entries"].([]map[string]any)); n != 1 { // the chunk part only
		t.Fatalf("%d journal rows", n)
	}
}

// TestConcurrentChunkAppends: 50 parallel appends leave 50 parts.
func TestConcurrentChunkAppends(t *testing.T) {
	t.Parallel()
	f := newFixture(t, durable.Config{})
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			_, err := f.w.ChunkAppend(t.Context(), durable.ChunkAppendParams{Session: "p", Content: fmt.Sprint(i)})
			if err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	st, err := f.w.ChunkStatus(t.Context(), "p")
	must(t, err)
	if n := len(st["present_indices"].([]int)); n != 50 {
		t.Fatalf("%d parts", n)
	}
}

// TestStartupRecovery: Open sweeps temps of dead processes and stale ones,
// keeps a live process's fresh temp, cuts a torn journal line and reports
// drift.
func TestStartupRecovery(t *testing.T) {
	t.Parallel()
	ws := filepath.Join(tmpParent(t), "ws")
	must(t, os.MkdirAll(filepath.Join(ws, ".apiary/durable"), 0o755))
	live := fmt.Sprintf(".a.tmp.%d.0123456789ab", os.Getpid())
	stale := fmt.Sprintf(".b.tmp.%d.0123456789ab", os.Getpid())
	for _, n := range []string{".x.tmp.999999999.abcdefabcdef", live, stale} {
		must(t, os.WriteFile(filepath.Join(ws, n), []byte("partial"), 0o644))
	}
	old := time.Now().Add(-time.Hour)
	must(t, os.Chtimes(filepath.Join(ws, stale), old, old))
	must(t, os.WriteFile(filepath.Join(ws, "a.txt"), []byte("changed"), 0o644))
	journal := `{"bytes":1,"caller":"x","journal_id":"wj_1","mode":"create","path":"a.txt","sha256":"` + sha("a") + `","ts":"2026-01-01T00:00:00Z"}` + "\n" + `{"bytes":1,"cal`
	must(t, os.WriteFile(filepath.Join(ws, ".apiary/durable/journal.jsonl"), []byte(journal), 0o644))
	w, err := durable.Open(t.Context(), durable.Config{Roots: []string{ws}, SweepAge: 10 * time.Minute})
	must(t, err)
	defer w.Close()
	rep := w.Startup()
	if len(rep.SweptTemps) != 2 || rep.TornJournalBytes != len(`{"bytes":1,"cal`) || rep.JournalRows != 1 || len(rep.Drifted) != 1 || rep.Drifted[0] != "a.txt" {
		t.Fatalf("report %+v", rep)
	}
	if _, err := os.Stat(filepath.Join(ws, live)); err != nil {
		t.Fatal("live process's fresh temp was swept")
	}
	b, _ := os.ReadFile(filepath.Join(ws, ".apiary/durable/journal.jsonl"))
	if !strings.HasSuffix(string(b), "}\n") {
		t.Fatalf("journal not repaired: %q", b)
	}
}

// TestJournalReading: hand-written rows are accepted, a torn last line is
// skipped, a bad line in the middle is write_corruption.
func TestJournalReading(t *testing.T) {
	t.Parallel()
	f := newFixture(t, durable.Config{})
	must(t, os.MkdirAll(f.path(".apiary/durable"), 0o755))
	must(t, os.WriteFile(f.path(".apiary/durable/journal.jsonl"), []byte(`{"path":"a","mode":"create"}`+"\n"+`{"path":"b"`), 0o644))
	tail, err := f.w.JournalTail(t.Context(), durable.JournalTailParams{})
	must(t, err)
	if n := len(tail["entries"].([]map[string]any)); n != 1 {
		t.Fatalf("%d rows", n)
	}
	_, err = f.w.SafeWrite(t.Context(), durable.SafeWriteParams{Path: "c", Content: "c"})
	must(t, err)
	tail, err = f.w.JournalTail(t.Context(), durable.JournalTailParams{})
	must(t, err)
	if n := len(tail["entries"].([]map[string]any)); n != 2 {
		t.Fatalf("after append over a torn line: %d rows", n)
	}
	must(t, os.WriteFile(f.path(".apiary/durable/journal.jsonl"), []byte("garbage\n{}\n"), 0o644))
	_, err = f.w.JournalTail(t.Context(), durable.JournalTailParams{})
	if e := asErr(t, err); e.Kind != durable.KindWriteCorruption || e.Context["bad_line"] != "garbage" {
		t.Fatalf("got %v", e)
	}
}

// TestRetryBudgetPersists: the retry budget of an identical blocked write
// survives a restart.
func TestRetryBudgetPersists(t *testing.T) {
	t.Parallel()
	ws := filepath.Join(tmpParent(t), "ws")
	must(t, os.Mkdir(ws, 0o755))
	secret := "sk-ant-oat01-" + strings.Repeat("A", 42) + "\ngho_" + strings.Repeat("D", 36) + "\n"
	budget := func() int {
		w, err := durable.Open(t.Context(), durable.Config{Roots: []string{ws}})
		must(t, err)
		defer w.Close()
		_, err = w.SafeWrite(t.Context(), durable.SafeWriteParams{Path: "k", Content: secret, Classify: true})
		return asErr(t, err).RetryBudget
	}
	if a, b := budget(), budget(); a != 3 || b != 2 {
		t.Fatalf("budgets %d, %d", a, b)
	}
}

// TestErrors: kinds unwrap to their sentinels and envelopes have exactly
// the schema's keys.
func TestErrors(t *testing.T) {
	t.Parallel()
	e := &durable.Error{Kind: durable.KindQuotaExceeded, Reason: durable.ReasonSizeLimit, Context: map[string]any{"reason": "x"}}
	if !errors.Is(e, durable.ErrQuotaExceeded) || errors.Is(e, durable.ErrBlocked) || !e.Retriable() {
		t.Fatal("sentinels")
	}
	env := e.Envelope()
	if len(env) != 8 || env["suggested_action"] != "abort" || env["context"].(map[string]any)["retriable"] != true {
		t.Fatalf("envelope %v", env)
	}
	b, err := durable.MarshalASCII(map[string]any{"a": "é😀<", "b": 1})
	must(t, err)
	if string(b) != `{"a":"\u00e9\ud83d\ude00<","b":1}` {
		t.Fatalf("ascii %s", b)
	}
}

// TestOpenRefuses: system directories, duplicate extra-root names and a
// state directory outside the workspace.
func TestOpenRefuses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cfg  durable.Config
		want error
	}{
		{durable.Config{Roots: []string{"/usr"}}, durable.ErrUnsafeRoot},
		{durable.Config{}, durable.ErrNoRoot},
		{durable.Config{Roots: []string{t.TempDir()}, StateDir: "../x"}, durable.ErrBadStateDir},
		{durable.Config{Roots: []string{t.TempDir(), sameName(t), sameName(t)}}, durable.ErrRootName},
	} {
		if _, err := durable.Open(t.Context(), tc.cfg); !errors.Is(err, tc.want) {
			t.Errorf("%+v: got %v, want %v", tc.cfg, err, tc.want)
		}
	}
}

// sameName returns a fresh directory named "same".
func sameName(t *testing.T) string {
	d := filepath.Join(t.TempDir(), "same")
	must(t, os.Mkdir(d, 0o755))
	return d
}

// TestCheckpointMultibyte is checklist item O4: checkpoints above 1 MiB with
// a multibyte character at every alignment round-trip exactly (Resilient
// Write drops the character straddling a 512 KiB slice).
func TestCheckpointMultibyte(t *testing.T) {
	t.Parallel()
	f := newFixture(t, durable.Config{})
	for pad := range 4 {
		s := strings.Repeat("a", pad) + strings.Repeat("😀é€", 120_000)
		data, _ := json.Marshal(s)
		r, err := f.w.Checkpoint(t.Context(), durable.CheckpointParams{Name: fmt.Sprint("mb", pad), Data: data})
		must(t, err)
		if r["chunked"] != true {
			t.Fatalf("pad %d: not chunked (%v bytes)", pad, r["bytes"])
		}
		got, err := f.w.CheckpointRead(t.Context(), fmt.Sprint("mb", pad))
		must(t, err)
		if got["data"] != s {
			t.Fatalf("pad %d: data changed", pad)
		}
	}
}
