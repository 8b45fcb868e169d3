package supervise

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Cancelled is the cause of a cancelled node's context: context.Cause
// returns it for the node that was cancelled and for every descendant.
type Cancelled struct {
	// Origin is the node the cancellation started at ("" for the root).
	Origin string
	// Reason says why: "cancelled by the operator", "deadline", "budget
	// exhausted", "gate policy", "parent failed", ...
	Reason string
}

func (c *Cancelled) Error() string {
	if c.Origin == "" {
		return "cancelled: " + c.Reason
	}
	return fmt.Sprintf("cancelled at %s: %s", c.Origin, c.Reason)
}

// Is reports ErrCancelled.
func (c *Cancelled) Is(target error) bool { return target == ErrCancelled }

// CauseOf returns the *Cancelled behind ctx's end: its cause if it is one,
// a deadline as Reason "deadline", anything else with its text as Reason.
// It returns nil while ctx is live.
func CauseOf(ctx context.Context) *Cancelled {
	if ctx.Err() == nil {
		return nil
	}
	cause := context.Cause(ctx)
	if c, ok := cause.(*Cancelled); ok {
		return c
	}
	if cause == context.DeadlineExceeded {
		return &Cancelled{Reason: "deadline"}
	}
	return &Cancelled{Reason: cause.Error()}
}

// Tree is a cancellation tree: a root and named nodes, each with a context
// derived from its parent's. A Tree is safe for concurrent use; the zero
// value is not usable: call NewTree.
type Tree struct {
	mu    sync.Mutex
	root  *Node
	nodes map[string]*Node
}

// Node is one node of a Tree.
type Node struct {
	name   string
	parent *Node
	ctx    context.Context
	cancel context.CancelCauseFunc
	stop   func() bool // unregisters the hook runner

	mu    sync.Mutex // guards hooks and fired
	hooks []func(*Cancelled)
	fired bool
}

// NewTree returns a tree whose root's context derives from ctx: when ctx
// ends, every node is cancelled.
func NewTree(ctx context.Context) *Tree {
	root := &Node{}
	root.ctx, root.cancel = context.WithCancelCause(ctx)
	return &Tree{root: root, nodes: map[string]*Node{}}
}

// Add adds node name below parent ("" is the root). A non-zero deadline
// cancels the node (and its subtree) at that time with Reason "deadline".
// The node's hooks run when its context ends for any reason. ErrExists if
// the name is taken, ErrUnknown if the parent is not in the tree.
func (t *Tree) Add(parent, name string, deadline time.Time) (*Node, error) {
	if name == "" {
		return nil, fmt.Errorf("%w: empty node name", ErrInvalid)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.nodes[name] != nil {
		return nil, fmt.Errorf("%w: %s", ErrExists, name)
	}
	p := t.root
	if parent != "" {
		if p = t.nodes[parent]; p == nil {
			return nil, fmt.Errorf("%w: parent %s", ErrUnknown, parent)
		}
	}
	n := &Node{name: name, parent: p}
	ctx := p.ctx
	if !deadline.IsZero() {
		var stopDeadline context.CancelFunc
		ctx, stopDeadline = context.WithDeadlineCause(ctx, deadline, &Cancelled{Origin: name, Reason: "deadline"})
		inner, cancel := context.WithCancelCause(ctx)
		n.ctx = inner
		n.cancel = func(cause error) { cancel(cause); stopDeadline() }
	} else {
		n.ctx, n.cancel = context.WithCancelCause(ctx)
	}
	n.stop = context.AfterFunc(n.ctx, n.fire)
	t.nodes[name] = n
	return n, nil
}

// Node returns the node called name, or nil.
func (t *Tree) Node(name string) *Node {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.nodes[name]
}

// Root returns the root's context.
func (t *Tree) Root() context.Context { return t.root.ctx }

// Cancel cancels node name and every descendant with cause
// &Cancelled{Origin: name, Reason: reason}, and returns the names of the
// nodes that were live and are now cancelled, the node first, then its
// descendants in depth-first order. "" cancels the root (every node).
// ErrUnknown if there is no such node.
func (t *Tree) Cancel(name, reason string) ([]string, error) {
	t.mu.Lock()
	n := t.root
	if name != "" {
		n = t.nodes[name]
	}
	if n == nil {
		t.mu.Unlock()
		return nil, fmt.Errorf("%w: %s", ErrUnknown, name)
	}
	var live []string
	for _, d := range t.subtreeLocked(n) {
		if d.ctx.Err() == nil && d != t.root {
			live = append(live, d.name)
		}
	}
	t.mu.Unlock()
	n.cancel(&Cancelled{Origin: name, Reason: reason})
	return live, nil
}

// Subtree returns name and its descendants (depth-first, name first);
// nil if there is no such node.
func (t *Tree) Subtree(name string) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := t.nodes[name]
	if n == nil {
		return nil
	}
	var out []string
	for _, d := range t.subtreeLocked(n) {
		out = append(out, d.name)
	}
	return out
}

// subtreeLocked lists n and its descendants depth-first. Children are found
// by scanning, which keeps Node free of child lists; trees hold at most a
// few thousand nodes. Called with t.mu.
func (t *Tree) subtreeLocked(n *Node) []*Node {
	kids := map[*Node][]*Node{}
	for _, c := range t.nodes {
		kids[c.parent] = append(kids[c.parent], c)
	}
	for _, ks := range kids {
		sortNodes(ks)
	}
	var out []*Node
	var walk func(*Node)
	walk = func(x *Node) {
		out = append(out, x)
		for _, k := range kids[x] {
			walk(k)
		}
	}
	walk(n)
	return out
}

func sortNodes(ns []*Node) {
	for i := 1; i < len(ns); i++ {
		for j := i; j > 0 && ns[j].name < ns[j-1].name; j-- {
			ns[j], ns[j-1] = ns[j-1], ns[j]
		}
	}
}

// Finish marks the node's work over: its hooks will not run any more
// (there is nothing left to kill or revoke). Its context stays as it is, so
// descendants still running keep theirs; it ends with the tree's.
func (n *Node) Finish() {
	n.stop()
	n.mu.Lock()
	n.hooks = nil
	n.mu.Unlock()
}

// Name returns the node's name.
func (n *Node) Name() string { return n.name }

// Context returns the node's context: it ends when the node or an ancestor
// is cancelled, at the node's deadline, or when the tree's parent context
// ends. context.Cause (or CauseOf) says why.
func (n *Node) Context() context.Context { return n.ctx }

// OnCancel registers f to run once, in its own goroutine, when the node's
// context ends, with the cause. Registered after the end, f runs at once.
func (n *Node) OnCancel(f func(*Cancelled)) {
	n.mu.Lock()
	if !n.fired {
		n.hooks = append(n.hooks, f)
		n.mu.Unlock()
		return
	}
	n.mu.Unlock()
	go f(CauseOf(n.ctx))
}

// fire runs the hooks; called once by context.AfterFunc.
func (n *Node) fire() {
	n.mu.Lock()
	n.fired = true
	hooks := n.hooks
	n.hooks = nil
	n.mu.Unlock()
	cause := CauseOf(n.ctx)
	for _, f := range hooks {
		f(cause)
	}
}
