package supervise

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Kind is the kind of thing the reaper may remove.
type Kind string

// Kinds. Reap handles processes first (so nothing is still writing into a
// worktree being removed), then their cgroups, worktrees, branches (local,
// then remote), sockets, and empty directories after the worktrees that
// were in them.
const (
	KindProcess   Kind = "process"
	KindCgroup    Kind = "cgroup"
	KindWorktree  Kind = "worktree"
	KindBranch    Kind = "branch"
	KindSocket    Kind = "socket"
	KindDirectory Kind = "directory"
	// KindCheckout is a checkout a dead run left behind its moved branch;
	// "removing" it brings it along.
	KindCheckout Kind = "checkout"
	// KindRemoteBranch is a branch on a shared remote (a swarm run's
	// candidate); its ID is "REMOTE REF".
	KindRemoteBranch Kind = "remote-branch"
)

var kindOrder = []Kind{KindProcess, KindCgroup, KindWorktree, KindBranch, KindRemoteBranch, KindSocket, KindDirectory, KindCheckout}

// Item is one thing apiary's own records say it created.
type Item struct {
	Kind Kind
	// ID names it: a process group id, a worktree path, a branch name, a
	// socket path.
	ID string
	// Owner is the lease it belongs to (a run, or a run's task attempt).
	Owner string
	// Created is when the records say it was made.
	Created time.Time
	// Keep, if longer than the grace period, is how long after Created
	// it is kept anyway (a failed task's branch, kept to look at).
	Keep time.Duration
}

func (it Item) String() string { return fmt.Sprintf("%s %s (owner %s)", it.Kind, it.ID, it.Owner) }

// Remover does the removing for Reap. Exists reports whether the item is
// still there and is still the one apiary made (a process is checked for
// apiary's markers, so a reused pid is never touched; a worktree must be
// registered at that path); Remove removes it.
type Remover interface {
	Exists(ctx context.Context, it Item) (bool, error)
	Remove(ctx context.Context, it Item) error
}

// ReapOptions configure Reap.
type ReapOptions struct {
	// Alive reports whether an owner's lease is still live; Reap never
	// touches an item whose owner is alive. Required.
	Alive func(owner string) bool
	// Grace is the least age of an item before it may be removed.
	Grace time.Duration
	// DryRun reports what would be removed and removes nothing.
	DryRun bool
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	// Log is called for every removal (or, in a dry run, every item that
	// would be removed) and every failure, before Reap returns.
	Log func(Removal)
}

// Removal is one line of the reaper's log.
type Removal struct {
	Item   Item
	DryRun bool
	Err    error // nil: removed (or would be)
}

// ReapReport is what one pass did.
type ReapReport struct {
	Removed []Removal // removed, or would be in a dry run; failures have Err
	Kept    []Kept
}

// Kept is an item Reap left alone, and why.
type Kept struct {
	Item   Item
	Reason string // "owner alive", "within grace", "within retention", "gone", "not apiary's"
}

// Reap removes the items whose owner's lease is dead, that are older than
// the grace period and that still exist as apiary made them — and nothing
// else: an item not in items is never looked at. Processes go first, then
// worktrees, branches and sockets. It returns the first error of a
// removal joined with the rest; every item is tried.
func Reap(ctx context.Context, items []Item, rm Remover, o ReapOptions) (ReapReport, error) {
	if o.Alive == nil {
		return ReapReport{}, fmt.Errorf("%w: ReapOptions.Alive is required", ErrInvalid)
	}
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	var rep ReapReport
	var errs []error
	for _, k := range kindOrder {
		for _, it := range items {
			if it.Kind != k {
				continue
			}
			if ctx.Err() != nil {
				return rep, context.Cause(ctx)
			}
			switch {
			case o.Alive(it.Owner):
				rep.Kept = append(rep.Kept, Kept{it, "owner alive"})
				continue
			case !it.Created.IsZero() && now().Sub(it.Created) < max(o.Grace, it.Keep):
				why := "within grace"
				if it.Keep > o.Grace {
					why = "within retention"
				}
				rep.Kept = append(rep.Kept, Kept{it, why})
				continue
			}
			ok, err := rm.Exists(ctx, it)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", it, err))
				bad := Removal{Item: it, DryRun: o.DryRun, Err: err}
				rep.Removed = append(rep.Removed, bad)
				if o.Log != nil {
					o.Log(bad)
				}
				continue
			}
			if !ok {
				rep.Kept = append(rep.Kept, Kept{it, "gone"})
				continue
			}
			r := Removal{Item: it, DryRun: o.DryRun}
			if !o.DryRun {
				if err := rm.Remove(ctx, it); err != nil {
					r.Err = err
					errs = append(errs, fmt.Errorf("%s: %w", it, err))
				}
			}
			rep.Removed = append(rep.Removed, r)
			if o.Log != nil {
				o.Log(r)
			}
		}
	}
	return rep, errors.Join(errs...)
}

// Every calls fn at once and then every interval until ctx ends; fn's
// errors go to onErr (nil: dropped). It returns when ctx ends.
func Every(ctx context.Context, interval time.Duration, fn func(context.Context) error, onErr func(error)) {
	if interval <= 0 {
		return
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if err := fn(ctx); err != nil && onErr != nil && ctx.Err() == nil {
			onErr(err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
