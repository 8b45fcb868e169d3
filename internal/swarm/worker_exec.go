package swarm

import (
	"context"
	"crypto/rand"
	"encoding/json"
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
	"github.com/apiary-dev/apiary/internal/rundir"
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
	Now    func() time.Time
	Rand   io.Reader
	Logger *slog.Logger

	mu    sync.Mutex
	repos map[string]*git.Repo // run -> its clone
	wt    serialized           // serializes worktree-list commands
}

var _ Executor = (*GitExecutor)(nil)

func (x *GitExecutor) log() *slog.Logger {
	if x.Logger != nil {
		return x.Logger
	}
	return slog.New(slog.DiscardHandler)
}

// clone returns the run's clone, making it on first use.
func (x *GitExecutor) clone(ctx context.Context, run *Record) (*git.Repo, error) {
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
func (x *GitExecutor) profileFor(run *Record, name string) (agent.Profile, error) {
	var p agent.Profile
	if a, ok := run.Agents[name]; ok && !a.Builtin {
		p = agent.Profile{Name: name, Kind: a.Kind, Argv: a.Argv, Model: a.Model, Args: a.Args, Env: a.Env}
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
	out, err := attempt.Run(ctx, attempt.Spec{
		Repo: repo, Worktree: wt, Branch: "apiary/" + run.Run + "/" + slot, Base: base, DeleteBranch: true, Lock: &x.wt,
		Envelope: env, Profile: prof, Prompt: swarmPrompt(env, j, attempt.EnvelopeIn(wt), utilsPath),
		Env: map[string]string{
			"APIARY_TASK": j.Name, "APIARY_ATTEMPT": strconv.Itoa(j.Attempt), "APIARY_ROLE": attempt.RoleWorker,
			"APIARY_FENCE": token, "APIARY_WORKER": j.Worker.ID, "APIARY_UTILS": utilsPath},
		Home: wt + ".home", Log: filepath.Join(x.Dir, run.Run, "logs", slot+".log"), Grace: x.AgentGrace,
		Models: x.Models, Ref: attempt.TaskRef{Run: run.Run, Task: j.Name, TaskID: env.TaskID, Attempt: j.Attempt, Role: attempt.RoleWorker},
		Writes: x.Writes,
		Commit: &attempt.Commit{Subject: j.Name + ": " + attempt.FirstLine(j.Envelope.Objective), Trailers: trailers, Author: prof.Name},
		Gates:  true, Logger: x.log(), Now: x.Now,
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
	})
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
	c := &Candidate{Base: base, Commit: cand, Branch: candidateRef(run.Run, j.Name, j.Claim.Token)}
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
