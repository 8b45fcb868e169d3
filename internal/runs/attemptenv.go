package runs

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/apiary-dev/apiary/internal/attempt"
	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/gate"
	"github.com/apiary-dev/apiary/internal/git"
	"github.com/apiary-dev/apiary/internal/proc"
	"github.com/apiary-dev/apiary/internal/rundir"
)

// agentEnv is the APIARY_* environment of an attempt's agent beyond the
// agent package's own: its task, attempt and role, its capability and the
// run's control socket (for `apiary spawn`, `apiary escrow check` and
// heartbeats), and the git configuration that routes pushes through escrow.
func (r *runner) agentEnv(a *attemptState, e *envelope.Envelope) map[string]string {
	m := a.extraEnv(e)
	if e.Authority.Capability != "" {
		m["APIARY_CAPABILITY"] = e.Authority.Capability
	}
	if r.ctl != nil {
		m["APIARY_CONTROL"] = r.ctl.path
	}
	for k, v := range r.hooks {
		m[k] = v
	}
	if r.s.AgentPath != "" {
		m["PATH"] = r.s.AgentPath
	}
	return m
}

// grant is what the attempt's MCP server is given besides its worktree
// and write scope: its capability, the run's revocations and control
// socket, the escrowed tools.
func (r *runner) grant(a *attemptState, e *envelope.Envelope) *attempt.Grant {
	g := &attempt.Grant{Capability: e.Authority.Capability, Revocations: RevocationsPath(r.st.Root(), a.run), EscrowTools: r.s.Escrow.Tools}
	if r.ctl != nil {
		g.Control = r.ctl.path
	}
	return g
}

// heartbeat renews the attempt's lease until the returned function is
// called: every HeartbeatInterval (at most a third of the lease) while its
// agent's process is runnable. A stopped agent (SIGSTOP, a debugger) is
// not renewed, so its lease lapses and the task runs again elsewhere.
func (r *runner) heartbeat(ctx context.Context, a *attemptState) (stop func()) {
	every := r.s.HeartbeatInterval
	if a.lease > 0 && every > a.lease/3 {
		every = max(a.lease/3, 1)
	}
	hctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		alive := func() bool {
			pid := a.pid.Load()
			return pid == 0 || runnable(int(pid))
		}
		if err := r.leases.Heartbeat(hctx, a.task, a.fence, every, alive); err != nil {
			r.s.log.Info("heartbeat ended", "task_id", a.task, "attempt", a.n, "err", err)
		}
	}()
	return func() {
		cancel()
		wg.Wait()
	}
}

// runChecks runs check commands on commit in a scratch worktree named
// after the attempt and suffix, logging under the task's checks/.
func (r *runner) runChecks(ctx context.Context, a *attemptState, base, commit, suffix string, checks []string, timeout float64) (*gate.Report, error) {
	scratch := r.st.Worktree(a.task, a.n, suffix)
	if err := r.st.Emit(Event{Kind: rundir.EvWorktree, Task: a.task, Attempt: a.n, Path: scratch}); err != nil {
		return nil, err
	}
	// Never killed half-way (a cancel, or the ref moving): a worktree add
	// cut short leaves metadata that breaks every later one.
	wctx, stop := context.WithTimeout(context.WithoutCancel(ctx), attempt.CleanupTimeout)
	defer stop()
	if pool := r.worktreePool(); pool != nil {
		w, err := pool.Acquire(wctx, git.Checkout{Base: commit, Path: scratch})
		if err != nil {
			return nil, fmt.Errorf("scratch worktree: %w", err)
		}
		defer r.releaseWorktree(ctx, a.task, w)
	} else {
		if err := r.wt.Do(func() error { return r.repo.WorktreeAddDetached(wctx, scratch, commit) }); err != nil {
			return nil, fmt.Errorf("scratch worktree: %w", err)
		}
		defer r.removeWorktree(ctx, a.task, scratch)
	}
	if ctx.Err() != nil {
		return nil, context.Cause(ctx)
	}
	logDir := filepath.Join(r.st.Task(a.task).ChecksDir(), filepath.Base(scratch)[len(a.task)+1:])
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return nil, err
	}
	spec := gate.Spec{WriteScope: []string{"."}, Forbidden: []string{}, Checks: checks,
		CheckTimeout: secondsDur(timeout), LogDir: logDir, Now: r.s.now}
	cctx := proc.WithTracker(ctx, r.scopes(a.task, a.n, strings.TrimPrefix(suffix, ".")))
	return gate.Run(cctx, spec, gate.Candidate{Repo: r.repo, Base: base, Commit: commit, Dir: scratch})
}
