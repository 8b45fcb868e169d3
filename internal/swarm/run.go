package swarm

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/apiary-dev/apiary/internal/board"
	"github.com/apiary-dev/apiary/internal/git"
	"github.com/apiary-dev/apiary/internal/proc"
	"github.com/apiary-dev/apiary/internal/rundir"
	"github.com/apiary-dev/apiary/internal/swarm/layout"
)

// RunConfig is a swarm run to publish and see through: what Publish
// takes, and how this process takes part.
type RunConfig struct {
	PublishConfig
	// NoMerge: this process does not stand for the merge role and the
	// shard gatekeepers (another `apiary worker` host does). With it, the
	// run only finishes when some host integrates the work.
	NoMerge bool
	// Host names this process on the board ("" is run-HOSTNAME-PID).
	Host string
	// Published, if set, sees the run's record once it is on the board,
	// before any task runs.
	Published func(*layout.Record)
	// OnTask, if set, sees every change of a task's status.
	OnTask func(board.Task)
	Logger *slog.Logger
}

// Run publishes a plan as a swarm run, serves the merge role for it
// (unless NoMerge) while workers claim its tasks, waits until every task
// has ended and returns the run's record and report. When the run's
// remote is the repository itself and its checkout has the integration
// branch out, the checkout is brought up to the integrated head. When ctx
// ends first, the report so far is returned with ctx's error and the run
// stays active on the board.
func Run(ctx context.Context, cfg RunConfig) (*layout.Record, *Report, error) {
	if !cfg.NoMerge {
		// The merge role runs checks: refuse before publishing a run that
		// no host here could merge (see RunHost).
		if err := proc.Supported(); err != nil {
			return nil, nil, err
		}
	}
	r, err := Publish(ctx, cfg.PublishConfig)
	if err != nil {
		return nil, nil, err
	}
	if cfg.Published != nil {
		cfg.Published(r)
	}
	root, err := cfg.Repo.TopLevel(ctx)
	if err != nil {
		return r, nil, err
	}
	hctx, cancel := context.WithCancel(ctx)
	defer cancel()
	hostErr := make(chan error, 1)
	if cfg.NoMerge {
		close(hostErr)
	} else {
		host := cfg.Host
		if host == "" {
			name, _ := os.Hostname()
			host = fmt.Sprintf("run-%s-%d", name, os.Getpid())
		}
		go func() {
			hostErr <- RunHost(hctx, HostConfig{Store: cfg.Store, Host: host, Run: r.Run, Logger: cfg.Logger,
				Merge: &MergeConfig{Dir: rundir.State(root, "swarm")}})
		}()
	}
	rep, err := WaitRun(ctx, cfg.Store, r.Run, cfg.OnTask)
	cancel()
	if herr := <-hostErr; herr != nil && err == nil && ctx.Err() == nil {
		err = herr
	}
	if err == nil && rep != nil && filepath.Clean(r.Remote) == filepath.Clean(root) {
		err = syncCheckout(ctx, cfg.Repo.At(root), r.IntegrationBranch)
	}
	return r, rep, err
}

// syncCheckout brings the main checkout's files along when it has the
// integration branch checked out (the merge role moved it by update-ref),
// under the repository's worktree lock.
func syncCheckout(ctx context.Context, repo *git.Repo, branch string) error {
	if b, err := repo.CurrentBranch(ctx); err != nil || b != branch {
		return nil
	}
	return rundir.NewWorktreeLock(repo.Dir()).Do(func() error {
		head, err := repo.RevParse(ctx, "refs/heads/"+branch)
		if err != nil {
			return err
		}
		if err := repo.SyncWorktree(ctx, head); err != nil {
			return fmt.Errorf("the checkout of %s could not be brought to %s: %w", branch, head, err)
		}
		return nil
	})
}
