package runs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/apiary-dev/apiary/internal/git"
	"github.com/apiary-dev/apiary/internal/rundir"
	"github.com/apiary-dev/apiary/internal/supervise"
)

// ReapOptions configure Reap.
type ReapOptions struct {
	// DryRun lists what would be removed and removes nothing.
	DryRun bool
	// Grace is the least age of what is removed; 0 means 1 minute.
	Grace time.Duration
	// Skip is a run id never touched (the caller's own live run).
	Skip string
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	// Logger gets one line per removal; every removal is also appended to
	// .apiary/reaper.log.
	Logger *slog.Logger
}

// Reap removes what apiary's own records say it created for runs whose
// process is gone (no process holds the run's lock): agent process groups
// still alive (checked for the run's APIARY_RUN_ID, so a reused pid is
// never touched), worktrees still registered, attempt branches of tasks
// that did not fail (a failed task's branch is kept to look at) and
// control sockets — after a grace period, and nothing else: nothing that
// is not in a run's events is looked at. It returns what it did.
func Reap(ctx context.Context, repo *git.Repo, o ReapOptions) (supervise.ReapReport, error) {
	root, err := repo.TopLevel(ctx)
	if err != nil {
		return supervise.ReapReport{}, err
	}
	repo = repo.At(root)
	now := o.Now
	if now == nil {
		now = time.Now
	}
	if o.Grace <= 0 {
		o.Grace = time.Minute
	}
	ids, err := rundir.List(root)
	if err != nil {
		return supervise.ReapReport{}, err
	}
	var items []supervise.Item
	for _, id := range ids {
		if id == o.Skip || rundir.Open(root, id).Active() {
			continue
		}
		its, err := ownedItems(root, id)
		if err != nil {
			return supervise.ReapReport{}, err
		}
		items = append(items, its...)
	}
	logf, _ := os.OpenFile(rundir.State(root, "reaper.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if logf != nil {
		defer logf.Close()
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return supervise.Reap(ctx, items, &reaper{repo: repo, root: root, lock: rundir.NewWorktreeLock(root)}, supervise.ReapOptions{
		Alive:  func(owner string) bool { return owner == o.Skip || rundir.Open(root, owner).Active() },
		Grace:  o.Grace,
		DryRun: o.DryRun,
		Now:    now,
		Log: func(rm supervise.Removal) {
			line := map[string]any{"time": now().UTC(), "kind": rm.Item.Kind, "id": rm.Item.ID, "run": rm.Item.Owner, "dry_run": rm.DryRun}
			if rm.Err != nil {
				line["error"] = rm.Err.Error()
			}
			if logf != nil && !rm.DryRun {
				b, _ := json.Marshal(line)
				_, _ = logf.Write(append(b, '\n'))
			}
			log.Info("reaper", "kind", string(rm.Item.Kind), "id", rm.Item.ID, "run", rm.Item.Owner, "dry_run", rm.DryRun, "err", rm.Err)
		},
	})
}

// ownedItems reads what run id's events say it created and did not clean
// up.
func ownedItems(root, id string) ([]supervise.Item, error) {
	evs, _, err := rundir.Open(root, id).Events()
	if err != nil {
		return nil, err
	}
	removed := map[string]bool{}
	finished := map[string]bool{} // task/attempt
	failed := map[string]bool{}
	deleted := map[string]bool{}
	for _, ev := range evs {
		switch ev.Kind {
		case rundir.EvWorktreeRemoved:
			removed[ev.Path] = true
		case rundir.EvAttemptFinished:
			finished[ev.Task+"/"+strconv.Itoa(ev.Attempt)+"/"+ev.Role] = true
		case rundir.EvTaskDone:
			failed[ev.Task] = ev.Status == "failed"
		case rundir.EvBranchDeleted:
			deleted[ev.Branch] = true
		}
	}
	var out []supervise.Item
	seen := map[string]bool{}
	add := func(it supervise.Item) {
		k := string(it.Kind) + "\x00" + it.ID
		if !seen[k] {
			seen[k] = true
			out = append(out, it)
		}
	}
	for _, ev := range evs {
		switch ev.Kind {
		case rundir.EvWorktree:
			if !removed[ev.Path] {
				add(supervise.Item{Kind: supervise.KindWorktree, ID: ev.Path, Owner: id, Created: ev.Time})
			}
			if ev.Branch != "" && !deleted[ev.Branch] && !failed[ev.Task] {
				add(supervise.Item{Kind: supervise.KindBranch, ID: ev.Branch, Owner: id, Created: ev.Time})
			}
		case rundir.EvAgentStarted:
			if !finished[ev.Task+"/"+strconv.Itoa(ev.Attempt)+"/"+ev.Role] && ev.Pid > 0 {
				add(supervise.Item{Kind: supervise.KindProcess, ID: strconv.Itoa(ev.Pid), Owner: id, Created: ev.Time})
			}
		}
	}
	if p := ControlPath(root, id); p != "" {
		if fi, err := os.Stat(p); err == nil && fi.Mode()&fs.ModeSocket != 0 {
			add(supervise.Item{Kind: supervise.KindSocket, ID: p, Owner: id, Created: fi.ModTime()})
		}
	}
	return out, nil
}

// reaper is supervise.Remover for a repository.
type reaper struct {
	repo *git.Repo
	root string
	lock *rundir.WorktreeLock
}

func (rp *reaper) Exists(ctx context.Context, it supervise.Item) (bool, error) {
	switch it.Kind {
	case supervise.KindProcess:
		pid, err := strconv.Atoi(it.ID)
		return err == nil && pid > 1 && ownedBy(pid, it.Owner), nil
	case supervise.KindWorktree:
		if !strings.HasPrefix(it.ID, filepath.Join(rp.root, rundir.StateDir, "worktrees")+string(filepath.Separator)) {
			return false, nil // not where apiary puts worktrees: never ours
		}
		wts, err := rp.repo.Worktrees(ctx)
		if err != nil {
			return false, err
		}
		for _, w := range wts {
			if filepath.Clean(w.Path) == filepath.Clean(it.ID) {
				return true, nil
			}
		}
		return false, nil
	case supervise.KindBranch:
		if !strings.HasPrefix(it.ID, "apiary/"+it.Owner+"/") {
			return false, nil
		}
		return rp.repo.BranchExists(ctx, it.ID)
	case supervise.KindSocket:
		fi, err := os.Lstat(it.ID)
		return err == nil && fi.Mode()&fs.ModeSocket != 0, nil
	}
	return false, fmt.Errorf("unknown kind %q", it.Kind)
}

func (rp *reaper) Remove(ctx context.Context, it supervise.Item) error {
	switch it.Kind {
	case supervise.KindProcess:
		pid, _ := strconv.Atoi(it.ID)
		err := syscall.Kill(-pid, syscall.SIGKILL)
		if errors.Is(err, syscall.ESRCH) {
			err = syscall.Kill(pid, syscall.SIGKILL)
		}
		if errors.Is(err, syscall.ESRCH) {
			return nil
		}
		return err
	case supervise.KindWorktree:
		err := rp.lock.Do(func() error { return rp.repo.WorktreeRemove(ctx, it.ID) })
		os.RemoveAll(it.ID + ".home")
		return err
	case supervise.KindBranch:
		return rp.lock.Do(func() error { return rp.repo.DeleteBranch(ctx, it.ID) })
	case supervise.KindSocket:
		return os.Remove(it.ID)
	}
	return fmt.Errorf("unknown kind %q", it.Kind)
}

// reapOthers is the runner's periodic sweep of dead runs.
func (r *runner) reapOthers(ctx context.Context) error {
	_, err := Reap(ctx, r.repo, ReapOptions{Grace: r.s.ReapGrace, Skip: r.rec.RunID, Now: r.s.now, Logger: r.s.log})
	return err
}
