package supervise

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"
)

// fakeWorld is a Remover over an in-memory set of things that exist.
type fakeWorld struct {
	exists  map[string]bool // kind:id
	broken  map[string]bool // Remove fails
	removed []string        // in order
}

func key(it Item) string { return string(it.Kind) + ":" + it.ID }

func (w *fakeWorld) Exists(_ context.Context, it Item) (bool, error) { return w.exists[key(it)], nil }
func (w *fakeWorld) Remove(_ context.Context, it Item) error {
	if w.broken[key(it)] {
		return errors.New("busy")
	}
	w.removed = append(w.removed, key(it))
	delete(w.exists, key(it))
	return nil
}

// TestReap: only recorded items of dead owners, past the grace period, that
// still exist are removed — processes first; a dry run removes nothing and
// logs the same lines; a failed removal is reported and the rest go on.
func TestReap(t *testing.T) {
	t.Parallel()
	now := time.Unix(10000, 0)
	old, young := now.Add(-time.Hour), now.Add(-time.Second)
	items := []Item{
		{Kind: KindBranch, ID: "apiary/r1/a", Owner: "r1", Created: old},
		{Kind: KindWorktree, ID: "/wt/r1/a-1", Owner: "r1", Created: old},
		{Kind: KindProcess, ID: "4242", Owner: "r1", Created: old},
		{Kind: KindSocket, ID: "/runs/r1/control.sock", Owner: "r1", Created: old},
		{Kind: KindWorktree, ID: "/wt/r2/b-1", Owner: "r2", Created: old},   // owner alive
		{Kind: KindWorktree, ID: "/wt/r3/c-1", Owner: "r3", Created: young}, // within grace
		{Kind: KindWorktree, ID: "/wt/r1/gone", Owner: "r1", Created: old},  // already gone
		{Kind: KindBranch, ID: "apiary/r1/stuck", Owner: "r1", Created: old},
		{Kind: KindRemoteBranch, ID: "/r.git refs/heads/apiary/r1/a-1", Owner: "r1", Created: old},
	}
	world := func() *fakeWorld {
		w := &fakeWorld{exists: map[string]bool{}, broken: map[string]bool{"branch:apiary/r1/stuck": true}}
		for _, it := range items {
			if it.ID != "/wt/r1/gone" {
				w.exists[key(it)] = true
			}
		}
		w.exists["worktree:/wt/not-in-records"] = true
		return w
	}
	alive := func(o string) bool { return o == "r2" }
	for _, dry := range []bool{true, false} {
		w := world()
		var logged []string
		rep, err := Reap(t.Context(), items, w, ReapOptions{Alive: alive, Grace: time.Minute, DryRun: dry, Now: func() time.Time { return now },
			Log: func(r Removal) { logged = append(logged, key(r.Item)) }})
		if dry != (err == nil) {
			t.Errorf("dry=%v: error %v (only a real pass fails, on the stuck branch)", dry, err)
		}
		want := []string{"process:4242", "worktree:/wt/r1/a-1", "branch:apiary/r1/a", "branch:apiary/r1/stuck", "remote-branch:/r.git refs/heads/apiary/r1/a-1", "socket:/runs/r1/control.sock"}
		if dry && len(w.removed) != 0 {
			t.Errorf("dry run removed %v", w.removed)
		}
		if !dry && !slices.Equal(w.removed, []string{"process:4242", "worktree:/wt/r1/a-1", "branch:apiary/r1/a", "remote-branch:/r.git refs/heads/apiary/r1/a-1", "socket:/runs/r1/control.sock"}) {
			t.Errorf("removed %v", w.removed)
		}
		if !slices.Equal(logged, want) {
			t.Errorf("dry=%v: logged %v, want %v", dry, logged, want)
		}
		if !w.exists["worktree:/wt/not-in-records"] || !w.exists["worktree:/wt/r2/b-1"] || !w.exists["worktree:/wt/r3/c-1"] {
			t.Errorf("dry=%v: removed something it must not: %v", dry, w.exists)
		}
		reasons := map[string]string{}
		for _, k := range rep.Kept {
			reasons[k.Item.ID] = k.Reason
		}
		if reasons["/wt/r2/b-1"] != "owner alive" || reasons["/wt/r3/c-1"] != "within grace" || reasons["/wt/r1/gone"] != "gone" {
			t.Errorf("kept %v", reasons)
		}
	}
	if _, err := Reap(t.Context(), items, world(), ReapOptions{}); !errors.Is(err, ErrInvalid) {
		t.Errorf("no Alive: %v", err)
	}
}
