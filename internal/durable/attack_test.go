package durable_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/apiary-dev/apiary/internal/durable"
)

// plant adds the reference's symlink attacks to a fixture.
func (f *fixture) plant(t testing.TB) {
	t.Helper()
	must(t, os.Symlink(filepath.Join(f.out, "secret"), f.path("link")))
	must(t, os.Symlink(f.out, f.path("dirlink")))
	must(t, os.Symlink("../outside", f.path("rellink")))
	must(t, os.Symlink(filepath.Join(f.out, "nonexist"), f.path("dangle")))
	must(t, os.Symlink("nowhere-inside", f.path("dangle-in")))
	must(t, os.WriteFile(f.path("real"), []byte("real\n"), 0o644))
	must(t, os.Symlink(f.path("real"), f.path("alias")))
	must(t, os.Symlink("real", f.path("relalias")))
	must(t, os.Mkdir(f.path("sub"), 0o755))
	must(t, os.Symlink("sub/../../outside", f.path("sneaky")))
}

// TestAttacks fires every input class of the reference's §5 (the path
// attacks known against MCP filesystem servers), plus sibling prefixes and
// the state directory, at every tool that takes a path, in every mode: each
// must be refused with policy_violation/permission and leave the outside
// untouched.
func TestAttacks(t *testing.T) {
	t.Parallel()
	f := newFixture(t, durable.Config{})
	f.plant(t)
	ctx := t.Context()
	evil := "../" + filepath.Base(f.ws) + "_evil/f.txt"
	inputs := []string{
		"../x", "a/../../x", "./../x", "a/./../../x", "..", // lexical
		"/etc/passwd", f.path("abs.txt"), "//etc/passwd", f.out + "/secret", // absolute
		"a\x00b",                                           // NUL
		evil, "../" + filepath.Base(f.ws) + "X/secret.txt", // sibling prefix
		"link", "dirlink/new.txt", "dirlink/secret", "rellink/x", // links out
		"sneaky/x", "dangle", "dangle-in", // dangling / tricky
		".apiary/durable/journal.jsonl", ".apiary/durable", ".apiary/durable/policy.yaml", "./.apiary/durable/x", "sub/../.apiary/durable/x", // state
		"", // empty
	}
	type op struct {
		name string
		run  func(p string) error
	}
	handoff := []byte(`{"task_id":"t","status":"complete","agent":"a","summary":"s","next_steps":[],"last_good_state":[]}`)
	ops := []op{
		{"create", func(p string) error {
			_, err := f.w.SafeWrite(ctx, durable.SafeWriteParams{Path: p, Content: "pwned"})
			return err
		}},
		{"overwrite", func(p string) error {
			_, err := f.w.SafeWrite(ctx, durable.SafeWriteParams{Path: p, Content: "pwned", Mode: "overwrite"})
			return err
		}},
		{"append", func(p string) error {
			_, err := f.w.SafeWrite(ctx, durable.SafeWriteParams{Path: p, Content: "pwned", Mode: "append"})
			return err
		}},
		{"read", func(p string) error { _, err := f.w.Read(ctx, durable.ReadParams{Path: p}); return err }},
		{"edit", func(p string) error {
			_, err := f.w.Edit(ctx, durable.EditParams{Path: p, OldString: "secret", NewString: "pwned"})
			return err
		}},
		{"mkdir", func(p string) error { _, err := f.w.Mkdir(ctx, durable.MkdirParams{Path: p}); return err }},
		{"move-to", func(p string) error { _, err := f.w.Move(ctx, durable.MoveParams{From: "real", To: p}); return err }},
		{"move-from", func(p string) error { _, err := f.w.Move(ctx, durable.MoveParams{From: p, To: "stolen"}); return err }},
		{"handoff_write", func(p string) error {
			_, err := f.w.HandoffWrite(ctx, durable.HandoffWriteParams{Envelope: handoff, Path: p})
			return err
		}},
		{"handoff_read", func(p string) error { _, err := f.w.HandoffRead(ctx, p); return err }},
		{"list", func(p string) error { _, err := f.w.List(ctx, durable.ListParams{Path: p}); return err }},
		{"search", func(p string) error {
			_, err := f.w.Search(ctx, durable.SearchParams{Pattern: "secret", Path: p})
			return err
		}},
		{"compose", func(p string) error {
			if _, err := f.w.ChunkWrite(ctx, durable.ChunkWriteParams{Session: "s", Index: 1, Content: "pwned"}); err != nil {
				return err
			}
			_, err := f.w.ChunkCompose(ctx, durable.ChunkComposeParams{Session: "s", OutputPath: p})
			return err
		}},
	}
	for _, o := range ops {
		for _, in := range inputs {
			if in == "" && (o.name == "handoff_write" || o.name == "handoff_read") {
				continue // "" means the default HANDOFF.md
			}
			if o.name == "list" || o.name == "search" {
				if in == "" || in == ".." || filepath.Ext(in) != "" && in != ".apiary/durable" {
					continue // listing needs a directory; file inputs are covered by read
				}
			}
			t.Run(fmt.Sprintf("%s/%q", o.name, in), func(t *testing.T) {
				err := o.run(in)
				if err == nil {
					t.Fatalf("accepted")
				}
				e := asErr(t, err)
				if e.Kind != durable.KindPolicyViolation || e.Reason != durable.ReasonPermission {
					t.Fatalf("got %s/%s %v", e.Kind, e.Reason, e.Context)
				}
				f.outsideIntact(t)
			})
		}
	}
}

// TestAttackStateLinks: a state directory (or a part of it) replaced by a
// link leading out is refused for chunk_write, scratch_put and checkpoint.
func TestAttackStateLinks(t *testing.T) {
	t.Parallel()
	for _, plant := range []string{".apiary/durable", ".apiary/durable/chunks/s", ".apiary/durable/scratch", ".apiary/durable/checkpoints"} {
		t.Run(plant, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, durable.Config{})
			must(t, os.MkdirAll(filepath.Dir(f.path(plant)), 0o755))
			must(t, os.Symlink(f.out, f.path(plant)))
			ctx := t.Context()
			_, e1 := f.w.ChunkWrite(ctx, durable.ChunkWriteParams{Session: "s", Index: 1, Content: "x"})
			_, e2 := f.w.ScratchPut(ctx, durable.ScratchPutParams{Content: "x"})
			_, e3 := f.w.Checkpoint(ctx, durable.CheckpointParams{Name: "c", Data: []byte(`1`)})
			refused := 0
			for _, err := range []error{e1, e2, e3} {
				if err != nil {
					if e := asErr(t, err); e.Kind != durable.KindPolicyViolation || e.Reason != durable.ReasonPermission {
						t.Fatalf("got %v", e)
					}
					refused++
				}
			}
			if refused == 0 {
				t.Fatal("nothing refused")
			}
			f.outsideIntact(t)
		})
	}
}

// TestAllowedLinks: inside links resolve to their target (the link stays),
// ".." that stays inside and a literal "~" are fine, a hard link to an
// outside file is refused and the outside file never changes.
func TestAllowedLinks(t *testing.T) {
	t.Parallel()
	f := newFixture(t, durable.Config{})
	f.plant(t)
	ctx := t.Context()
	for _, p := range []string{"alias", "relalias"} {
		r, err := f.w.SafeWrite(ctx, durable.SafeWriteParams{Path: p, Content: "via " + p, Mode: "overwrite"})
		must(t, err)
		if r["path"] != "real" || f.read(t, "real") != "via "+p {
			t.Fatalf("%s: %v", p, r)
		}
		if fi, _ := os.Lstat(f.path(p)); fi.Mode()&os.ModeSymlink == 0 {
			t.Fatalf("%s replaced", p)
		}
	}
	for _, p := range []string{"a/../b.txt", "~/x", "sub/./c.txt", "dirlink-not"} {
		if _, err := f.w.SafeWrite(ctx, durable.SafeWriteParams{Path: p, Content: p}); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
	}
	must(t, os.Link(filepath.Join(f.out, "secret"), f.path("hl")))
	for _, mode := range []string{"overwrite", "append"} {
		_, err := f.w.SafeWrite(ctx, durable.SafeWriteParams{Path: "hl", Content: "pwned", Mode: mode})
		if e := asErr(t, err); reasonOf(e) != "hard_link_refused" {
			t.Fatalf("%s through hard link: %v", mode, e)
		}
	}
	if _, err := f.w.Read(ctx, durable.ReadParams{Path: "hl"}); err == nil {
		t.Fatal("read through a hard link to an outside file")
	}
	_, err := f.w.SafeWrite(ctx, durable.SafeWriteParams{Path: "sub", Content: "x", Mode: "overwrite"})
	if e := asErr(t, err); e.Kind != durable.KindPolicyViolation {
		t.Fatalf("directory target: %v", e)
	}
	f.outsideIntact(t)
}

// TestSymlinkSwapRace flips W/sub between a directory and a symlink to the
// outside directory while 1,000 writes to sub/f<i>.txt run: os.Root and
// the pinned parent directory leave zero files outside.
func TestSymlinkSwapRace(t *testing.T) {
	t.Parallel()
	f := newFixture(t, durable.Config{})
	must(t, os.Mkdir(f.path("sub"), 0o755))
	ctx := t.Context()
	stop := make(chan struct{})
	var flips atomic.Int64
	var flipper sync.WaitGroup
	flipper.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			real := f.path(fmt.Sprintf("real%d", i))
			if os.Rename(f.path("sub"), real) == nil {
				os.Symlink(f.out, f.path("sub"))
				os.Remove(f.path("sub"))
				os.Rename(real, f.path("sub"))
				flips.Add(1)
			}
		}
	})
	var writers sync.WaitGroup
	var ok, refused atomic.Int64
	for w := range 4 {
		writers.Go(func() {
			for i := range 250 {
				_, err := f.w.SafeWrite(ctx, durable.SafeWriteParams{Path: fmt.Sprintf("sub/f%d-%d.txt", w, i), Content: "x"})
				var de *durable.Error
				switch {
				case err == nil:
					ok.Add(1)
				case errors.As(err, &de):
					refused.Add(1)
				default:
					t.Errorf("untyped error: %v", err)
				}
			}
		})
	}
	writers.Wait()
	close(stop)
	flipper.Wait()
	t.Logf("%d writes landed inside, %d refused, %d flips", ok.Load(), refused.Load(), flips.Load())
	if flips.Load() == 0 {
		t.Fatal("the race never ran")
	}
	f.outsideIntact(t)
}

// FuzzResolvePath writes to fuzzed paths (with the attack fixtures in
// place): a write is either refused with a typed envelope, or lands inside
// the workspace at the path it reports; the outside never changes.
func FuzzResolvePath(f *testing.F) {
	for _, s := range []string{"a.txt", "../x", "a/../../x", "/etc/passwd", "link", "dirlink/x", "dangle", "alias",
		"~/x", "a\x00b", ".apiary/durable/x", "sub/../sneaky/y", "....//x", "a//b///c", "./././x", "sub/.."} {
		f.Add(s, uint8(0))
	}
	f.Fuzz(func(t *testing.T, p string, mode uint8) {
		fx := newFixture(t, durable.Config{})
		fx.plant(t)
		m := []string{"create", "overwrite", "append"}[int(mode)%3]
		r, err := fx.w.SafeWrite(context.Background(), durable.SafeWriteParams{Path: p, Content: "fuzz", Mode: m})
		fx.outsideIntact(t)
		if err != nil {
			asErr(t, err)
			return
		}
		rel := r["path"].(string)
		if filepath.IsAbs(rel) || rel == ".." || len(rel) >= 3 && rel[:3] == "../" {
			t.Fatalf("reported path %q escapes", rel)
		}
		if b, err := os.ReadFile(fx.path(rel)); err != nil || string(b[len(b)-4:]) != "fuzz" {
			t.Fatalf("%q reported %q but the file is not there: %v", p, rel, err)
		}
	})
}
