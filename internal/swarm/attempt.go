package swarm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/apiary-dev/apiary/internal/agent"
	"github.com/apiary-dev/apiary/internal/capability"
	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/gate"
	"github.com/apiary-dev/apiary/internal/git"
)

// attempt is everything one attempt's goroutine needs. It shares nothing
// mutable with the scheduler.
type attempt struct {
	run         string
	task        string
	taskID      string
	role        string
	n           int
	fence       uint64
	base        string          // the worktree's commit: the integration head at dispatch
	ctx         context.Context // the task's context
	tmpl        *envelope.Envelope
	profile     agent.Profile
	profileName string
	trace       string
	worktree    string
	branch      string
	envPath     string // the envelope's copy in the run directory
	logPath     string
	home        string
	// For a reconciliation: the task's candidate, its base and changes.
	origBase, origCandidate string
	origChanges             []git.Change

	stop    context.CancelCauseFunc // ends ctx (the attempt's own) with a cause
	lease   time.Duration           // its lease's TTL
	dynamic bool                    // of a spawned child
	spec    bool                    // speculative: checks run on its own candidate
	token   *capability.Token       // its capability
	lineage []string                // the token's lineage below the run
	budget  envelope.Budget         // what it may spend: its task's remaining budget
	pid     atomic.Int64            // the agent's process group, once started
}

// attemptResult is what an attempt's goroutine reports back.
type attemptResult struct {
	a           *attempt
	interrupted bool  // the task's or run's context ended
	err         error // infrastructure failure
	exit        int
	signal      string
	timedOut    bool
	report      *agent.Report
	candidate   string // "" when nothing changed
	changes     []git.Change
	failures    []gate.Failure
	children    []childFile
	usage       envelope.Usage
	rc          *envelope.Reconcile
}

// cleanupTimeout bounds the git work that tidies up after an attempt, which
// runs even when the attempt's context has ended.
const cleanupTimeout = 2 * time.Minute

// runAttempt provisions the worktree, runs the agent, commits what it left,
// collects its child envelopes and runs the static gates.
//
// Its lease is renewed every heartbeat while the agent runs and is not
// stopped; after the agent exits the runtime holds it (Pin). An attempt
// whose lease lapsed while its agent was stopped and that still finishes
// (its agent ignored SIGTERM) is carried to the end like any other: it is
// the integrator that refuses its stale fencing token.
func (r *runner) runAttempt(a *attempt) (res *attemptResult) {
	res = &attemptResult{a: a}
	ctx := a.ctx
	late := false
	defer func() {
		if ctx.Err() != nil && !late {
			res.interrupted = true
		}
	}()
	repo := r.repo
	if err := r.st.emit(Event{Kind: EvWorktree, Task: a.task, Attempt: a.n, Role: a.role, Path: a.worktree, Branch: a.branch}); err != nil {
		res.err = err
		return res
	}
	add := func() error { return repo.WorktreeAdd(ctx, a.worktree, a.branch, a.base) }
	err := r.wt.do(add)
	if errors.Is(err, git.ErrExists) {
		if ok, _ := repo.BranchExists(ctx, a.branch); ok {
			// Left by an earlier attempt of this task: apiary created it.
			err = r.wt.do(func() error {
				if err := repo.DeleteBranch(ctx, a.branch); err != nil {
					return err
				}
				return add()
			})
		}
	}
	if err != nil {
		res.err = fmt.Errorf("provisioning the worktree: %w", err)
		return res
	}
	defer r.removeWorktree(ctx, a.task, a.worktree)
	defer os.RemoveAll(a.home)

	env := a.envelope()
	if a.role == RoleReconciler {
		rc, err := r.conflictOf(ctx, a)
		if err != nil {
			res.err = err
			return res
		}
		env.Reconcile, res.rc = rc, rc
	}
	local := filepath.Join(a.worktree, StateDir, "envelope.json")
	for _, p := range []string{a.envPath, local} {
		if err := writeEnvelope(p, env, p == a.envPath); err != nil {
			res.err = fmt.Errorf("writing the envelope: %w", err)
			return res
		}
	}
	spec := agent.Spec{
		Profile: a.profile, Dir: a.worktree, Prompt: prompt(env, a, local), Envelope: local,
		TaskID: a.taskID, RunID: a.run, Base: a.base, Trace: a.trace, Home: a.home, Log: a.logPath,
		MaxBudgetUSD: env.Budget.USD, Grace: r.s.AgentGrace, Env: r.agentEnv(a, env),
		Started: func(pid int) {
			a.pid.Store(int64(pid))
			_ = r.st.emit(Event{Kind: EvAgentStarted, Task: a.task, Attempt: a.n, Role: a.role, Pid: pid})
		},
	}
	var keyID string
	if r.s.Models != nil {
		acc, err := r.s.Models.Grant(ctx, TaskRef{Run: a.run, Task: a.task, TaskID: a.taskID, Attempt: a.n, Role: a.role, Capability: env.Authority.Capability}, env.Budget)
		if err != nil {
			res.err = fmt.Errorf("model access: %w", err)
			return res
		}
		spec.BaseURL, spec.APIKey, keyID = acc.BaseURL, acc.APIKey, acc.KeyID
	}
	revokeAccess := func() {}
	if r.s.Models != nil {
		revokeAccess = endAccess(ctx, r.s.Models, keyID)
	}
	if r.s.Writes != nil && a.profile.Kind == agent.KindClaude {
		cfg, tools, err := r.mcpConfig(a, env)
		if err != nil {
			res.err = fmt.Errorf("write surface: %w", err)
			return res
		}
		spec.MCPConfig, spec.AllowedTools = cfg, tools
	}

	actx, cancel := ctx, context.CancelFunc(func() {})
	if env.Budget.WallClockS > 0 {
		actx, cancel = context.WithTimeout(ctx, time.Duration(env.Budget.WallClockS*float64(time.Second)))
	}
	stopBeat := r.heartbeat(ctx, a)
	ar, err := agent.Run(actx, spec)
	cancel()
	revokeAccess()
	stopBeat()
	_ = r.leases.Pin(a.task, a.fence) // the runtime holds it now; a stale one fails at the integrator
	if ctx.Err() != nil {
		if !errors.Is(context.Cause(ctx), errLeaseLapsed) || err != nil || ar.Exit != 0 || r.runCtx.Err() != nil {
			return res
		}
		// The agent outlived its lease and finished: carry its result on,
		// with a context its lapse does not end.
		late = true
		var stopLate context.CancelFunc
		ctx, stopLate = context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer stopLate()
	}
	if err != nil {
		res.err = err
		return res
	}
	res.exit, res.signal, res.report = ar.Exit, ar.Signal, ar.Report
	res.timedOut = ar.Cancelled && !late // the wall-clock deadline, not the lapse
	res.usage = r.usageOf(ctx, keyID, ar)
	if a.role == RoleWorker {
		res.children = readChildren(filepath.Join(a.worktree, StateDir, "out", "tasks"))
	}
	if res.timedOut || res.exit != 0 {
		return res
	}
	cand, err := r.commit(ctx, a)
	if err != nil {
		res.err = err
		return res
	}
	if cand == "" {
		return res
	}
	res.candidate = cand
	rep, err := gate.Run(ctx, gate.Spec{WriteScope: env.Authority.WriteScope, Sealed: env.Completion.Sealed, Forbidden: env.Completion.Forbidden},
		gate.Candidate{Repo: repo, Base: a.base, Commit: cand})
	if err != nil {
		res.err = fmt.Errorf("gates: %w", err)
		return res
	}
	res.changes, res.failures = rep.Changes, rep.Failures
	if a.spec && len(res.failures) == 0 && len(env.Completion.Checks) > 0 {
		// A speculative attempt passes only with its checks: run them on its
		// own candidate now, so the first to pass can win.
		crep, err := r.runChecks(ctx, a, a.base, cand, ".spec-check", env.Completion.Checks, env.Completion.CheckTimeoutS)
		if err != nil {
			res.err = fmt.Errorf("checks: %w", err)
			return res
		}
		res.failures = crep.Failures
	}
	return res
}

// removeWorktree removes an attempt's worktree even after ctx ended.
func (r *runner) removeWorktree(ctx context.Context, task, path string) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if err := r.wt.do(func() error { return r.repo.WorktreeRemove(cctx, path) }); err != nil {
		r.s.log.Warn("removing worktree", "task_id", task, "path", path, "err", err)
		return
	}
	_ = r.st.emit(Event{Kind: EvWorktreeRemoved, Task: task, Path: path})
}

// commit records what the agent left in the worktree as one commit on base
// with apiary's trailers, and returns it; "" when nothing changed. Commits
// the agent made itself are folded into it, so the integration branch only
// ever receives commits apiary made.
func (r *runner) commit(ctx context.Context, a *attempt) (string, error) {
	wt := r.repo.At(a.worktree)
	subject := a.task + ": " + firstLine(a.tmpl.Objective)
	if a.role == RoleReconciler {
		subject = a.task + ": reconcile with the integration head"
	}
	msg, err := git.Message(clip(subject, 72), "", a.trailers(""))
	if err != nil {
		return "", err
	}
	sig := git.Signature{Name: "apiary (" + a.profileName + ")", Email: "apiary@localhost", When: r.s.now()}
	_, err = wt.CommitAll(ctx, git.CommitOptions{Message: msg, Author: sig, Exclude: []string{StateDir}})
	if err != nil && !errors.Is(err, git.ErrNothingToCommit) {
		return "", fmt.Errorf("committing the result: %w", err)
	}
	committed := err == nil
	head, err := wt.RevParse(ctx, "HEAD")
	if err != nil {
		return "", err
	}
	if head == a.base {
		return "", nil
	}
	tree, err := wt.RevParse(ctx, "HEAD^{tree}")
	if err != nil {
		return "", err
	}
	baseTree, err := wt.RevParse(ctx, a.base+"^{tree}")
	if err != nil {
		return "", err
	}
	if tree == baseTree {
		return "", nil
	}
	if committed {
		if parent, err := wt.RevParse(ctx, "HEAD^"); err == nil && parent == a.base {
			return head, nil
		}
	}
	// The agent committed on its own: squash onto base.
	squash, err := wt.CommitTree(ctx, tree, []string{a.base}, msg, sig, git.Signature{})
	if err != nil {
		return "", err
	}
	if err := wt.UpdateRef(ctx, "refs/heads/"+a.branch, squash, head, "apiary: squash agent commits"); err != nil {
		return "", err
	}
	return squash, nil
}

// trailers are the attempt's commit trailers; integration names the kind of
// an integrator's merge ("" for the task's own commit).
func (a *attempt) trailers(integration string) []git.Trailer {
	ts := []git.Trailer{
		{Key: git.TrailerTask, Value: a.task},
		{Key: git.TrailerRun, Value: a.run},
		{Key: git.TrailerAgent, Value: a.profileName},
		{Key: git.TrailerTrace, Value: a.trace},
		{Key: TrailerAttempt, Value: strconv.Itoa(a.n)},
	}
	if integration != "" {
		ts = append(ts, git.Trailer{Key: TrailerIntegration, Value: integration})
	}
	return ts
}

// Trailers apiary adds besides the git package's.
const (
	TrailerAttempt     = "Apiary-Attempt"
	TrailerIntegration = "Apiary-Integration"
)

// usageOf takes usage from the model service when it knows, else from the
// agent's own report.
func (r *runner) usageOf(ctx context.Context, keyID string, ar agent.Result) envelope.Usage {
	u := envelope.Usage{WallS: ar.Wall.Seconds()}
	if r.s.Models != nil && keyID != "" {
		if mu, err := r.s.Models.Usage(ctx, keyID); err == nil && mu.Known {
			u.InputTokens, u.OutputTokens, u.USD = mu.InputTokens, mu.OutputTokens, mu.USD
			return u
		}
	}
	if rep := ar.Report; rep != nil {
		u.InputTokens, u.OutputTokens, u.USD = rep.InputTokens, rep.OutputTokens, rep.CostUSD
	}
	return u
}

// envelope is the attempt's envelope: the task's template with its base,
// trace, capability and budget.
func (a *attempt) envelope() *envelope.Envelope {
	e := *a.tmpl
	e.TaskID, e.RunID, e.Name = a.taskID, a.run, a.task
	if a.token != nil {
		e.Authority.Capability = a.token.String()
	}
	if a.role == RoleWorker && a.n > 0 {
		e.Budget = a.budget
	}
	e.Inputs.Workspace = "git:" + a.base
	e.Trace = &envelope.Trace{Traceparent: a.trace}
	e.Agent = envelope.AgentRef{Profile: a.profileName, Kind: a.profile.Kind}
	return &e
}

// extraEnv is the APIARY_* environment beyond the agent package's own.
func (a *attempt) extraEnv(e *envelope.Envelope) map[string]string {
	m := map[string]string{"APIARY_TASK": a.task, "APIARY_ATTEMPT": strconv.Itoa(a.n), "APIARY_ROLE": a.role}
	if rc := e.Reconcile; rc != nil {
		m["APIARY_RECONCILE_TASK"] = rc.Task
		m["APIARY_RECONCILE_BASE"] = rc.Base
		m["APIARY_RECONCILE_HEAD"] = rc.Head
		m["APIARY_RECONCILE_CANDIDATE"] = rc.Candidate
		m["APIARY_RECONCILE_PATHS"] = strings.Join(rc.Paths, "\n")
	}
	return m
}

// prompt tells the agent its task by reference: the envelope's path, the
// base commit, the paths. It never includes file contents.
func prompt(e *envelope.Envelope, a *attempt, envPath string) string {
	var b strings.Builder
	if rc := e.Reconcile; rc != nil {
		fmt.Fprintf(&b, "Reconcile task %q with the integration branch.\n\n", rc.Task)
		fmt.Fprintf(&b, "Your working directory is a git worktree at the integration head %s. Task %q started from %s and produced commit %s (see `git diff %s %s`); the branch has changed since then in the same places:\n", rc.Head, rc.Task, rc.Base, rc.Candidate, rc.Base, rc.Candidate)
		for _, p := range rc.Paths {
			fmt.Fprintf(&b, "  - %s\n", p)
		}
		if rc.Conflict != "" {
			fmt.Fprintf(&b, "git merge-tree reports:\n%s\n", rc.Conflict)
		}
		fmt.Fprintf(&b, "\nApply the task's change on top of this tree so that both the branch's work and the task's intent hold. The task's objective was:\n%s\n", e.Objective)
	} else {
		fmt.Fprintf(&b, "%s\n\nYou are apiary task %q (attempt %d of run %s). Your working directory is a git worktree at base commit %s.\n", e.Objective, a.task, a.n, a.run, a.base)
	}
	fmt.Fprintf(&b, "\nTask envelope (JSON): %s\n", envPath)
	fmt.Fprintf(&b, "You may change only: %s\n", strings.Join(orNone(e.Authority.WriteScope), ", "))
	if len(e.Completion.Sealed) > 0 {
		fmt.Fprintf(&b, "Never change: %s\n", strings.Join(e.Completion.Sealed, ", "))
	}
	if len(e.Inputs.Paths) > 0 {
		fmt.Fprintf(&b, "Read first: %s\n", strings.Join(e.Inputs.Paths, ", "))
	}
	if len(e.Completion.Checks) > 0 {
		fmt.Fprintf(&b, "apiary will run these checks on your result: %s\n", strings.Join(e.Completion.Checks, "; "))
	}
	b.WriteString("apiary rejects changes outside your scope, deleted or disabled tests and added skip markers. Leave your changes in the working tree: apiary commits them.\n")
	if a.role == RoleWorker {
		b.WriteString("To hand off subtasks, write task envelopes (the envelope JSON schema) to .apiary/out/tasks/NAME.json.\n")
	}
	return b.String()
}

func orNone(s []string) []string {
	if len(s) == 0 {
		return []string{"(nothing)"}
	}
	return s
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

// conflictOf describes, for a reconciliation at a.base (the current head),
// how the task's candidate meets the branch: the overlapping paths and
// merge-tree's notices.
func (r *runner) conflictOf(ctx context.Context, a *attempt) (*envelope.Reconcile, error) {
	theirs, err := r.repo.DiffNameStatus(ctx, a.origBase, a.base)
	if err != nil {
		return nil, err
	}
	paths := overlap(a.origChanges, theirs)
	mr, err := r.repo.MergeTree(ctx, a.base, a.origCandidate, git.MergeTreeOptions{})
	if err != nil {
		return nil, err
	}
	var msgs strings.Builder
	for _, m := range mr.Messages {
		fmt.Fprintf(&msgs, "%s: %s\n", m.Type, strings.TrimSpace(m.Text))
	}
	for _, p := range mr.Conflicts {
		if !slices.Contains(paths, p) {
			paths = append(paths, p)
		}
	}
	slices.Sort(paths)
	return &envelope.Reconcile{Task: a.task, Base: a.origBase, Head: a.base, Candidate: a.origCandidate,
		Paths: paths, Conflict: clip(msgs.String(), 65536)}, nil
}

// overlap returns the paths changed on both sides, sorted.
func overlap(ours, theirs []git.Change) []string {
	set := make(map[string]bool, len(theirs))
	for _, c := range theirs {
		set[c.Path] = true
	}
	var out []string
	for _, c := range ours {
		if set[c.Path] {
			out = append(out, c.Path)
			delete(set, c.Path)
		}
	}
	slices.Sort(out)
	return out
}
