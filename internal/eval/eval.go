package eval

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/apiary-dev/apiary/internal/attempt"
	"github.com/apiary-dev/apiary/internal/plan"
	"github.com/apiary-dev/apiary/internal/rundir"
	"github.com/apiary-dev/apiary/internal/runs"
)

// Arm is one of the two runs of an evaluation.
type Arm string

const (
	// Single: one agent is given every task (one plan task) and the
	// whole budget.
	Single Arm = "single"
	// Swarm: one agent per task, dependencies as the task set declares
	// them, all drawing on the same budget.
	Swarm Arm = "swarm"
)

// Runtime is what an evaluation needs of git and of apiary's runtime. The
// CLI implements it with internal/git, internal/runs and internal/gate
// (Local); it must be safe to call from one goroutine at a time.
type Runtime interface {
	// InitRepo makes dir, which holds the base files, a git repository on
	// branch main with those files committed.
	InitRepo(ctx context.Context, dir string) error
	// Run runs plan (YAML or JSON) in the repository at dir, its agents
	// reaching the models through models (nil: their own configuration),
	// and returns the run's report; a run whose tasks fail is not an error.
	Run(ctx context.Context, dir string, plan []byte, models attempt.ModelAccess) (*runs.Report, error)
	// Export writes the tree of revision rev of the repository at dir into
	// the new directory dst.
	Export(ctx context.Context, dir, rev, dst string) error
	// Check runs one check command as apiary's gates run them (sh -c, in
	// its own process group, killed with it at the timeout), with output
	// to c.Log. A failing command is a result, not an error.
	Check(ctx context.Context, c Check) (CheckResult, error)
}

// Check is one check command to run.
type Check struct {
	Command string
	Dir     string
	Log     string
	Timeout time.Duration
}

// CheckResult is how a check ended.
type CheckResult struct {
	Exit     int     `json:"exit"`
	TimedOut bool    `json:"timed_out,omitempty"`
	Seconds  float64 `json:"seconds"`
}

// Budget is the one hard budget of an arm: everything its attempts send to
// the models (workers, reconcilers, retries) draws on it, and the gateway
// refuses, before sending, a request that could take the arm past it. A
// zero limit is none.
type Budget struct {
	USD    float64 `json:"usd"`
	Tokens int64   `json:"tokens"`
}

// Gateway is the metering gateway both arms' model requests go through.
// Open starts metering arm under b and returns its Meter; the CLI
// implements it with internal/gateway (one gateway per arm, its ledger
// kept with the arm's repository).
type Gateway interface {
	Open(ctx context.Context, arm Arm, b Budget) (Meter, error)
}

// Meter is one arm's side of the gateway.
type Meter interface {
	// Access is the model access of the arm's attempts: a key per attempt,
	// all of them bound by the arm's budget.
	Access() attempt.ModelAccess
	// Spend is what the gateway metered for the arm. It is called once,
	// when the arm's run has ended: the gateway takes no request after
	// it, and counts every one it took.
	Spend(ctx context.Context) (Spend, error)
	// Close stops the arm's gateway; Spend is not called after it. It
	// may be called more than once.
	Close() error
}

// Spend is an arm's model traffic as the gateway's ledger holds it.
type Spend struct {
	// Requests reached the model; Refused were refused before sending
	// because they could have exceeded the budget.
	Requests     int     `json:"requests"`
	Refused      int     `json:"refused"`
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	USD          float64 `json:"usd"`
	// Models are the models the requests named; Unpriced those of them the
	// gateway has no price for (their cost is a stand-in, not known).
	Models   []string `json:"models"`
	Unpriced []string `json:"unpriced_models,omitempty"`
}

// Options configure an evaluation.
type Options struct {
	// Budget is each arm's one hard budget; USD is required.
	Budget Budget
	// Agent is the profile of every agent of both arms (workers, the
	// single agent and reconcilers); Agent.Env gets APIARY_EVAL_ARM.
	Agent plan.Agent
	// AgentName says which agents these are in the report (e.g.
	// "scripted-claude"); "" is the profile's kind.
	AgentName string
	// MaxParallel bounds the swarm's agents at once; 0 is the task set's
	// swarm.max_parallel, else one per task.
	MaxParallel int
	// Runtime runs and judges; required.
	Runtime Runtime
	// Gateway meters and bounds both arms' model requests; nil runs them
	// unmetered, and then cost and tokens are not known ("n/a").
	Gateway Gateway
	// Scripted says the agents are the task set's scripted agents; the
	// report then states their turn time, which decides their time axis.
	Scripted bool
	// Seed, if set, is the seed of the model the agents talk to (a
	// scripted one); it is reported with the other inputs.
	Seed *uint64
	// WorkDir is where the repositories and check scratch trees are made;
	// it must exist. Required.
	WorkDir string
	// Progress, if set, receives one line per step.
	Progress io.Writer
}

// ErrOptions is matched by errors about Options.
var ErrOptions = errors.New("eval: invalid options")

// Run evaluates ts: the single arm, then the swarm arm, then the verdict.
func Run(ctx context.Context, ts *TaskSet, o Options) (*Result, error) {
	switch {
	case o.Runtime == nil || o.WorkDir == "":
		return nil, fmt.Errorf("%w: Runtime and WorkDir are required", ErrOptions)
	case !(o.Budget.USD > 0 && o.Budget.USD <= 1e6) || o.Budget.Tokens < 0:
		return nil, fmt.Errorf("%w: the budget must be in (0, 1e6] USD and a non-negative number of tokens, got $%g and %d tokens", ErrOptions, o.Budget.USD, o.Budget.Tokens)
	case o.MaxParallel < 0 || o.Agent.Kind == "":
		return nil, fmt.Errorf("%w: an agent profile and a non-negative max parallel are required", ErrOptions)
	}
	in, err := inputsOf(ts, o)
	if err != nil {
		return nil, err
	}
	res := &Result{TaskSet: ts.Name, Tasks: len(ts.Tasks), Inputs: *in}
	for _, arm := range []Arm{Single, Swarm} {
		ar, err := runArm(ctx, ts, o, arm)
		if err != nil {
			return nil, fmt.Errorf("eval: %s run: %w", arm, err)
		}
		if arm == Single {
			res.Single = *ar
		} else {
			res.Swarm = *ar
		}
	}
	res.finish()
	return res, nil
}

func (o *Options) progress(format string, args ...any) {
	if o.Progress != nil {
		fmt.Fprintf(o.Progress, format+"\n", args...)
	}
}

// runArm builds a fresh repository, runs the arm's plan behind its meter,
// and grades the arm's work.
func runArm(ctx context.Context, ts *TaskSet, o Options, arm Arm) (*ArmResult, error) {
	base := filepath.Join(o.WorkDir, string(arm))
	repo := filepath.Join(base, "repo")
	if err := copyTree(ts.Repo, repo); err != nil {
		return nil, err
	}
	if err := o.Runtime.InitRepo(ctx, repo); err != nil {
		return nil, err
	}
	planData, err := BuildPlan(ts, arm, o)
	if err != nil {
		return nil, err
	}
	var meter Meter
	var access attempt.ModelAccess
	if o.Gateway != nil {
		if meter, err = o.Gateway.Open(ctx, arm, o.Budget); err != nil {
			return nil, err
		}
		defer meter.Close()
		access = meter.Access()
	}
	o.progress("eval: %s: running %d task(s) in %s", arm, len(ts.Tasks), repo)
	// The time axis runs on the clock the run's events are stamped with.
	start := time.Now()
	rep, err := o.Runtime.Run(ctx, repo, planData, access)
	if err != nil {
		return nil, err
	}
	ar := &ArmResult{Arm: arm, RunID: rep.RunID, Status: rep.Status, Attempted: len(ts.Tasks),
		CriticalPathS: rep.Achieved.Seconds, WallS: rep.WallS, Repo: repo, Metered: meter != nil}
	if meter != nil {
		sp, err := meter.Spend(ctx)
		if err != nil {
			return nil, err
		}
		if err := meter.Close(); err != nil {
			return nil, fmt.Errorf("the %s arm's gateway: %w", arm, err)
		}
		ar.setSpend(sp)
	}
	evs, _, err := rundir.Open(repo, rep.RunID).Events()
	if err != nil {
		return nil, err
	}
	ar.timeAndMessages(start, evs, len(ts.Tasks))
	if err := grade(ctx, ts, o, arm, rep, evs, base, ar); err != nil {
		return nil, err
	}
	return ar, nil
}

// copyTree copies the directories, regular files (with their modes) and
// symbolic links under src into dst, creating it.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		if rel == ".git" && d.IsDir() {
			return filepath.SkipDir
		}
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case d.Type()&os.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			os.Remove(target)
			return os.Symlink(link, target)
		case d.Type().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(target, b, info.Mode().Perm()|0o200)
		}
		return nil // sockets, devices: not part of a tree
	})
}
