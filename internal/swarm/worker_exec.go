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
	"github.com/apiary-dev/apiary/internal/attempt"
	"github.com/apiary-dev/apiary/internal/board"
	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/git"
	"github.com/apiary-dev/apiary/internal/proc"
	"github.com/apiary-dev/apiary/internal/rundir"
	"github.com/apiary-dev/apiary/internal/swarm/layout"
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
	Models attempt.ModelAccess
	// Writes gives Claude Code agents the MCP write surface; nil: none.
	Writes attempt.WriteSurface
	// CapabilityKey is the root key of the attempts' capability tokens;
	// nil reads DIR/.apiary/cap.key, making it when missing.
	CapabilityKey []byte
	// Pool is each run's warm pool of worktrees (git.WorktreePool, in
	// DIR/RUN/pool): an attempt's worktree is a pooled one reset to its
	// base, so a task pays milliseconds, not a `git worktree add`.
	Pool   PoolConfig
	Now    func() time.Time
	Rand   io.Reader
	Logger *slog.Logger

	mu    sync.Mutex
	repos map[string]*git.Repo         // run -> its clone
	pools map[string]*git.WorktreePool // run -> its pool; nil: none could be opened
	procs map[string]*proc.Tracker     // run -> its attempts' processes
	wt    serialized                   // serializes worktree-list commands and fetches into the shared clones
}

// tracker contains a run's attempts in marked process groups (see package
// proc): whatever an agent leaves, a daemon that called setsid included,
// is found and ended with its attempt.
func (x *GitExecutor) tracker(run string) *proc.Tracker {
	x.mu.Lock()
	defer x.mu.Unlock()
	if t := x.procs[run]; t != nil {
		return t
	}
	t, err := proc.New(proc.Options{Owner: run, Env: map[string]string{"APIARY_RUN_ID": run}, NoCgroup: true, Rand: x.Rand})
	if err != nil {
		return nil // unmarked process groups
	}
	if x.procs == nil {
		x.procs = map[string]*proc.Tracker{}
	}
	x.procs[run] = t
	return t
}

var _ Executor = (*GitExecutor)(nil)

// PoolConfig sizes an executor's worktree pools.
type PoolConfig struct {
	Off bool // every attempt adds its own worktree
	// Size is the most idle worktrees kept per run; 0: 4. MaxIdle evicts
	// one idle longer; 0: never.
	Size    int
	MaxIdle time.Duration
	// Sparse checks out only the directories a task's inputs and write
	// scope name (attempt.SparseCone).
	Sparse bool
}

// pool returns the run's worktree pool, opening it on first use; nil when
// pooling is off or the pool cannot be opened (the attempt then adds its
// own worktree, as without one).
func (x *GitExecutor) pool(ctx context.Context, run string, repo *git.Repo) attempt.Pool {
	if x.Pool.Off {
		return nil
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	p, tried := x.pools[run]
	if !tried {
		size := x.Pool.Size
		if size <= 0 {
			size = 4
		}
		var err error
		p, err = git.NewWorktreePool(context.WithoutCancel(ctx), repo, git.PoolOptions{Dir: filepath.Join(x.Dir, run, "pool"),
			Size: size, MaxIdle: x.Pool.MaxIdle, Now: x.Now, Lock: &x.wt})
		if err != nil {
			x.log().Warn("no worktree pool: every attempt adds its own worktree", "run", run, "err", err)
			p = nil
		}
		if x.pools == nil {
			x.pools = map[string]*git.WorktreePool{}
		}
		x.pools[run] = p
	}
	if p == nil {
		return nil // not a nil *git.WorktreePool in an interface
	}
	return p
}

// PoolStats sums what the runs' pools did.
func (x *GitExecutor) PoolStats() git.PoolStats {
	x.mu.Lock()
	defer x.mu.Unlock()
	var sum git.PoolStats
	for _, p := range x.pools {
		if p == nil {
			continue
		}
		st := p.Stats()
		sum.Created += st.Created
		sum.Reused += st.Reused
		sum.Unpooled += st.Unpooled
	}
	return sum
}

// Close removes the idle worktrees of every run's pool. A host calls it
// once its workers have stopped.
func (x *GitExecutor) Close(ctx context.Context) error {
	x.mu.Lock()
	pools := x.pools
	x.pools = nil
	x.mu.Unlock()
	var errs []error
	for run, p := range pools {
		if p == nil {
			continue
		}
		if err := p.Close(ctx); err != nil {
			errs = append(errs, fmt.Errorf("closing the worktree pool of run %s: %w", run, err))
			continue
		}
		_ = os.RemoveAll(filepath.Join(x.Dir, run, "pool"))
	}
	return errors.Join(errs...)
}

func (x *GitExecutor) log() *slog.Logger {
	if x.Logger != nil {
		return x.Logger
	}
	return slog.New(slog.DiscardHandler)
}

// clone returns the run's clone, making it on first use.
func (x *GitExecutor) clone(ctx context.Context, run *layout.Record) (*git.Repo, error) {
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
func (x *GitExecutor) profileFor(run *layout.Record, name string) (agent.Profile, error) {
	var p agent.Profile
	if a, ok := run.Agents[name]; ok && !a.Builtin {
		p = agent.Profile{Name: name, Kind: a.Kind, Argv: a.Argv, Model: a.Model, Args: a.Args, Env: a.Env, Tools: a.Tools, MaxTurns: a.MaxTurns}
	} else if b, ok := agent.Builtin(name); ok {
		p = b
	} else {
		return p, fmt.Errorf("%w: %q", attempt.ErrUnknownAgent, name)
	}
	if bin := x.AgentBin[p.Kind]; bin != "" && p.Kind != agent.KindCommand {
		p.Bin = bin
	}
	return p, nil
}

// fetchIntegration brings the run's integration branch into the run's clone
// and returns its commit. It fetches under the worktree lock: `git worktree
// add` first writes a placeholder HEAD, and a fetch into the same clone
// meanwhile (another worker's attempt, the pool's refill) fails its
// connectivity check on it ("bad object worktrees/wt0/HEAD").
func (x *GitExecutor) fetchIntegration(ctx context.Context, repo *git.Repo, run *layout.Record) (string, error) {
	track := "refs/remotes/origin/" + run.IntegrationBranch
	if err := x.wt.Do(func() error {
		return repo.Fetch(ctx, run.Remote, "+refs/heads/"+run.IntegrationBranch+":"+track)
	}); err != nil {
		return "", fmt.Errorf("fetching the integration branch: %w", err)
	}
	return repo.RevParse(ctx, track)
}

// Execute implements Executor.
func (x *GitExecutor) Execute(ctx context.Context, j *Job) (Outcome, error) {
	if j.Envelope == nil {
		return Outcome{}, fmt.Errorf("%w: task %s has no envelope", layout.ErrBadRun, j.TaskID)
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
	base, err := x.fetchIntegration(ctx, repo, run)
	if err != nil {
		return Outcome{}, err
	}
	token := strconv.FormatInt(j.Fence, 10)
	name := j.Name
	if j.Slot > 0 {
		// A speculative attempt's work is its own. Its branch cannot use
		// the claim id's "~" (no ref may), and "+" is in no task name.
		name += "+" + strconv.Itoa(j.Slot)
	}
	slot := name + "-" + token
	wt := filepath.Join(x.Dir, run.Run, "wt", slot)
	rnd := x.Rand
	if rnd == nil {
		rnd = rand.Reader
	}
	trace := ""
	if run.TraceID != "" {
		if trace, err = rundir.Traceparent(run.TraceID, rnd); err != nil {
			return Outcome{}, err
		}
	}
	env := envelopeFor(j, base, trace)
	env.Agent.Kind = prof.Kind
	now := time.Now
	if x.Now != nil {
		now = x.Now
	}
	if env.Authority.Capability, err = x.attemptCapability(j, env, now()); err != nil {
		return Outcome{}, err
	}
	for _, h := range j.Hints {
		env.Hints = append(env.Hints, envelope.Hint{Type: h.Type, Resolution: h.Resolution})
	}
	var utils []UtilFunc
	if x.Store != nil {
		if us, err := ReadUtils(ctx, x.Store, run.Run); err == nil {
			utils = us
		}
	}
	utilsPath := ""
	if len(utils) > 0 {
		utilsPath = rundir.State(wt, "utils.json")
	}
	trailers := []git.Trailer{
		{Key: git.TrailerTask, Value: j.Name}, {Key: git.TrailerRun, Value: run.Run},
		{Key: git.TrailerAgent, Value: prof.Name}, {Key: attempt.TrailerAttempt, Value: strconv.Itoa(j.Attempt)},
		{Key: TrailerFence, Value: token}, {Key: TrailerWorker, Value: j.Worker.ID},
	}
	if trace != "" {
		trailers = append(trailers, git.Trailer{Key: git.TrailerTrace, Value: trace})
	}
	spec := attempt.Spec{
		Repo: repo, Worktree: wt, Branch: "apiary/" + run.Run + "/" + slot, Base: base, DeleteBranch: true, Lock: &x.wt,
		Envelope: env, Profile: prof, Prompt: swarmPrompt(env, j, attempt.EnvelopeIn(wt), utilsPath),
		Env: map[string]string{
			"APIARY_TASK": j.Name, "APIARY_ATTEMPT": strconv.Itoa(j.Attempt), "APIARY_ROLE": attempt.RoleWorker,
			"APIARY_FENCE": token, "APIARY_WORKER": j.Worker.ID, "APIARY_UTILS": utilsPath,
			"APIARY_CAPABILITY": env.Authority.Capability},
		Home: wt + ".home", Log: filepath.Join(x.Dir, run.Run, "logs", slot+".log"), Grace: x.AgentGrace,
		Models: x.Models, Ref: attempt.TaskRef{Run: run.Run, Task: j.Name, TaskID: env.TaskID, Attempt: j.Attempt, Role: attempt.RoleWorker,
			Capability: env.Authority.Capability},
		Writes: x.Writes, Grant: &attempt.Grant{Capability: env.Authority.Capability},
		Commit: &attempt.Commit{Subject: j.Name + ": " + attempt.FirstLine(j.Envelope.Objective), Trailers: trailers, Author: prof.Name},
		Gates:  true, Logger: x.log(), Now: x.Now, Procs: x.tracker(run.Run).With(slot, nil),
		Hooks: attempt.Hooks{Prepare: func(string) error {
			if utilsPath == "" {
				return nil
			}
			b, err := json.MarshalIndent(utils, "", "  ")
			if err != nil {
				return err
			}
			return rundir.WriteFileUnsynced(utilsPath, b)
		}},
	}
	if p := x.pool(ctx, run.Run, repo); p != nil {
		spec.Pool = p
		if x.Pool.Sparse {
			spec.Sparse = attempt.SparseCone(env)
		}
	}
	out, err := attempt.Run(ctx, spec)
	switch {
	case ctx.Err() != nil:
		return Outcome{Usage: out.Usage}, context.Cause(ctx)
	case err != nil:
		return Outcome{Usage: out.Usage}, err
	case out.Failed(env.Budget.WallClockS) != "":
		return Outcome{Failed: out.Failed(env.Budget.WallClockS), Usage: out.Usage}, nil
	case out.Candidate == "":
		return Outcome{Done: true, Usage: out.Usage}, nil // nothing to integrate
	case len(out.Failures) > 0:
		return Outcome{Failed: "rejected: " + out.Failures[0].Error(), Gate: true, Usage: out.Usage}, nil
	}
	cand := out.Candidate
	c := &layout.Candidate{Base: base, Commit: cand, Branch: candidateRef(run.Run, name, j.Fence)}
	for _, ch := range out.Changes {
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
		return Outcome{Usage: out.Usage}, fmt.Errorf("pushing the candidate: %w", err)
	}
	return Outcome{Candidate: c, Usage: out.Usage}, nil
}

// Discard implements Discarder: it deletes the candidate's branch from the
// run's remote.
func (x *GitExecutor) Discard(ctx context.Context, j *Job, c *layout.Candidate) {
	repo, err := x.clone(ctx, j.Run)
	if err == nil {
		err = repo.Push(ctx, j.Run.Remote, []string{":" + c.Branch})
	}
	if err != nil {
		x.log().Debug("discarding a candidate", "branch", c.Branch, "err", err)
	}
}

var _ Discarder = (*GitExecutor)(nil)

// serialized is a mutex as an attempt.Locker: it serializes the
// worktree-list commands of one executor's clones.
type serialized struct{ mu sync.Mutex }

func (l *serialized) Do(fn func() error) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return fn()
}

// swarmPrompt tells the agent its task by reference, with the approved
// hints and where the utility index is.
func swarmPrompt(e *envelope.Envelope, j *Job, envPath, utilsPath string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\nYou are apiary swarm task %q (attempt %d of run %s), worked by %s. Your working directory is a git worktree at base commit %s.\n",
		e.Objective, j.Name, j.Attempt, j.Run.Run, j.Worker.ID, strings.TrimPrefix(e.Inputs.Workspace, "git:"))
	var extra []string
	if utilsPath != "" {
		extra = append(extra, fmt.Sprintf("Existing utility functions are listed in %s: reuse them rather than writing new ones.", utilsPath))
	}
	if len(j.Declared) > 0 {
		extra = append(extra, fmt.Sprintf("Other tasks (%s) are changing the same files right now: keep your edits small and local.", strings.Join(j.Declared, ", ")))
	}
	for _, h := range e.Hints {
		extra = append(extra, fmt.Sprintf("Reviewed hint (%s): %s", h.Type, h.Resolution))
	}
	b.WriteString(attempt.Brief(e, envPath, "the integrated result", extra...))
	return b.String()
}
