//go:build unix

package durable_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apiary-dev/apiary/internal/durable"
)

// openMany opens n Workspaces on one root, as n server processes would:
// each has its own locks in memory, so only the lock files coordinate them
// (flock conflicts between open file descriptions even in one process).
func openMany(t *testing.T, ws string, n int) []*durable.Workspace {
	t.Helper()
	var out []*durable.Workspace
	for range n {
		w, err := durable.Open(t.Context(), durable.Config{Roots: []string{ws}})
		must(t, err)
		t.Cleanup(func() { w.Close() })
		out = append(out, w)
	}
	return out
}

// TestWorkspacesShareOneTruth: four Workspaces on one root race guarded
// writes, appends and chunk appends (under the race detector in make test):
// one winner per guarded round, no lost append, one part per append.
func TestWorkspacesShareOneTruth(t *testing.T) {
	t.Parallel()
	ws := filepath.Join(tmpParent(t), "ws")
	must(t, os.Mkdir(ws, 0o755))
	ws4 := openMany(t, ws, 4)
	ctx := t.Context()
	prev := ""
	for round := range 20 {
		var mu sync.Mutex
		var wg sync.WaitGroup
		wins := 0
		var winner string
		for i, w := range ws4 {
			wg.Go(func() {
				content := fmt.Sprintf("round %d by %d", round, i)
				_, err := w.SafeWrite(ctx, durable.SafeWriteParams{Path: "occ.txt", Content: content, Mode: "overwrite", ExpectedPrevSHA256: strp(prev)})
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					wins++
					winner = content
				case !errors.Is(err, durable.ErrStalePrecondition):
					t.Errorf("round %d: %v", round, err)
				}
			})
		}
		wg.Wait()
		if wins != 1 {
			t.Fatalf("round %d: %d winners", round, wins)
		}
		if b, _ := os.ReadFile(filepath.Join(ws, "occ.txt")); string(b) != winner {
			t.Fatalf("round %d: file %q, winner %q", round, b, winner)
		}
		prev = sha(winner)
	}
	var wg sync.WaitGroup
	for i, w := range ws4 {
		wg.Go(func() {
			for j := range 10 {
				if _, err := w.SafeWrite(ctx, durable.SafeWriteParams{Path: "log.txt", Content: fmt.Sprintf("%d.%d\n", i, j), Mode: "append"}); err != nil {
					t.Error(err)
				}
				if _, err := w.ChunkAppend(ctx, durable.ChunkAppendParams{Session: "s", Content: fmt.Sprintf("%d.%d\n", i, j)}); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if b, _ := os.ReadFile(filepath.Join(ws, "log.txt")); strings.Count(string(b), "\n") != 40 {
		t.Fatalf("log.txt has %d lines, want 40", strings.Count(string(b), "\n"))
	}
	st, err := ws4[0].ChunkStatus(ctx, "s")
	must(t, err)
	if n := len(st["present_indices"].([]int)); n != 40 {
		t.Fatalf("%d parts, want 40", n)
	}
}

// TestLockWaitHonoursContext: a write waiting for a lock another holder has
// gives up when its context ends, writing nothing; the lock then works for
// the next caller.
func TestLockWaitHonoursContext(t *testing.T) {
	t.Parallel()
	ws := filepath.Join(tmpParent(t), "ws")
	must(t, os.Mkdir(ws, 0o755))
	w := openMany(t, ws, 1)[0]
	_, err := w.SafeWrite(t.Context(), durable.SafeWriteParams{Path: "seed.txt", Content: "x"})
	must(t, err)
	dir := filepath.Join(ws, ".apiary/durable/locks")
	var held []*os.File
	for i := range 256 {
		f, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf("path-%02x.lock", i)), os.O_RDWR|os.O_CREATE, 0o644)
		must(t, err)
		must(t, syscall.Flock(int(f.Fd()), syscall.LOCK_EX))
		held = append(held, f)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	_, err = w.SafeWrite(ctx, durable.SafeWriteParams{Path: "a.txt", Content: "never"})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want the context's error, got %v", err)
	}
	if _, err := os.Stat(filepath.Join(ws, "a.txt")); err == nil {
		t.Fatal("written while the lock was held elsewhere")
	}
	for _, f := range held {
		f.Close()
	}
	_, err = w.SafeWrite(t.Context(), durable.SafeWriteParams{Path: "a.txt", Content: "now"})
	must(t, err)
}

// TestJournalDegraded: a write whose journal append fails after the rename
// is reported as written with journal_degraded, not as failed; its row is
// kept with the path's lock and appended, marked recovered, by the next
// write to that path once the journal works, or by the next Open.
func TestJournalDegraded(t *testing.T) {
	t.Parallel()
	for _, settle := range []string{"next-write", "reopen"} {
		t.Run(settle, func(t *testing.T) {
			t.Parallel()
			ws := filepath.Join(tmpParent(t), "ws")
			must(t, os.Mkdir(ws, 0o755))
			w := openMany(t, ws, 1)[0]
			ctx := t.Context()
			_, err := w.SafeWrite(ctx, durable.SafeWriteParams{Path: "a.txt", Content: "one"})
			must(t, err)
			journal := filepath.Join(ws, ".apiary/durable/journal.jsonl")
			saved, _ := os.ReadFile(journal)
			// The journal becomes unwritable: a directory where the file was.
			must(t, os.Remove(journal))
			must(t, os.Mkdir(journal, 0o755))
			res, err := w.SafeWrite(ctx, durable.SafeWriteParams{Path: "a.txt", Content: "two", Mode: "overwrite"})
			if err != nil {
				t.Fatalf("a write that landed reported as failed: %v", err)
			}
			if b, _ := os.ReadFile(filepath.Join(ws, "a.txt")); string(b) != "two" || res["journal_degraded"] != true {
				t.Fatalf("file %q, result %v", b, res)
			}
			warns, _ := res["warnings"].([]map[string]any)
			if len(warns) != 1 || warns[0]["reason"] != "journal_append_failed" {
				t.Fatalf("warnings %v", warns)
			}
			id := res["journal_id"].(string)
			must(t, os.Remove(journal))
			must(t, os.WriteFile(journal, saved, 0o644))
			switch settle {
			case "next-write":
				_, err = w.SafeWrite(ctx, durable.SafeWriteParams{Path: "a.txt", Content: "three", Mode: "overwrite"})
				must(t, err)
			case "reopen":
				w2 := openMany(t, ws, 1)[0]
				if n := w2.Startup().Recovered; n != 1 {
					t.Fatalf("Open recovered %d writes, want 1", n)
				}
			}
			tail, err := w.JournalTail(ctx, durable.JournalTailParams{})
			must(t, err)
			var found map[string]any
			for _, r := range tail["entries"].([]map[string]any) {
				if r["journal_id"] == id {
					found = r
				}
			}
			if found == nil || found["recovered"] != true || found["sha256"] != sha("two") {
				t.Fatalf("row %s not recovered: %v", id, tail["entries"])
			}
			ents, _ := os.ReadDir(filepath.Join(ws, ".apiary/durable/locks"))
			for _, e := range ents {
				if fi, _ := e.Info(); fi.Size() != 0 {
					t.Fatalf("lock file %s still holds a record", e.Name())
				}
			}
		})
	}
}

// TestRecoveryOfRecords: Open settles what a killed writer leaves in a lock
// file: a write that landed is journaled once, marked recovered (not again
// if the journal already has it); one that never landed is forgotten.
func TestRecoveryOfRecords(t *testing.T) {
	t.Parallel()
	ws := filepath.Join(tmpParent(t), "ws")
	must(t, os.MkdirAll(filepath.Join(ws, ".apiary/durable/locks"), 0o755))
	row := func(id, path, content string) string {
		b, _ := json.Marshal(map[string]any{"bytes": len(content), "caller": "x", "journal_id": id, "mode": "overwrite", "path": path, "sha256": sha(content), "ts": "2026-01-01T00:00:00Z"})
		return string(b)
	}
	must(t, os.WriteFile(filepath.Join(ws, "landed.txt"), []byte("landed"), 0o644))
	must(t, os.WriteFile(filepath.Join(ws, "again.txt"), []byte("again"), 0o644))
	must(t, os.WriteFile(filepath.Join(ws, ".apiary/durable/journal.jsonl"), []byte(row("wj_again", "again.txt", "again")+"\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(ws, ".apiary/durable/locks/path-01.lock"), []byte(row("wj_landed", "landed.txt", "landed")+"\n"+row("wj_lost", "lost.txt", "never written")+"\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(ws, ".apiary/durable/locks/path-02.lock"), []byte(row("wj_again", "again.txt", "again")+"\n"), 0o644))
	w := openMany(t, ws, 1)[0]
	if rep := w.Startup(); rep.Recovered != 1 || len(rep.Drifted) != 0 {
		t.Fatalf("report %+v", rep)
	}
	tail, err := w.JournalTail(t.Context(), durable.JournalTailParams{})
	must(t, err)
	var ids []string
	for _, r := range tail["entries"].([]map[string]any) {
		ids = append(ids, fmt.Sprintf("%v %v", r["journal_id"], r["recovered"]))
	}
	if strings.Join(ids, " ") != "wj_again <nil> wj_landed true" {
		t.Fatalf("journal %v", ids)
	}
}

// TestHardLinksNeverRead: a file with a second link (here to a file outside
// the workspace) is refused by every tool that would read it, on the opened
// descriptor; rw.stat describes it without a hash; rw.search skips it.
func TestHardLinksNeverRead(t *testing.T) {
	t.Parallel()
	f := newFixture(t, durable.Config{})
	ctx := t.Context()
	must(t, os.Link(filepath.Join(f.out, "secret"), f.path("hl.txt")))
	_, err := f.w.ChunkWrite(ctx, durable.ChunkWriteParams{Session: "s", Index: 1, Content: "x"})
	must(t, err)
	part := f.path(".apiary/durable/chunks/s/part-001.txt")
	must(t, os.Remove(part))
	must(t, os.Link(filepath.Join(f.out, "secret"), part))
	refused := map[string]func() error{
		"read": func() error { _, err := f.w.Read(ctx, durable.ReadParams{Path: "hl.txt"}); return err },
		"append": func() error {
			_, err := f.w.SafeWrite(ctx, durable.SafeWriteParams{Path: "hl.txt", Content: "x", Mode: "append"})
			return err
		},
		"guarded": func() error {
			_, err := f.w.SafeWrite(ctx, durable.SafeWriteParams{Path: "hl.txt", Content: "x", Mode: "overwrite", ExpectedPrevSHA256: strp("")})
			return err
		},
		"edit": func() error {
			_, err := f.w.Edit(ctx, durable.EditParams{Path: "hl.txt", OldString: "secret", NewString: "x", DryRun: true})
			return err
		},
		"move":    func() error { _, err := f.w.Move(ctx, durable.MoveParams{From: "hl.txt", To: "moved.txt"}); return err },
		"preview": func() error { _, err := f.w.ChunkPreview(ctx, durable.ChunkPreviewParams{Session: "s"}); return err },
		"compose": func() error {
			_, err := f.w.ChunkCompose(ctx, durable.ChunkComposeParams{Session: "s", OutputPath: "out.txt"})
			return err
		},
	}
	for name, fn := range refused {
		err := fn()
		if err == nil {
			t.Errorf("%s: a hard-linked file was read", name)
			continue
		}
		if e := asErr(t, err); e.Reason != durable.ReasonPermission || reasonOf(e) != "hard_link_refused" {
			t.Errorf("%s: %v %v", name, e, e.Context)
		}
	}
	st, err := f.w.Stat(ctx, "hl.txt")
	must(t, err)
	if _, has := st["sha256"]; has || st["nlink"].(uint64) < 2 {
		t.Fatalf("stat %v", st)
	}
	res, err := f.w.Search(ctx, durable.SearchParams{Pattern: "secret"})
	must(t, err)
	if m := res["matches"].([]map[string]any); len(m) != 0 {
		t.Fatalf("search read a hard link: %v", m)
	}
	f.outsideIntact(t)
}
