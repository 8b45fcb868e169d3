package attempt

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/apiary-dev/apiary/internal/agent"
	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/gate"
	"github.com/apiary-dev/apiary/internal/git"
	"github.com/apiary-dev/apiary/internal/proc"
	"github.com/apiary-dev/apiary/internal/rundir"
)

// CleanupTimeout bounds the git work that tidies up after an attempt, which
// runs even when the attempt's context has ended.
const CleanupTimeout = 2 * time.Minute

// Locker serializes the git commands that change a repository's list of
// worktrees (see rundir.WorktreeLock).
type Locker interface {
	Do(fn func() error) error
}

// Spec is one attempt. The zero value of each optional field means "none".
type Spec struct {
	// Repo is the repository the worktree is added to.
	Repo *git.Repo
	// Worktree is the attempt's worktree, created at Base and removed when
	// Run returns. With a Branch it has that branch checked out (an
	// existing branch of that name, left by an earlier attempt, is
	// deleted first: apiary made it); without one it is detached.
	Worktree string
	Branch   string
	Base     string
	// DeleteBranch deletes Branch when the worktree is removed (the
	// candidate commit, if any, stays in the repository's objects).
	DeleteBranch bool
	// Lock serializes worktree-list commands; nil: none.
	Lock Locker
	// Pool, if set, lends the worktree instead of `git worktree add`: it is
	// acquired at Worktree (the same files, index and HEAD as a fresh add)
	// and, when Run returns, released back to the pool, which restores it
	// for the next attempt, instead of removed. The branch outlives the
	// release as it outlives a removal. Sparse, with a Pool, are the
	// directories of a cone-mode sparse checkout (see SparseCone); nil
	// checks out the whole tree.
	Pool   Pool
	Sparse []string

	// Envelope is written into the worktree (EnvelopeIn) before the agent
	// starts; EnvelopeCopy, if set, is a durable copy (the run
	// directory's).
	Envelope     *envelope.Envelope
	EnvelopeCopy string

	// Profile is the agent; Prompt, Env, Home, Log and Grace are passed to
	// agent.Run. Timeout bounds the agent's run (0: the envelope's
	// wall_clock_s, if set).
	Profile agent.Profile
	Prompt  string
	Env     map[string]string
	Home    string
	Log     string
	Grace   time.Duration
	Timeout time.Duration

	// Models grants the attempt its own model access for Ref, bounded by
	// the envelope's budget, and revokes it when the attempt's context
	// ends or its agent exits.
	Models ModelAccess
	Ref    TaskRef
	// Writes gives the agent the MCP write surface at its worktree and
	// write scope, when its CLI takes MCP servers; with a Grant, the
	// server also checks the attempt's capability.
	Writes WriteSurface
	Grant  *Grant

	// Commit, if set, commits what the agent left: one commit on Base
	// (the agent's own commits squashed into it) with these particulars.
	Commit *Commit
	// Gates runs the static gates of the envelope (write scope, sealed
	// paths, forbidden patterns) on the candidate.
	Gates bool

	// Procs contains the agent's processes (and those of every command
	// run under the attempt's context): see package proc. nil: process
	// groups, unmarked.
	Procs *proc.Tracker

	// Hooks around the attempt; each is optional.
	Hooks Hooks

	Logger *slog.Logger
	Now    func() time.Time
}

// Hooks are a caller's steps inside an attempt. A hook that returns an
// error ends the attempt with that error.
type Hooks struct {
	// Provision runs before the worktree is created (to record it, so a
	// crash leaves a trace of what to clean up). Teardown runs before it
	// is removed, whatever happened (to undo what Prepare did); Removed
	// runs after it is gone.
	Provision func(path, branch string) error
	Teardown  func(worktree string)
	Removed   func(path string)
	// Prepare runs in the new worktree before the agent starts (to place
	// files the agent is told about).
	Prepare func(worktree string) error
	// Started sees the agent's process group as soon as it runs; Exited
	// runs as soon as the agent has exited and its access is revoked.
	Started func(pid int)
	Exited  func()
	// Late decides whether an attempt whose context ended while its agent
	// ran, but whose agent finished anyway, is carried on (committed and
	// gated under a context its end does not cancel). nil: never.
	Late func(ar agent.Result, err error) bool
	// Collect runs after the agent, before the commit, in the worktree (to
	// read what the agent handed back besides its change).
	Collect func(ctx context.Context, worktree string) error
}

// Commit is how an attempt's result is committed.
type Commit struct {
	Subject  string
	Body     string
	Trailers []git.Trailer
	// Author names the committer: "apiary (AUTHOR)".
	Author string
}

// Result is what an attempt did.
type Result struct {
	// Interrupted: the attempt's context ended before it was done (and it
	// was not carried on as Late); nothing else in the Result is final.
	Interrupted bool
	// Late: the context ended while the agent ran and Hooks.Late carried
	// the finished attempt on.
	Late bool
	// Ran: the agent was started; Agent is what agent.Run reported.
	Ran   bool
	Agent agent.Result
	// TimedOut: the agent was stopped by the attempt's Timeout.
	TimedOut bool
	// Usage is what the attempt spent: the model service's accounting
	// when it knows, else the agent's own report; WallS is the agent's.
	Usage envelope.Usage
	// KeyID is the model access key the attempt was granted ("" for none).
	KeyID string
	// Candidate is the commit of the attempt's result ("" when it changed
	// nothing, or was not committed); Changes and Failures are the gates'
	// view of it.
	Candidate string
	Changes   []git.Change
	Failures  []gate.Failure
}

// EnvelopeIn is where an attempt's envelope is written in its worktree.
func EnvelopeIn(worktree string) string {
	return filepath.Join(worktree, rundir.StateDir, "envelope.json")
}

// Failed says why a finished attempt's agent failed; "" if it did not.
func (r *Result) Failed(wallClockS float64) string {
	switch {
	case r.TimedOut:
		return fmt.Sprintf("the wall_clock_s budget (%gs) ran out", wallClockS)
	case r.Ran && r.Agent.Exit != 0:
		why := fmt.Sprintf("the agent exited with status %d", r.Agent.Exit)
		if r.Agent.Signal != "" {
			why += " (" + r.Agent.Signal + ")"
		}
		return why
	}
	return ""
}

// Run carries out one attempt: it provisions the worktree, writes the
// envelope, grants the model access and the write surface, runs the agent
// (bounded by the timeout; when ctx ends the agent gets SIGTERM, then
// SIGKILL), commits what the agent left and runs the static gates, then
// removes the worktree. It returns an error only for infrastructure
// failures (git, the file system, the model service, an agent that cannot
// be started); an agent that fails is reported in the Result.
func Run(ctx context.Context, s Spec) (res Result, err error) {
	log := s.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	late := false
	defer func() {
		if ctx.Err() != nil && !late {
			res.Interrupted = true
		}
	}()
	if s.Procs != nil {
		ctx = proc.WithTracker(ctx, s.Procs)
	}
	lent, err := provision(ctx, &s)
	if err != nil {
		return res, err
	}
	defer cleanup(ctx, &s, lent, log)
	if s.Home != "" {
		defer os.RemoveAll(s.Home)
	}
	local := EnvelopeIn(s.Worktree)
	if s.Envelope != nil {
		if err := rundir.WriteEnvelope(local, s.Envelope, false); err != nil {
			return res, fmt.Errorf("writing the envelope: %w", err)
		}
		if s.EnvelopeCopy != "" {
			if err := rundir.WriteEnvelope(s.EnvelopeCopy, s.Envelope, true); err != nil {
				return res, fmt.Errorf("writing the envelope: %w", err)
			}
		}
	}
	if s.Hooks.Prepare != nil {
		if err := s.Hooks.Prepare(s.Worktree); err != nil {
			return res, err
		}
	}
	var budget envelope.Budget
	if s.Envelope != nil {
		budget = s.Envelope.Budget
	}
	spec := agent.Spec{
		Profile: s.Profile, Dir: s.Worktree, Prompt: s.Prompt, TaskID: s.Ref.TaskID, RunID: s.Ref.Run, Base: s.Base,
		Home: s.Home, Log: s.Log, MaxBudgetUSD: budget.USD, Grace: s.Grace, Env: s.Env, Started: s.Hooks.Started,
	}
	if s.Envelope != nil {
		spec.Envelope = local
		if s.Envelope.Trace != nil {
			spec.Trace = s.Envelope.Trace.Traceparent
		}
	}
	revoke := func() {}
	if s.Models != nil {
		acc, err := s.Models.Grant(ctx, s.Ref, budget)
		if err != nil {
			return res, fmt.Errorf("model access: %w", err)
		}
		spec.BaseURL, spec.APIKey, res.KeyID = acc.BaseURL, acc.APIKey, acc.KeyID
		revoke = EndAccess(ctx, s.Models, acc.KeyID)
	}
	defer revoke()
	if facts, _ := agent.FactsOf(s.Profile.Kind); s.Writes != nil && facts.MCP && s.Envelope != nil {
		var g Grant
		if s.Grant != nil {
			g = *s.Grant
		}
		srv, err := s.Writes.MCPServer(s.Worktree, s.Envelope.Authority.WriteScope, g)
		if err != nil {
			return res, fmt.Errorf("write surface: %w", err)
		}
		spec.MCPServers = []agent.MCPServer{srv}
	}

	timeout := s.Timeout
	if timeout == 0 && budget.WallClockS > 0 {
		timeout = time.Duration(budget.WallClockS * float64(time.Second))
	}
	actx, cancel := ctx, context.CancelFunc(func() {})
	if timeout > 0 {
		actx, cancel = context.WithTimeout(ctx, timeout)
	}
	ar, aerr := agent.Run(actx, spec)
	cancel()
	revoke()
	if s.Hooks.Exited != nil {
		s.Hooks.Exited()
	}
	if aerr == nil {
		// What it spent counts whether or not the attempt is carried on:
		// a cancelled attempt's tokens were paid for too.
		res.Ran, res.Agent = true, ar
		uctx, stop := context.WithTimeout(context.WithoutCancel(ctx), CleanupTimeout)
		res.Usage = usageOf(uctx, s.Models, res.KeyID, ar)
		stop()
	}
	if ctx.Err() != nil {
		if s.Hooks.Late == nil || !s.Hooks.Late(ar, aerr) {
			return res, aerr
		}
		// The agent outlived the attempt's context and finished: carry its
		// result on, with a context that end does not cancel.
		late = true
		var stop context.CancelFunc
		ctx, stop = context.WithTimeout(context.WithoutCancel(ctx), CleanupTimeout)
		defer stop()
	}
	res.Late = late
	if aerr != nil {
		return res, aerr
	}
	res.TimedOut = ar.Cancelled && !late // the timeout, not the context's end
	if s.Hooks.Collect != nil {
		if err := s.Hooks.Collect(ctx, s.Worktree); err != nil {
			return res, err
		}
	}
	if res.TimedOut || ar.Exit != 0 || s.Commit == nil {
		return res, nil
	}
	cand, err := commit(ctx, &s)
	if err != nil || cand == "" {
		return res, err
	}
	res.Candidate = cand
	if !s.Gates {
		return res, nil
	}
	var g gate.Spec
	if e := s.Envelope; e != nil {
		g = gate.Spec{WriteScope: e.Authority.WriteScope, Sealed: e.Completion.Sealed, Forbidden: e.Completion.Forbidden}
	}
	rep, err := gate.Run(ctx, g, gate.Candidate{Repo: s.Repo, Base: s.Base, Commit: cand})
	if err != nil {
		return res, fmt.Errorf("gates: %w", err)
	}
	res.Changes, res.Failures = rep.Changes, rep.Failures
	return res, nil
}

func lockDo(l Locker, fn func() error) error {
	if l == nil {
		return fn()
	}
	return l.Do(fn)
}

// provision creates the worktree (after the Provision hook), or acquires
// it from the Pool.
func provision(ctx context.Context, s *Spec) (*git.PooledWorktree, error) {
	if s.Hooks.Provision != nil {
		if err := s.Hooks.Provision(s.Worktree, s.Branch); err != nil {
			return nil, err
		}
	}
	if s.Pool != nil {
		return acquire(ctx, s)
	}
	repo := s.Repo
	// Never killed half-way: a worktree add cut short by a cancel leaves
	// metadata that breaks every later one.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), CleanupTimeout)
	defer cancel()
	add := func() error {
		if s.Branch == "" {
			return repo.WorktreeAddDetached(ctx, s.Worktree, s.Base)
		}
		return repo.WorktreeAdd(ctx, s.Worktree, s.Branch, s.Base)
	}
	err := lockDo(s.Lock, add)
	if s.Branch != "" && errors.Is(err, git.ErrExists) {
		if ok, _ := repo.BranchExists(ctx, s.Branch); ok {
			// Left by an earlier attempt: apiary created it.
			err = lockDo(s.Lock, func() error {
				if err := repo.DeleteBranch(ctx, s.Branch); err != nil {
					return err
				}
				return add()
			})
		}
	}
	if err != nil {
		return nil, fmt.Errorf("provisioning the worktree: %w", err)
	}
	return nil, nil
}

// cleanup removes the worktree, or releases it to the pool that lent it,
// and, if asked, deletes the branch, even after ctx ended.
func cleanup(ctx context.Context, s *Spec, lent *git.PooledWorktree, log *slog.Logger) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), CleanupTimeout)
	defer cancel()
	if s.Hooks.Teardown != nil {
		s.Hooks.Teardown(s.Worktree)
	}
	if lent != nil {
		release(cctx, s, lent, log)
		return
	}
	err := lockDo(s.Lock, func() error {
		if err := s.Repo.WorktreeRemove(cctx, s.Worktree); err != nil {
			return err
		}
		if s.DeleteBranch && s.Branch != "" {
			return s.Repo.DeleteBranch(cctx, s.Branch)
		}
		return nil
	})
	if err != nil {
		log.Warn("removing a worktree", "task_id", s.Ref.Task, "path", s.Worktree, "err", err)
		return
	}
	if s.Hooks.Removed != nil {
		s.Hooks.Removed(s.Worktree)
	}
}

// usageOf takes usage from the model service when it knows, else from the
// agent's own report.
func usageOf(ctx context.Context, m ModelAccess, keyID string, ar agent.Result) envelope.Usage {
	u := envelope.Usage{WallS: ar.Wall.Seconds()}
	if m != nil && keyID != "" {
		if mu, err := m.Usage(ctx, keyID); err == nil && mu.Known {
			u.InputTokens, u.OutputTokens, u.USD = mu.InputTokens, mu.OutputTokens, mu.USD
			return u
		}
	}
	if rep := ar.Report; rep != nil {
		u.InputTokens, u.OutputTokens, u.USD = rep.InputTokens, rep.OutputTokens, rep.CostUSD
	}
	return u
}
