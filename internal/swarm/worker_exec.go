package swarm

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apiary-dev/apiary/internal/agent"
	"github.com/apiary-dev/apiary/internal/board"
	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/gate"
	"github.com/apiary-dev/apiary/internal/git"
)

// GitExecutor runs claimed tasks for real: in a bare clone of the run's
// shared remote it adds a worktree at the integration head, runs the
// worker's agent there with the task's envelope (approved resolution hints
// and the utility index alongside), commits what the agent left with
// apiary's trailers (the claim's fencing token among them), runs the static
// gates (write scope, sealed paths, forbidden patterns) and pushes the
// commit to a candidate branch on the remote for the merge role. The
// checks run later, on the integrated tree.
type GitExecutor struct {
	// Dir holds the clones (DIR/RUN/repo.git), worktrees and logs. One
	// worker process per Dir.
	Dir   string
	Git   git.Options
	Store *board.Store // to read the run's utility index; nil: none
	// AgentBin maps an agent kind to its executable; AgentGrace is the time
	// between SIGTERM and SIGKILL of a stopped agent.
	AgentBin   map[string]string
	AgentGrace time.Duration
	// Models gives each attempt its model access; nil: none.
	Models ModelAccess
	// Writes gives Claude Code agents the MCP write surface; nil: none.
	Writes WriteSurface
	Now    func() time.Time
	Rand   io.Reader
	Logger *slog.Logger

	mu    sync.Mutex
	repos map[string]*git.Repo // run -> its clone
	wt    sync.Mutex           // serializes worktree-list commands
}

var _ Executor = (*GitExecutor)(nil)

func (x *GitExecutor) now() time.Time {
	if x.Now != nil {
		return x.Now()
	}
	return time.Now()
}

func (x *GitExecutor) log() *slog.Logger {
	if x.Logger != nil {
		return x.Logger
	}
	return slog.New(slog.DiscardHandler)
}

// clone returns the run's clone, making it on first use.
func (x *GitExecutor) clone(ctx context.Context, run *SwarmRun) (*git.Repo, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if r := x.repos[run.Run]; r != nil {
		return r, nil
	}
	dir := filepath.Join(x.Dir, run.Run, "repo.git")
	if _, err := os.Stat(dir); err != nil {
		if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
			return nil, err
		}
		tmp := dir + ".tmp"
		os.RemoveAll(tmp)
		if _, err := git.Clone(ctx, run.Remote, tmp, true, x.Git); err != nil {
			return nil, err
		}
		if err := os.Rename(tmp, dir); err != nil {
			return nil, err
		}
	}
	if x.repos == nil {
		x.repos = map[string]*git.Repo{}
	}
	r := git.New(dir, x.Git)
	x.repos[run.Run] = r
	return r, nil
}

// profileFor resolves the worker's agent profile: the run's own profiles
// first, then the built-ins.
func (x *GitExecutor) profileFor(run *SwarmRun, name string) (agent.Profile, error) {
	var p agent.Profile
	if a, ok := run.Agents[name]; ok && !a.Builtin {
		p = agent.Profile{Name: name, Kind: a.Kind, Argv: a.Argv, Model: a.Model, Args: a.Args, Env: a.Env}
	} else if b, ok := agent.Builtin(name); ok {
		p = b
	} else {
		return p, fmt.Errorf("%w: %q", ErrUnknownAgent, name)
	}
	if bin := x.AgentBin[p.Kind]; bin != "" && p.Kind != agent.KindCommand {
		p.Bin = bin
	}
	return p, nil
}

// Execute implements Executor.
func (x *GitExecutor) Execute(ctx context.Context, j *Job) (Outcome, error) {
	if j.Envelope == nil {
		return Outcome{}, fmt.Errorf("%w: task %s has no envelope", ErrBadRun, j.TaskID)
	}
	run := j.Run
	repo, err := x.clone(ctx, run)
	if err != nil {
		return Outcome{}, fmt.Errorf("cloning %s: %w", run.Remote, err)
	}
	prof, err := x.profileFor(run, j.Worker.Profile)
	if err != nil {
		return Outcome{Failed: err.Error()}, nil
	}
	track := "refs/remotes/origin/" + run.IntegrationBranch
	if err := repo.Fetch(ctx, run.Remote, "+refs/heads/"+run.IntegrationBranch+":"+track); err != nil {
		return Outcome{}, fmt.Errorf("fetching the integration branch: %w", err)
	}
	base, err := repo.RevParse(ctx, track)
	if err != nil {
		return Outcome{}, err
	}
	token := strconv.FormatInt(j.Claim.Token, 10)
	slot := j.Name + "-" + token
	wt := filepath.Join(x.Dir, run.Run, "wt", slot)
	branch := "apiary/" + run.Run + "/" + slot
	if err := x.locked(func() error { return repo.WorktreeAdd(ctx, wt, branch, base) }); err != nil {
		return Outcome{}, fmt.Errorf("provisioning the worktree: %w", err)
	}
	defer x.cleanup(ctx, repo, wt, branch)
	home := wt + ".home"
	defer os.RemoveAll(home)

	rnd := x.Rand
	if rnd == nil {
		rnd = rand.Reader
	}
	trace := ""
	if run.TraceID != "" {
		if trace, err = traceparent(run.TraceID, rnd); err != nil {
			return Outcome{}, err
		}
	}
	env := envelopeFor(j, base, trace)
	env.Agent.Kind = prof.Kind
	for _, h := range j.Hints {
		env.Hints = append(env.Hints, envelope.Hint{Type: h.Type, Resolution: h.Resolution})
	}
	local := filepath.Join(wt, StateDir, "envelope.json")
	if err := writeEnvelope(local, env, false); err != nil {
		return Outcome{}, fmt.Errorf("writing the envelope: %w", err)
	}
	utilsPath := ""
	if x.Store != nil {
		if us, err := ReadUtils(ctx, x.Store, run.Run); err == nil && len(us) > 0 {
			utilsPath = filepath.Join(wt, StateDir, "utils.json")
			b, _ := json.MarshalIndent(us, "", "  ")
			if err := os.WriteFile(utilsPath, b, 0o644); err != nil {
				return Outcome{}, err
			}
		}
	}
	logPath := filepath.Join(x.Dir, run.Run, "logs", slot+".log")
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return Outcome{}, err
	}
	spec := agent.Spec{Profile: prof, Dir: wt, Prompt: swarmPrompt(env, j, local, utilsPath), Envelope: local,
		TaskID: env.TaskID, RunID: run.Run, Base: base, Trace: trace, Home: home, Log: logPath,
		MaxBudgetUSD: env.Budget.USD, Grace: x.AgentGrace, Env: map[string]string{
			"APIARY_TASK": j.Name, "APIARY_ATTEMPT": strconv.Itoa(j.Attempt), "APIARY_ROLE": RoleWorker,
			"APIARY_FENCE": token, "APIARY_WORKER": j.Worker.ID, "APIARY_UTILS": utilsPath}}
	if x.Models != nil {
		acc, err := x.Models.Grant(ctx, TaskRef{Run: run.Run, Task: j.Name, TaskID: env.TaskID, Attempt: j.Attempt, Role: RoleWorker}, env.Budget)
		if err != nil {
			return Outcome{}, fmt.Errorf("model access: %w", err)
		}
		spec.BaseURL, spec.APIKey = acc.BaseURL, acc.APIKey
		defer endAccess(ctx, x.Models, acc.KeyID)()
	}
	if x.Writes != nil && prof.Kind == agent.KindClaude {
		if spec.MCPConfig, spec.AllowedTools, err = x.Writes.MCPConfig(wt, env.Authority.WriteScope); err != nil {
			return Outcome{}, fmt.Errorf("write surface: %w", err)
		}
	}
	actx, cancel := ctx, context.CancelFunc(func() {})
	if env.Budget.WallClockS > 0 {
		actx, cancel = context.WithTimeout(ctx, secs(env.Budget.WallClockS))
	}
	ar, err := agent.Run(actx, spec)
	cancel()
	if ctx.Err() != nil {
		return Outcome{}, context.Cause(ctx)
	}
	if err != nil {
		return Outcome{}, err
	}
	switch {
	case ar.Cancelled:
		return Outcome{Failed: fmt.Sprintf("the wall_clock_s budget (%gs) ran out", env.Budget.WallClockS)}, nil
	case ar.Exit != 0:
		return Outcome{Failed: fmt.Sprintf("the agent exited with status %d %s", ar.Exit, ar.Signal)}, nil
	}
	cand, err := x.commit(ctx, repo.At(wt), j, prof.Name, base, trace, branch)
	if err != nil {
		return Outcome{}, err
	}
	if cand == "" {
		return Outcome{Done: true}, nil // nothing to integrate
	}
	rep, err := gate.Run(ctx, gate.Spec{WriteScope: env.Authority.WriteScope, Sealed: env.Completion.Sealed, Forbidden: env.Completion.Forbidden},
		gate.Candidate{Repo: repo, Base: base, Commit: cand})
	if err != nil {
		return Outcome{}, fmt.Errorf("gates: %w", err)
	}
	if len(rep.Failures) > 0 {
		return Outcome{Failed: "rejected: " + rep.Failures[0].Error(), Gate: true}, nil
	}
	c := &Candidate{Base: base, Commit: cand, Branch: candidateRef(run.Run, j.Name, j.Claim.Token)}
	for _, ch := range rep.Changes {
		c.Paths = append(c.Paths, ch.Path)
	}
	if patches, err := repo.DiffPatch(ctx, base, cand); err == nil {
		for _, fp := range patches {
			for _, l := range fp.Lines {
				if l.Op == '+' {
					c.Added++
				} else {
					c.Removed++
				}
			}
		}
	}
	if err := repo.Push(ctx, run.Remote, []string{cand + ":" + c.Branch}); err != nil {
		return Outcome{}, fmt.Errorf("pushing the candidate: %w", err)
	}
	return Outcome{Candidate: c}, nil
}

func (x *GitExecutor) locked(f func() error) error {
	x.wt.Lock()
	defer x.wt.Unlock()
	return f()
}

// cleanup removes the attempt's worktree and branch, even after ctx ended.
func (x *GitExecutor) cleanup(ctx context.Context, repo *git.Repo, wt, branch string) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	err := x.locked(func() error {
		if err := repo.WorktreeRemove(cctx, wt); err != nil {
			return err
		}
		return repo.DeleteBranch(cctx, branch)
	})
	if err != nil {
		x.log().Warn("removing a worktree", "path", wt, "err", err)
	}
}

// commit records what the agent left as one commit on base with the
// attempt's trailers; "" when it changed nothing. Commits the agent made
// itself are squashed into it.
func (x *GitExecutor) commit(ctx context.Context, wt *git.Repo, j *Job, profile, base, trace, branch string) (string, error) {
	trailers := []git.Trailer{
		{Key: git.TrailerTask, Value: j.Name}, {Key: git.TrailerRun, Value: j.Run.Run},
		{Key: git.TrailerAgent, Value: profile}, {Key: TrailerAttempt, Value: strconv.Itoa(j.Attempt)},
		{Key: TrailerFence, Value: strconv.FormatInt(j.Claim.Token, 10)}, {Key: TrailerWorker, Value: j.Worker.ID},
	}
	if trace != "" {
		trailers = append(trailers, git.Trailer{Key: git.TrailerTrace, Value: trace})
	}
	msg, err := git.Message(clip(j.Name+": "+firstLine(j.Envelope.Objective), 72), "", trailers)
	if err != nil {
		return "", err
	}
	sig := git.Signature{Name: "apiary (" + profile + ")", Email: "apiary@localhost", When: x.now()}
	_, err = wt.CommitAll(ctx, git.CommitOptions{Message: msg, Author: sig, Exclude: []string{StateDir}})
	if err != nil && !errors.Is(err, git.ErrNothingToCommit) {
		return "", fmt.Errorf("committing the result: %w", err)
	}
	committed := err == nil
	head, err := wt.RevParse(ctx, "HEAD")
	if err != nil {
		return "", err
	}
	tree, err := wt.RevParse(ctx, "HEAD^{tree}")
	if err != nil {
		return "", err
	}
	baseTree, err := wt.RevParse(ctx, base+"^{tree}")
	if err != nil {
		return "", err
	}
	if head == base || tree == baseTree {
		return "", nil
	}
	if committed {
		if parent, err := wt.RevParse(ctx, "HEAD^"); err == nil && parent == base {
			return head, nil
		}
	}
	squash, err := wt.CommitTree(ctx, tree, []string{base}, msg, sig, git.Signature{})
	if err != nil {
		return "", err
	}
	if err := wt.UpdateRef(ctx, "refs/heads/"+branch, squash, head, "apiary: squash agent commits"); err != nil {
		return "", err
	}
	return squash, nil
}

// swarmPrompt tells the agent its task by reference, with the approved
// hints and where the utility index is.
func swarmPrompt(e *envelope.Envelope, j *Job, envPath, utilsPath string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\nYou are apiary swarm task %q (attempt %d of run %s), worked by %s. Your working directory is a git worktree at base commit %s.\n",
		e.Objective, j.Name, j.Attempt, j.Run.Run, j.Worker.ID, strings.TrimPrefix(e.Inputs.Workspace, "git:"))
	fmt.Fprintf(&b, "\nTask envelope (JSON): %s\n", envPath)
	fmt.Fprintf(&b, "You may change only: %s\n", strings.Join(orNone(e.Authority.WriteScope), ", "))
	if len(e.Completion.Sealed) > 0 {
		fmt.Fprintf(&b, "Never change: %s\n", strings.Join(e.Completion.Sealed, ", "))
	}
	if len(e.Inputs.Paths) > 0 {
		fmt.Fprintf(&b, "Read first: %s\n", strings.Join(e.Inputs.Paths, ", "))
	}
	if len(e.Completion.Checks) > 0 {
		fmt.Fprintf(&b, "apiary will run these checks on the integrated result: %s\n", strings.Join(e.Completion.Checks, "; "))
	}
	if utilsPath != "" {
		fmt.Fprintf(&b, "Existing utility functions are listed in %s: reuse them rather than writing new ones.\n", utilsPath)
	}
	if len(j.Declared) > 0 {
		fmt.Fprintf(&b, "Other tasks (%s) are changing the same files right now: keep your edits small and local.\n", strings.Join(j.Declared, ", "))
	}
	for _, h := range e.Hints {
		fmt.Fprintf(&b, "Reviewed hint (%s): %s\n", h.Type, h.Resolution)
	}
	b.WriteString("apiary rejects changes outside your scope, deleted or disabled tests and added skip markers. Leave your changes in the working tree: apiary commits them.\n")
	return b.String()
}
