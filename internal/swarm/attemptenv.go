package swarm

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/gate"
)

// agentEnv is the APIARY_* environment of an attempt's agent beyond the
// agent package's own: its task, attempt and role, its capability and the
// run's control socket (for `apiary spawn`, `apiary escrow check` and
// heartbeats), and the git configuration that routes pushes through escrow.
func (r *runner) agentEnv(a *attempt, e *envelope.Envelope) map[string]string {
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
	return m
}

// mcpConfig gives a Claude Code agent the MCP write surface, with its
// capability when the surface can check it.
func (r *runner) mcpConfig(a *attempt, e *envelope.Envelope) (string, []string, error) {
	if cs, ok := r.s.Writes.(CapabilitySurface); ok {
		g := Grant{Capability: e.Authority.Capability, Revocations: RevocationsPath(r.st.root, a.run), EscrowTools: r.s.Escrow.Tools}
		if r.ctl != nil {
			g.Control = r.ctl.path
		}
		return cs.MCPConfigWith(a.worktree, e.Authority.WriteScope, g)
	}
	return r.s.Writes.MCPConfig(a.worktree, e.Authority.WriteScope)
}

// heartbeat renews the attempt's lease until the returned function is
// called: every HeartbeatInterval (at most a third of the lease) while its
// agent's process is runnable. A stopped agent (SIGSTOP, a debugger) is
// not renewed, so its lease lapses and the task runs again elsewhere.
func (r *runner) heartbeat(ctx context.Context, a *attempt) (stop func()) {
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
func (r *runner) runChecks(ctx context.Context, a *attempt, base, commit, suffix string, checks []string, timeout float64) (*gate.Report, error) {
	scratch := r.st.worktree(a.task, a.n, suffix)
	if err := r.st.emit(Event{Kind: EvWorktree, Task: a.task, Attempt: a.n, Path: scratch}); err != nil {
		return nil, err
	}
	if err := r.wt.do(func() error { return r.repo.WorktreeAddDetached(ctx, scratch, commit) }); err != nil {
		return nil, fmt.Errorf("scratch worktree: %w", err)
	}
	defer r.removeWorktree(ctx, a.task, scratch)
	logDir := filepath.Join(r.st.taskDir(a.task), "checks", filepath.Base(scratch)[len(a.task)+1:])
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return nil, err
	}
	spec := gate.Spec{WriteScope: []string{"."}, Forbidden: []string{}, Checks: checks,
		CheckTimeout: secondsDur(timeout), LogDir: logDir, Now: r.s.now}
	return gate.Run(ctx, spec, gate.Candidate{Repo: r.repo, Base: base, Commit: commit, Dir: scratch})
}
