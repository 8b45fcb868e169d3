// Package supervise holds the runtime's supervision primitives, free of git,
// processes and files so that each can be tested alone and under
// testing/synctest:
//
//   - Tree: a cancellation tree. Every node's context derives from its
//     parent's, so cancelling a node — by request, deadline or an exhausted
//     budget — cancels its whole subtree, and each cancelled node runs its
//     hooks (kill the agent's process group, revoke its capability, abort
//     its gateway calls) with the reason, a *Cancelled.
//   - Supervisor: restart strategies for groups of tasks (one_for_one,
//     one_for_all) with a restart intensity of at most R restarts in T;
//     beyond it the group escalates to its parent.
//   - Leases: time-bounded leases renewed by heartbeats, each carrying a
//     monotonic fencing token; a lapsed lease is reported once so its holder
//     can be killed, and a fence that is no longer live is stale: whoever
//     integrates or writes on a holder's behalf checks it first.
//   - Reap: removal of what apiary's own records say it created (worktrees,
//     branches, processes, sockets) whose owner's lease is dead, after a
//     grace period, with a dry run and a log line per removal.
//   - Quorum and Hedge: speculative attempts (start a second attempt after a
//     delay or at the p90 of observed durations; run N and continue after K
//     pass) as small state machines the scheduler drives.
//   - Flow: credit-based flow control between a producer and its consumers
//     (sched.Credits): consumers grant credits, the producer's emission
//     blocks at zero.
//
// Time is a parameter (a clock function, or the caller's timers), so every
// piece runs under testing/synctest. Every type is safe for concurrent use
// unless its doc says otherwise.
package supervise

import "errors"

// Sentinel errors; test with errors.Is.
var (
	// ErrCancelled is matched by every *Cancelled cause.
	ErrCancelled = errors.New("supervise: cancelled")
	// ErrUnknown: no node, lease or group of that name.
	ErrUnknown = errors.New("supervise: unknown name")
	// ErrExists: a node of that name is already in the tree.
	ErrExists = errors.New("supervise: name already in use")
	// ErrStaleFence: a fencing token that is not (or no longer) the live
	// lease's: the lease lapsed, was released or was superseded.
	ErrStaleFence = errors.New("supervise: stale fencing token")
	// ErrLapsed: the lease expired before it was renewed.
	ErrLapsed = errors.New("supervise: lease lapsed")
	// ErrInvalid: an argument outside its documented domain.
	ErrInvalid = errors.New("supervise: invalid argument")
)
