package runs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/apiary-dev/apiary/internal/git"
	"github.com/apiary-dev/apiary/internal/proc"
	"github.com/apiary-dev/apiary/internal/rundir"
	"github.com/apiary-dev/apiary/internal/supervise"
)

// ReapOptions configure Reap.
type ReapOptions struct {
	// DryRun lists what would be removed and removes nothing.
	DryRun bool
	// Grace is the least age of what is removed; 0 means 1 minute.
	Grace time.Duration
	// KeepFailed is how long a failed task's branches are kept to look
	// at; 0 means 7 days.
	KeepFailed time.Duration
	// Skip is a run id never touched (the caller's own live run).
	Skip string
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	// Logger gets one line per removal; every removal is also appended to
	// .apiary/reaper.log.
	Logger *slog.Logger
}

// DefaultKeepFailed is how long Reap keeps a failed task's branches.
const DefaultKeepFailed = 7 * 24 * time.Hour

// Reap removes what apiary's own records say it created for runs whose
// process is gone (no process holds the run's lock): every process of the
// run still alive — those of the scopes its events record (by their
// cgroup, or by the scope's marker in the process's environment, so that
// a reused pid is never touched, and a daemon that left its process group
// is found too) and any other process carrying the run's marker — and the
// run's cgroups; worktrees still registered and the directories they
// leave; the run's branches (a failed task's once KeepFailed has passed
// since it failed); control sockets; a checkout of the integration branch
// the run moved but did not bring along; and empty directories under
// .apiary/worktrees, of runs not alive, that no record names (see
// emptyDirs). All of it after a grace period, and nothing else: nothing
// that is not in a run's records, or named for the run, is looked at.
// It returns what it did.
//
// A local run pushes nothing: its branches are in this repository only,
// and its record names no remote. The branches a swarm run's workers push
// to its shared remote are swarm's to delete (swarm.ReapRemote, apiary
// reap --board/--remote).
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
	if o.KeepFailed <= 0 {
		o.KeepFailed = DefaultKeepFailed
	}
	ids, err := rundir.List(root)
	if err != nil {
		return supervise.ReapReport{}, err
	}
	rp := &reaper{repo: repo, root: root, lock: rundir.NewWorktreeLock(root), scopes: map[string]proc.Scope{}, starts: map[string]string{},
		emptyOnly: map[string]bool{}}
	alive := func(owner string) bool { return owner == o.Skip || rundir.Open(root, owner).Active() }
	var items []supervise.Item
	for _, id := range ids {
		if alive(id) {
			continue
		}
		its, err := rp.ownedItems(ctx, id, o.KeepFailed)
		if err != nil {
			return supervise.ReapReport{}, err
		}
		items = append(items, its...)
	}
	items = append(items, rp.emptyDirs(items, alive)...)
	logRemoval, closeLog := ReapLog(root, now, o.Logger)
	defer closeLog()
	return supervise.Reap(ctx, items, rp, supervise.ReapOptions{
		Alive:  alive,
		Grace:  o.Grace,
		DryRun: o.DryRun,
		Now:    now,
		Log:    logRemoval,
	})
}

// ReapLog returns the log of a reaper pass in the repository at root:
// every removal goes to logger (nil: nowhere) and, unless it is a dry
// run's, is appended to .apiary/reaper.log as a JSON line. closeLog
// closes the file.
func ReapLog(root string, now func() time.Time, logger *slog.Logger) (log func(supervise.Removal), closeLog func()) {
	if now == nil {
		now = time.Now
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	logf, _ := os.OpenFile(rundir.State(root, "reaper.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	log = func(rm supervise.Removal) {
		line := map[string]any{"time": now().UTC(), "kind": rm.Item.Kind, "id": rm.Item.ID, "run": rm.Item.Owner, "dry_run": rm.DryRun}
		if rm.Err != nil {
			line["error"] = rm.Err.Error()
		}
		if logf != nil && !rm.DryRun {
			b, _ := json.Marshal(line)
			_, _ = logf.Write(append(b, '\n'))
		}
		logger.Info("reaper", "kind", string(rm.Item.Kind), "id", rm.Item.ID, "run", rm.Item.Owner, "dry_run", rm.DryRun, "err", rm.Err)
	}
	return log, func() {
		if logf != nil {
			logf.Close()
		}
	}
}

// runMarker is the ID of the item that stands for every process carrying
// run id's marker.
func runMarker(id string) string { return "run:" + id }

// stale is what the events of run id say its processes made and did not
// clean up.
type stale struct {
	scopes    []proc.Scope
	cgroups   []string
	worktrees []Event // EvWorktree events of worktrees not recorded as removed
	failed    map[string]time.Time
	last      time.Time
}

func staleOf(evs []Event) stale {
	st := stale{failed: map[string]time.Time{}}
	removed := map[string]bool{}
	for _, ev := range evs {
		switch ev.Kind {
		case rundir.EvWorktreeRemoved:
			removed[ev.Path] = true
		case rundir.EvTaskDone:
			if ev.Status == "failed" {
				st.failed[ev.Task] = ev.Time
			} else {
				delete(st.failed, ev.Task)
			}
		}
		if ev.Time.After(st.last) {
			st.last = ev.Time
		}
	}
	seen := map[string]bool{}
	for _, ev := range evs {
		switch ev.Kind {
		case rundir.EvProcessStarted:
			st.scopes = append(st.scopes, proc.Scope{Name: ev.Scope, Marker: ev.Scope, Cgroup: ev.Cgroup, Pgid: ev.Pid, Start: ev.StartTicks, Boot: ev.Boot})
		case rundir.EvRunStarted, rundir.EvRunResumed:
			if ev.Cgroup != "" && !seen[ev.Cgroup] {
				seen[ev.Cgroup] = true
				st.cgroups = append(st.cgroups, ev.Cgroup)
			}
		case rundir.EvWorktree:
			if !removed[ev.Path] && !seen["wt\x00"+ev.Path] {
				seen["wt\x00"+ev.Path] = true
				st.worktrees = append(st.worktrees, ev)
			}
		}
	}
	return st
}

// killStale ends every process a dead process of run left: its recorded
// scopes, whatever else carries its marker, and its cgroups. It returns how
// many processes it killed.
func killStale(ctx context.Context, run string, st stale) int {
	n := 0
	for _, sc := range st.scopes {
		k, _ := proc.Reap(sc)
		n += k
	}
	k, _ := proc.ReapOwner(ctx, run, "APIARY_RUN_ID="+run)
	n += k
	for _, dir := range st.cgroups {
		k, _ := proc.RemoveCgroup(dir)
		n += k
	}
	return n
}

// ownedItems lists what run id left that Reap may remove.
func (rp *reaper) ownedItems(ctx context.Context, id string, keepFailed time.Duration) ([]supervise.Item, error) {
	d := rundir.Open(rp.root, id)
	evs, _, err := d.Events()
	if err != nil {
		return nil, err
	}
	st := staleOf(evs)
	created := st.last
	var out []supervise.Item
	seen := map[string]bool{}
	add := func(it supervise.Item) {
		k := string(it.Kind) + "\x00" + it.ID
		if !seen[k] {
			seen[k] = true
			out = append(out, it)
		}
	}
	for _, sc := range st.scopes {
		if sc.Marker == "" {
			continue
		}
		rp.scopes[sc.Marker] = sc
		add(supervise.Item{Kind: supervise.KindProcess, ID: sc.Marker, Owner: id, Created: created})
		if sc.Cgroup != "" {
			add(supervise.Item{Kind: supervise.KindCgroup, ID: sc.Cgroup, Owner: id, Created: created})
		}
	}
	add(supervise.Item{Kind: supervise.KindProcess, ID: runMarker(id), Owner: id, Created: created})
	for _, dir := range st.cgroups {
		add(supervise.Item{Kind: supervise.KindCgroup, ID: dir, Owner: id, Created: created})
	}
	// The worktree pool: its idle worktrees are in no event.
	add(supervise.Item{Kind: supervise.KindWorktree, ID: poolDir(rp.root, id), Owner: id, Created: created})
	for _, ev := range st.worktrees {
		add(supervise.Item{Kind: supervise.KindWorktree, ID: ev.Path, Owner: id, Created: ev.Time})
		add(supervise.Item{Kind: supervise.KindDirectory, ID: ev.Path, Owner: id, Created: ev.Time})
	}
	for _, ev := range evs {
		if ev.Kind == rundir.EvWorktree {
			add(supervise.Item{Kind: supervise.KindDirectory, ID: ev.Path + ".home", Owner: id, Created: ev.Time})
		}
	}
	add(supervise.Item{Kind: supervise.KindDirectory, ID: rundir.State(rp.root, "worktrees", id), Owner: id, Created: created})
	// Branches: every apiary/RUN/… branch, recorded or not; a failed
	// task's stays for keepFailed.
	branches, err := rp.repo.Branches(ctx, "apiary/"+id+"/")
	if err != nil {
		return nil, err
	}
	for _, b := range branches {
		it := supervise.Item{Kind: supervise.KindBranch, ID: b, Owner: id, Created: created}
		if at, ok := st.failed[branchTask(id, b)]; ok {
			// Kept for keepFailed after the task failed (a record without
			// a time counts from the run's last event, never from zero,
			// which would mean no retention at all).
			if at.IsZero() {
				at = created
			}
			it.Created, it.Keep = at, keepFailed
		}
		add(it)
	}
	if p := ControlPath(rp.root, id); p != "" {
		if fi, err := os.Stat(p); err == nil && fi.Mode()&fs.ModeSocket != 0 {
			add(supervise.Item{Kind: supervise.KindSocket, ID: p, Owner: id, Created: fi.ModTime()})
		}
	}
	if rec, err := d.Record(); err == nil {
		rp.starts[id] = rec.StartHead
		add(supervise.Item{Kind: supervise.KindCheckout, ID: rec.IntegrationBranch, Owner: id, Created: created})
	}
	return out, nil
}

// emptyDirs lists the empty directories under .apiary/worktrees that no
// item in listed names, for owners not alive: a run's directory of
// worktrees (of a run whose records are gone, or a swarm merge role's
// scratch trees) and the empty directories in it (a worktree's, made
// before the event naming it was written). Each counts from its own
// modification time — an empty directory's changes when an entry is added
// or removed, so it has been empty at least that long — and is removed
// only while it is empty, so nothing in it is ever lost.
func (rp *reaper) emptyDirs(listed []supervise.Item, alive func(string) bool) []supervise.Item {
	known := map[string]bool{}
	for _, it := range listed {
		if it.Kind == supervise.KindDirectory || it.Kind == supervise.KindWorktree {
			known[filepath.Clean(it.ID)] = true
		}
	}
	base := filepath.Clean(rundir.WorktreesDir(rp.root))
	owners, err := os.ReadDir(base)
	if err != nil {
		return nil
	}
	var out []supervise.Item
	add := func(path, owner string) {
		fi, err := os.Lstat(path)
		if err != nil || !fi.IsDir() {
			return
		}
		rp.emptyOnly[path] = true
		out = append(out, supervise.Item{Kind: supervise.KindDirectory, ID: path, Owner: owner, Created: fi.ModTime()})
	}
	for _, e := range owners {
		owner := e.Name()
		if !e.IsDir() || !rundir.ValidID(owner) || alive(owner) {
			continue
		}
		dir := filepath.Join(base, owner)
		subs, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, sub := range subs {
			p := filepath.Join(dir, sub.Name())
			if sub.IsDir() && !known[p] && isEmptyDir(p) {
				add(p, owner)
			}
		}
		// After what is in it: it may be empty by then.
		if !known[dir] {
			add(dir, owner)
		}
	}
	return out
}

// isEmptyDir reports whether path is a directory (not a link to one) with
// nothing in it.
func isEmptyDir(path string) bool {
	fi, err := os.Lstat(path)
	if err != nil || !fi.IsDir() {
		return false
	}
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	names, err := f.Readdirnames(1)
	return len(names) == 0 && errors.Is(err, io.EOF)
}

// branchTask is the task an attempt branch apiary/RUN/TASK[.N|.reconcile]
// belongs to.
func branchTask(run, branch string) string {
	t := strings.TrimPrefix(branch, "apiary/"+run+"/")
	if i := strings.IndexByte(t, '.'); i >= 0 {
		t = t[:i]
	}
	return t
}

// reaper is supervise.Remover for a repository.
type reaper struct {
	repo   *git.Repo
	root   string
	lock   *rundir.WorktreeLock
	scopes map[string]proc.Scope // by marker
	starts map[string]string     // run → its start head
	// emptyOnly are directories no record names: removed only while empty.
	emptyOnly map[string]bool
}

func (rp *reaper) worktreesDir() string {
	return rundir.WorktreesDir(rp.root) + string(filepath.Separator)
}

func (rp *reaper) registered(ctx context.Context, path string) (bool, error) {
	wts, err := rp.repo.Worktrees(ctx)
	if err != nil {
		return false, err
	}
	for _, w := range wts {
		if filepath.Clean(w.Path) == filepath.Clean(path) {
			return true, nil
		}
	}
	return false, nil
}

func (rp *reaper) Exists(ctx context.Context, it supervise.Item) (bool, error) {
	switch it.Kind {
	case supervise.KindProcess:
		if run, ok := strings.CutPrefix(it.ID, "run:"); ok {
			return len(proc.OwnerProcesses(run, "", "APIARY_RUN_ID="+run)) > 0, nil
		}
		sc, ok := rp.scopes[it.ID]
		return ok && len(proc.Alive(sc)) > 0, nil
	case supervise.KindCgroup:
		_, err := os.Stat(filepath.Join(it.ID, "cgroup.procs"))
		return err == nil, nil
	case supervise.KindWorktree:
		if !strings.HasPrefix(it.ID, rp.worktreesDir()) {
			return false, nil // not where apiary puts worktrees: never ours
		}
		if isPoolDir(rp.root, it.ID) {
			fi, err := os.Lstat(it.ID)
			return err == nil && fi.IsDir(), nil
		}
		return rp.registered(ctx, it.ID)
	case supervise.KindDirectory:
		if !strings.HasPrefix(it.ID, rp.worktreesDir()) {
			return false, nil
		}
		if rp.emptyOnly[it.ID] {
			return isEmptyDir(it.ID), nil
		}
		fi, err := os.Stat(it.ID)
		if err != nil || !fi.IsDir() {
			return false, nil
		}
		if filepath.Dir(it.ID) == filepath.Clean(rundir.WorktreesDir(rp.root)) {
			ents, err := os.ReadDir(it.ID) // a run's directory of worktrees: only once empty
			return err == nil && len(ents) == 0, nil
		}
		reg, err := rp.registered(ctx, it.ID)
		return err == nil && !reg, err
	case supervise.KindBranch:
		if !strings.HasPrefix(it.ID, "apiary/"+it.Owner+"/") {
			return false, nil
		}
		return rp.repo.BranchExists(ctx, it.ID)
	case supervise.KindSocket:
		fi, err := os.Lstat(it.ID)
		return err == nil && fi.Mode()&fs.ModeSocket != 0, nil
	case supervise.KindCheckout:
		return checkoutBehind(ctx, rp.repo, it.ID, rp.starts[it.Owner])
	}
	return false, fmt.Errorf("unknown kind %q", it.Kind)
}

func (rp *reaper) Remove(ctx context.Context, it supervise.Item) error {
	switch it.Kind {
	case supervise.KindProcess:
		if run, ok := strings.CutPrefix(it.ID, "run:"); ok {
			_, err := proc.ReapOwner(ctx, run, "APIARY_RUN_ID="+run)
			return err
		}
		_, err := proc.Reap(rp.scopes[it.ID])
		return err
	case supervise.KindCgroup:
		_, err := proc.RemoveCgroup(it.ID)
		return err
	case supervise.KindWorktree:
		if isPoolDir(rp.root, it.ID) {
			return removePool(ctx, rp.repo, rp.lock, it.ID)
		}
		return rp.lock.Do(func() error { return rp.repo.WorktreeRemove(ctx, it.ID) })
	case supervise.KindDirectory:
		if rp.emptyOnly[it.ID] || filepath.Dir(it.ID) == filepath.Clean(rundir.WorktreesDir(rp.root)) {
			return os.Remove(it.ID) // only an empty one
		}
		return os.RemoveAll(it.ID)
	case supervise.KindBranch:
		return rp.lock.Do(func() error { return rp.repo.DeleteBranch(ctx, it.ID) })
	case supervise.KindSocket:
		return os.Remove(it.ID)
	case supervise.KindCheckout:
		_, err := bringCheckout(ctx, rp.repo, rp.lock, it.ID, rp.starts[it.Owner], true)
		return err
	}
	return fmt.Errorf("unknown kind %q", it.Kind)
}

// checkoutBehind reports whether the main checkout has branch out with
// its index at one of the branch's commits since start other than its
// head: a run moved the branch and died before bringing the checkout
// along.
func checkoutBehind(ctx context.Context, repo *git.Repo, branch, start string) (bool, error) {
	if start == "" {
		return false, nil
	}
	if b, err := repo.CurrentBranch(ctx); err != nil || b != branch {
		return false, nil
	}
	head, err := repo.RevParse(ctx, "refs/heads/"+branch)
	if err != nil {
		return false, nil
	}
	idx, err := repo.IndexTree(ctx)
	if err != nil {
		return false, err
	}
	if ht, err := repo.TreeOf(ctx, head); err != nil || ht == idx {
		return false, err
	}
	c, exact, err := indexCommit(ctx, repo, idx, start, head)
	return err == nil && exact && c != head, err
}

// reapOthers is the runner's periodic sweep of dead runs.
func (r *runner) reapOthers(ctx context.Context) error {
	_, err := Reap(ctx, r.repo, ReapOptions{Grace: r.s.ReapGrace, Skip: r.rec.RunID, Now: r.s.now, Logger: r.s.log})
	return err
}
