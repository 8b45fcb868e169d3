package supervise

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// hookLog records the hooks that ran, by node.
type hookLog struct {
	mu  sync.Mutex
	got map[string]*Cancelled
	wg  sync.WaitGroup
}

func (h *hookLog) watch(n *Node) {
	h.wg.Add(1)
	n.OnCancel(func(c *Cancelled) {
		defer h.wg.Done()
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.got == nil {
			h.got = map[string]*Cancelled{}
		}
		if _, dup := h.got[n.Name()]; dup {
			panic("hook ran twice for " + n.Name())
		}
		h.got[n.Name()] = c
	})
}

func mustAdd(t *testing.T, tr *Tree, parent, name string, deadline time.Time) *Node {
	t.Helper()
	n, err := tr.Add(parent, name, deadline)
	if err != nil {
		t.Fatalf("Add(%q, %q): %v", parent, name, err)
	}
	return n
}

// TestTreeCancelSubtree: cancelling a node ends exactly its subtree, with
// the node as origin and the reason, and runs each cancelled node's hooks
// once; the rest of the tree stays live.
func TestTreeCancelSubtree(t *testing.T) {
	t.Parallel()
	tr := NewTree(t.Context())
	var h hookLog
	nodes := map[string]*Node{}
	for _, e := range [][2]string{{"", "a"}, {"a", "b"}, {"b", "c"}, {"b", "c2"}, {"a", "d"}, {"", "e"}} {
		nodes[e[1]] = mustAdd(t, tr, e[0], e[1], time.Time{})
	}
	for _, name := range []string{"b", "c", "c2"} {
		h.watch(nodes[name])
	}
	got, err := tr.Cancel("b", "operator")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"b", "c", "c2"}; !slices.Equal(got, want) {
		t.Errorf("cancelled %v, want %v", got, want)
	}
	h.wg.Wait()
	for _, name := range []string{"b", "c", "c2"} {
		c := h.got[name]
		if c == nil || c.Origin != "b" || c.Reason != "operator" || !errors.Is(c, ErrCancelled) {
			t.Errorf("%s: hook cause %+v", name, c)
		}
		if cause := CauseOf(nodes[name].Context()); cause == nil || cause.Origin != "b" {
			t.Errorf("%s: context cause %+v", name, cause)
		}
	}
	for _, name := range []string{"a", "d", "e"} {
		if err := nodes[name].Context().Err(); err != nil {
			t.Errorf("%s was cancelled too: %v", name, err)
		}
	}
	// A second cancel of the same subtree finds nothing live.
	if again, _ := tr.Cancel("b", "again"); len(again) != 0 {
		t.Errorf("second cancel reported %v", again)
	}
	if sub := tr.Subtree("a"); !slices.Equal(sub, []string{"a", "b", "c", "c2", "d"}) {
		t.Errorf("Subtree(a) = %v", sub)
	}
}

func TestTreeErrors(t *testing.T) {
	t.Parallel()
	tr := NewTree(t.Context())
	mustAdd(t, tr, "", "a", time.Time{})
	tests := []struct {
		name   string
		parent string
		node   string
		want   error
	}{
		{"duplicate", "", "a", ErrExists},
		{"unknown parent", "nope", "b", ErrUnknown},
		{"empty name", "", "", ErrInvalid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := tr.Add(tc.parent, tc.node, time.Time{}); !errors.Is(err, tc.want) {
				t.Errorf("Add = %v, want %v", err, tc.want)
			}
		})
	}
	if _, err := tr.Cancel("nope", "x"); !errors.Is(err, ErrUnknown) {
		t.Errorf("Cancel(unknown) = %v", err)
	}
}

// TestTreeDeadline: a node's deadline cancels it and its descendants at
// that time, not before, with reason "deadline"; its parent lives on.
func TestTreeDeadline(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		tr := NewTree(t.Context())
		start := time.Now()
		p := mustAdd(t, tr, "", "p", time.Time{})
		n := mustAdd(t, tr, "p", "n", start.Add(10*time.Second))
		kid := mustAdd(t, tr, "n", "kid", time.Time{})
		var h hookLog
		h.watch(kid)
		time.Sleep(9 * time.Second)
		synctest.Wait()
		if kid.Context().Err() != nil {
			t.Fatal("cancelled before the deadline")
		}
		<-kid.Context().Done()
		if got := time.Since(start); got != 10*time.Second {
			t.Errorf("ended after %s", got)
		}
		h.wg.Wait()
		if c := h.got["kid"]; c == nil || c.Reason != "deadline" || c.Origin != "n" {
			t.Errorf("hook cause %+v", c)
		}
		if CauseOf(n.Context()).Reason != "deadline" || p.Context().Err() != nil {
			t.Errorf("n: %v, p: %v", CauseOf(n.Context()), p.Context().Err())
		}
	})
}

// TestTreeParentContext: the tree's parent context ending cancels every
// node; Finish keeps a node's hooks from running.
func TestTreeParentContext(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancelCause(t.Context())
		tr := NewTree(ctx)
		a := mustAdd(t, tr, "", "a", time.Time{})
		b := mustAdd(t, tr, "a", "b", time.Time{})
		ran := make(chan string, 2)
		a.OnCancel(func(*Cancelled) { ran <- "a" })
		b.OnCancel(func(*Cancelled) { ran <- "b" })
		a.Finish()
		cancel(errors.New("run aborted"))
		synctest.Wait() // every hook that will run has run
		close(ran)
		var got []string
		for n := range ran {
			got = append(got, n)
		}
		if !slices.Equal(got, []string{"b"}) {
			t.Errorf("hooks ran for %v, want [b]", got)
		}
		if c := CauseOf(b.Context()); c == nil || c.Reason != "run aborted" {
			t.Errorf("cause %+v", c)
		}
		// A hook registered after the end runs at once.
		late := make(chan *Cancelled, 1)
		b.OnCancel(func(c *Cancelled) { late <- c })
		if c := <-late; c.Reason != "run aborted" {
			t.Errorf("late hook cause %+v", c)
		}
	})
}
