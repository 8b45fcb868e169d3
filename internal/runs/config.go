package runs

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/apiary-dev/apiary/internal/agent"
	"github.com/apiary-dev/apiary/internal/attempt"
	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/git"
	"github.com/apiary-dev/apiary/internal/plan"
	"github.com/apiary-dev/apiary/internal/proc"
	"github.com/apiary-dev/apiary/internal/rundir"
)

// Config is how a run is executed; the zero value of every field but Repo is
// a sensible default. A Config is not modified by the run.
type Config struct {
	// Repo is the repository's main working tree (its top directory or any
	// directory below it). Required.
	Repo *git.Repo
	// MaxParallel bounds the attempts running at once; 0 means the plan's
	// max_parallel (on resume: the value recorded when the run started).
	MaxParallel int
	// MaxAttempts bounds a task's attempts, counting re-runs after a failed
	// reconciliation; 0 means 3.
	MaxAttempts int
	// MaxDepth bounds the depth of child tasks (a plan's tasks are depth 0);
	// 0 means 2.
	MaxDepth int
	// ReconcileAgent is the profile that runs reconciliation tasks; "" means
	// the conflicting task's own agent.
	ReconcileAgent string
	// ReconcileBudget bounds a reconciliation; a zero field takes half the
	// task's (and wall_clock_s at most 900 s when the task sets none).
	ReconcileBudget envelope.Budget
	// MaxCASRetries bounds the recomputations of one integration after the
	// integration ref moved under it; 0 means 20.
	MaxCASRetries int
	// Models hands out model access per attempt; nil gives agents none.
	Models attempt.ModelAccess
	// Writes gives Claude Code agents the MCP write surface; nil: none.
	Writes attempt.WriteSurface
	// Now is the clock of events, receipts and durations; nil is time.Now.
	Now func() time.Time
	// Rand is the randomness of task ids, run ids and trace ids; nil is
	// crypto/rand.Reader.
	Rand io.Reader
	// OnEvent, if set, sees every event after it is on disk, one at a time
	// (calls are serialized) from the run's goroutines; it must not block.
	OnEvent func(Event)
	// AgentGrace is the time between SIGTERM and SIGKILL of a cancelled
	// agent; 0 is the agent package's default.
	AgentGrace time.Duration
	// AgentBin maps an agent kind ("claude", ...) to the executable that
	// runs it, instead of the kind's name on PATH.
	AgentBin map[string]string
	// Logger receives diagnostics; nil discards them.
	Logger *slog.Logger

	// SpawnAlpha bounds a child's budget, in each limited unit, to this
	// fraction of what its parent has left; 0 means 0.5.
	SpawnAlpha float64
	// SpawnWindow is a task's credit window for the children it emits:
	// its next emission blocks while this many are not finished; 0 means 4.
	SpawnWindow int
	// HeartbeatInterval is how often a running attempt's lease is renewed
	// while its agent runs and is not stopped; 0 means 5 s (at most a third
	// of the lease).
	HeartbeatInterval time.Duration
	// Deadline, if set, cancels every task still running or waiting at
	// that time (reason "deadline").
	Deadline time.Time
	// CapabilityKey is the root key of the run's capability tokens; nil
	// reads .apiary/cap.key, creating it (mode 0600) when missing.
	CapabilityKey []byte
	// ModelHosts, if set, are the only hosts a task with network
	// "gateway" may reach through the gateway (its tokens' network caveat).
	ModelHosts []string
	// Escrow names the destructive operations that need a human's
	// approval; the zero value escrows `git push`.
	Escrow EscrowPolicy
	// Ask, if set, is how the run's root asks a human about an escrow
	// request (a terminal prompt); nil leaves requests pending in the
	// queue under .apiary/escrow for `apiary escrow approve` or the
	// dashboard. It runs in its own goroutine and must return when ctx ends.
	Ask func(ctx context.Context, req EscrowRequest) (approve bool, err error)
	// ApiaryBin is an apiary executable agents can run (the git pre-push
	// hook that enforces escrow calls it); "" installs no hook.
	ApiaryBin string
	// ReapInterval is how often the reaper sweeps what dead runs left
	// behind (it also sweeps once at start); 0 means 10 minutes, negative
	// only at start. ReapGrace is the least age of what it removes; 0
	// means 1 minute.
	ReapInterval time.Duration
	ReapGrace    time.Duration
	// ProcessGroups contains attempts and checks in marked process groups
	// even where a cgroup v2 per scope is available (see package proc).
	ProcessGroups bool
	// MaxParallelChecks bounds the integrations whose checks run at once
	// (candidates whose changes are independent of one another's); 0 means
	// the run's max_parallel.
	MaxParallelChecks int
	// HedgeAfter is the run's default hedge: a plan task with no hedge and
	// no quorum of its own gets a second attempt when its first is still
	// running after this long; 0 means none. A resume keeps the value the
	// run started with unless it sets its own.
	HedgeAfter time.Duration
	// WorktreePool is how attempts get their worktrees: from a pool the
	// run keeps, by default.
	WorktreePool PoolConfig

	// AgentPath, if set, is the PATH agents get (with apiary's own
	// directory in front, so that an agent can run `apiary spawn`).
	AgentPath string

	// beforeRefUpdate, in tests, runs when a candidate's checks have
	// passed, before the integration takes integMu to move the ref.
	beforeRefUpdate func(task string)
}

// PoolConfig configures the run's pool of worktrees. Each attempt borrows
// one, moved to its base by rewriting only the files that differ, and
// gives it back, restored, when it ends (see git.WorktreePool); a worktree
// the pool cannot restore is removed. The zero value pools with sensible
// defaults.
type PoolConfig struct {
	// Off gives every attempt a worktree of its own (git worktree add and
	// remove), as a run without a pool does.
	Off bool
	// Size is how many idle worktrees the run keeps; 0 means the run's
	// max_parallel. Beyond it the least recently used is removed.
	Size int
	// MaxIdle removes a worktree idle longer than this; 0 keeps idle ones
	// until the run ends.
	MaxIdle time.Duration
	// Sparse checks out only the directories a task's inputs and write
	// scope name, for tasks that list their inputs and whose lists do not
	// cover the whole tree (see attempt.SparseCone); the agent then sees
	// only those directories and the files at the top.
	Sparse bool
}

// NewRun describes a run to start.
type NewRun struct {
	// ID is the run id; "" generates one (see NewRunID).
	ID string
	// PlanFile names the plan in messages; PlanData is its content, stored
	// in the run directory. Both are empty in planner mode.
	PlanFile string
	PlanData []byte
	// Agents are profiles the plan's tasks may name besides the built-ins
	// and its own agents: (planner mode adds the worker profile here).
	Agents map[string]plan.Agent
	// Goal, Planner and Worker select planner mode: the Planner profile
	// writes a plan for Goal, whose tasks run with the Worker profile.
	Goal    string
	Planner string
	Worker  string
	// ModelURL, NoGateway and Dash are the front end's settings, recorded
	// in run.json (with Config.AgentBin) for a resume to reuse.
	ModelURL  string
	NoGateway bool
	Dash      string
}

// recordOptions are the settings of a new run that run.json keeps.
func (s *settings) recordOptions(nr NewRun) rundir.Options {
	return rundir.Options{MaxParallel: s.MaxParallel, MaxAttempts: s.MaxAttempts, MaxDepth: s.MaxDepth,
		ReconcileAgent: s.ReconcileAgent, ReconcileBudget: s.ReconcileBudget, Agents: nr.Agents,
		Planner: nr.Planner, Worker: nr.Worker, ModelURL: nr.ModelURL, NoGateway: nr.NoGateway, AgentBin: s.AgentBin, Dash: nr.Dash,
		HedgeAfterS: s.HedgeAfter.Seconds()}
}

// settings are a Config with its defaults applied.
type settings struct {
	Config
	now func() time.Time
	rnd io.Reader
	log *slog.Logger
}

func (c Config) resolve() (*settings, error) {
	// Before anything is written: a run here could not stop its agents'
	// processes (Windows), so it does not begin.
	if err := proc.Supported(); err != nil {
		return nil, err
	}
	if c.Repo == nil {
		return nil, fmt.Errorf("%w: Repo is required", ErrConfig)
	}
	s := &settings{Config: c, now: c.Now, rnd: c.Rand, log: c.Logger}
	if s.now == nil {
		s.now = time.Now
	}
	if s.rnd == nil {
		s.rnd = rand.Reader
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.MaxAttempts <= 0 {
		s.MaxAttempts = 3
	}
	if s.MaxDepth <= 0 {
		s.MaxDepth = 2
	}
	if s.MaxCASRetries <= 0 {
		s.MaxCASRetries = 20
	}
	if s.MaxParallel < 0 {
		return nil, fmt.Errorf("%w: MaxParallel %d", ErrConfig, s.MaxParallel)
	}
	if s.SpawnAlpha == 0 {
		s.SpawnAlpha = 0.5
	}
	if !(s.SpawnAlpha > 0 && s.SpawnAlpha <= 1) {
		return nil, fmt.Errorf("%w: SpawnAlpha %g not in (0, 1]", ErrConfig, s.SpawnAlpha)
	}
	if s.SpawnWindow <= 0 {
		s.SpawnWindow = 4
	}
	if s.HeartbeatInterval <= 0 {
		s.HeartbeatInterval = 5 * time.Second
	}
	if s.ReapInterval == 0 {
		s.ReapInterval = 10 * time.Minute
	}
	if s.ReapGrace <= 0 {
		s.ReapGrace = time.Minute
	}
	if s.WorktreePool.Size < 0 || s.WorktreePool.MaxIdle < 0 {
		return nil, fmt.Errorf("%w: WorktreePool size %d, max idle %s", ErrConfig, s.WorktreePool.Size, s.WorktreePool.MaxIdle)
	}
	if s.Escrow.Commands == nil && s.Escrow.Tools == nil {
		s.Escrow.Commands = []string{"git push"}
	}
	return s, nil
}

// profile turns a plan's agent profile into the agent package's.
func (s *settings) profile(name string, a plan.Agent) agent.Profile {
	var p agent.Profile
	if a.Builtin {
		p, _ = agent.Builtin(name)
	} else {
		p = agent.Profile{Name: name, Kind: a.Kind, Argv: a.Argv, Model: a.Model, Args: a.Args, Env: a.Env, Tools: a.Tools, MaxTurns: a.MaxTurns}
	}
	if bin := s.AgentBin[p.Kind]; bin != "" && p.Kind != agent.KindCommand {
		p.Bin = bin
	}
	return p
}

// reconcileBudget derives a reconciliation's budget from the task's.
func (s *settings) reconcileBudget(task envelope.Budget) envelope.Budget {
	b := s.ReconcileBudget
	if b.InputTokens == 0 {
		b.InputTokens = task.InputTokens / 2
	}
	if b.OutputTokens == 0 {
		b.OutputTokens = task.OutputTokens / 2
	}
	if b.ToolCalls == 0 {
		b.ToolCalls = task.ToolCalls / 2
	}
	if b.USD == 0 {
		b.USD = task.USD / 2
	}
	if b.WallClockS == 0 {
		b.WallClockS = task.WallClockS / 2
		if b.WallClockS == 0 {
			b.WallClockS = 900
		}
	}
	return b
}
