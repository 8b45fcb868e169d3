package eval

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/apiary-dev/apiary/internal/attempt"
	"github.com/apiary-dev/apiary/internal/gate"
	"github.com/apiary-dev/apiary/internal/git"
	"github.com/apiary-dev/apiary/internal/rundir"
	"github.com/apiary-dev/apiary/internal/runs"
)

// Local is the Runtime of apiary itself: git plumbing, the runtime
// (package runs) and the gates' check runner, on this machine.
type Local struct {
	// AgentBin maps an agent kind to its executable (see runs.Config).
	AgentBin map[string]string
	// Writes, if set, gives the agents of a run in dir their MCP write
	// surface.
	Writes func(dir string) (attempt.WriteSurface, error)
}

var _ Runtime = (*Local)(nil)

func (r *Local) InitRepo(ctx context.Context, dir string) error {
	cmd := exec.CommandContext(ctx, "git", "init", "--quiet", "--initial-branch=main", dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("git init: %v: %s", err, out)
	}
	sig := git.Signature{Name: "apiary eval", Email: "eval@apiary.invalid"}
	_, err := git.New(dir, git.Options{}).CommitAll(ctx, git.CommitOptions{Message: "the task set's base\n", Author: sig})
	return err
}

func (r *Local) Run(ctx context.Context, dir string, planData []byte, models attempt.ModelAccess) (*runs.Report, error) {
	cfg := runs.Config{Repo: git.New(dir, git.Options{}), Models: models, AgentBin: r.AgentBin, ReconcileAgent: "agent"}
	if r.Writes != nil {
		ws, err := r.Writes(dir)
		if err != nil {
			return nil, err
		}
		cfg.Writes = ws
	}
	id, err := rundir.NewID(time.Now(), rand.Reader)
	if err != nil {
		return nil, err
	}
	return runs.Start(ctx, cfg, runs.NewRun{ID: id, PlanFile: "plan.json", PlanData: planData})
}

func (r *Local) Export(ctx context.Context, dir, rev, dst string) error {
	repo := git.New(dir, git.Options{})
	tmp, err := os.MkdirTemp(filepath.Dir(dst), ".export-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	wt := filepath.Join(tmp, "tree")
	if err := repo.WorktreeAddDetached(ctx, wt, rev); err != nil {
		return err
	}
	defer repo.WorktreeRemove(context.WithoutCancel(ctx), wt)
	return copyDir(wt, dst)
}

func (r *Local) Check(ctx context.Context, c Check) (CheckResult, error) {
	res, err := gate.RunCheck(ctx, gate.CheckCommand{Command: c.Command, Dir: c.Dir, Log: c.Log, Timeout: c.Timeout})
	return CheckResult{Exit: res.Exit, TimedOut: res.TimedOut, Seconds: res.Duration}, err
}

// copyDir copies a worktree's files (not its .git file) into dst.
func copyDir(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if rel == ".git" {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case d.Type()&os.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(link, target)
		case d.Type().IsRegular():
			info, err := d.Info()
			if err != nil {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(target, b, info.Mode().Perm())
		}
		return nil
	})
}
