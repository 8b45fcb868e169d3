package runs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"time"

	"github.com/apiary-dev/apiary/internal/attempt"
	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/git"
	"github.com/apiary-dev/apiary/internal/plan"
	"github.com/apiary-dev/apiary/internal/rundir"
	"github.com/apiary-dev/apiary/internal/supervise"
)

// Resume continues run id from what is on disk (see the package doc): the
// stored plan, the receipts, the events and the integration branch's
// trailers. Tasks with receipts are not run again; a task whose commit is
// on the branch without a receipt gets its receipt; every other task runs,
// after the worktrees and branches its earlier attempts left behind —
// those the events record, nothing else — are removed. Like Start, it
// refuses where processes cannot be contained (proc.ErrUnsupported).
func Resume(ctx context.Context, cfg Config, id string) (*Report, error) {
	s, err := cfg.resolve()
	if err != nil {
		return nil, err
	}
	if !rundir.ValidID(id) {
		return nil, fmt.Errorf("%w: run id %q", ErrConfig, id)
	}
	root, err := s.Repo.TopLevel(ctx)
	if err != nil {
		return nil, fmt.Errorf("finding the repository: %w", err)
	}
	repo := s.Repo.At(root)
	rec, err := rundir.Open(root, id).Record()
	if err != nil {
		return nil, err
	}
	st := rundir.NewLog(root, id, s.now, s.OnEvent)
	defer st.Close()
	if err := st.Lock(); err != nil {
		return nil, err
	}
	data, err := rundir.Open(root, id).Plan()
	if errors.Is(err, fs.ErrNotExist) && rec.Goal != "" {
		return nil, fmt.Errorf("%w: run %s stopped while planning; start a new run", ErrBadRun, id)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadRun, err)
	}
	if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != rec.PlanSHA256 {
		return nil, fmt.Errorf("%w: %s/plan.yaml does not match run.json", ErrBadRun, id)
	}
	p, err := plan.ParseWith(rec.PlanFile, data, plan.Options{Agents: rec.Options.Agents})
	if err != nil {
		return nil, fmt.Errorf("%w: stored plan: %w", ErrBadRun, err)
	}
	if cfg.MaxAttempts == 0 && rec.Options.MaxAttempts > 0 {
		s.MaxAttempts = rec.Options.MaxAttempts
	}
	if cfg.MaxDepth == 0 && rec.Options.MaxDepth > 0 {
		s.MaxDepth = rec.Options.MaxDepth
	}
	if cfg.HedgeAfter == 0 && rec.Options.HedgeAfterS > 0 {
		s.HedgeAfter = time.Duration(rec.Options.HedgeAfterS * float64(time.Second))
	}
	evs, _, err := rundir.Open(root, id).Events()
	if err != nil {
		return nil, err
	}
	if n := len(evs); n > 0 {
		st.SetSeq(evs[n-1].Seq)
	}
	return launch(ctx, s, st, rec, p, repo, func(r *runner) (int, error) { return r.restore(evs) })
}

// history is what the events say about one task.
type history struct {
	attempts int
	fence    uint64
	usage    envelope.Usage
	base     string
	logs     []string
}

// integration is a task's commit found on the branch's first-parent chain.
type integration struct {
	commit, kind string
	attempt      int
}

// restore rebuilds the run's tasks from disk and returns how many are left.
func (r *runner) restore(evs []Event) (int, error) {
	ctx := r.runCtx
	hist := map[string]*history{}
	h := func(name string) *history {
		if hist[name] == nil {
			hist[name] = &history{}
		}
		return hist[name]
	}
	var last uint64
	for _, ev := range evs {
		last = max(last, ev.Fence)
		switch ev.Kind {
		case rundir.EvAttemptStarted:
			x := h(ev.Task)
			if ev.Role == attempt.RoleWorker {
				x.attempts = max(x.attempts, ev.Attempt)
				x.base = ev.Base
				x.logs = append(x.logs, rundir.LogName(ev.Attempt))
			} else {
				x.logs = append(x.logs, rundir.ReconcileLogName(ev.Attempt))
			}
			x.fence = max(x.fence, ev.Fence)
		case rundir.EvAttemptFinished:
			if ev.Usage != nil {
				h(ev.Task).usage.Add(*ev.Usage)
			}
		}
	}
	// Fences never repeat across processes: the new leases start above
	// every fence the events recorded.
	r.leases = supervise.NewLeases(r.s.now, last)
	integrated, err := r.integrations(ctx)
	if err != nil {
		return 0, err
	}
	todo := 0
	// Plan tasks, then (breadth-first) the children of succeeded tasks.
	work := []*taskState{}
	bl := r.plan.BottomLevels()
	for _, pt := range r.plan.Tasks {
		work = append(work, r.addTask(pt.ID, r.rec.Tasks[pt.ID], nil, 0, pt.Template(), bl[pt.ID]))
	}
	for len(work) > 0 {
		t := work[0]
		work = work[1:]
		x := h(t.name)
		t.attempts, t.fence, t.usage, t.base, t.logs = x.attempts, x.fence, x.usage, x.base, x.logs
		if err := r.restoreTask(ctx, t, integrated[t.name]); err != nil {
			return 0, err
		}
		if !t.done() {
			todo++
			continue
		}
		if !t.succeeded() {
			continue
		}
		kids, err := loadChildren(r.st.Task(t.name).Dir(), t.receipt)
		if err != nil {
			return 0, fmt.Errorf("%w: children of %s: %w", ErrBadRun, t.name, err)
		}
		for _, k := range kids {
			if r.tasks[k.Name] == nil {
				tmpl := *k
				tmpl.Inputs.Workspace = ""
				work = append(work, r.addTask(k.Name, k.TaskID, t, k.Depth, &tmpl, t.prio))
			}
		}
	}
	r.cleanStale(ctx, evs)
	if err := r.applyRecordedCancels(); err != nil {
		return 0, err
	}
	return todo, nil
}

// integrations reads the run's tasks off the integration branch's
// first-parent chain since the run started.
func (r *runner) integrations(ctx context.Context) (map[string]integration, error) {
	log, err := r.repo.FirstParentLog(ctx, r.rec.StartHead, r.ref)
	if err != nil {
		return nil, err
	}
	out := map[string]integration{}
	for _, e := range log {
		if run, _ := git.TrailerValue(e.Trailers, git.TrailerRun); run != r.rec.RunID {
			continue
		}
		task, ok := git.TrailerValue(e.Trailers, git.TrailerTask)
		if !ok {
			continue
		}
		kind, ok := git.TrailerValue(e.Trailers, attempt.TrailerIntegration)
		if !ok {
			kind = attempt.FastForward
		}
		n, _ := git.TrailerValue(e.Trailers, attempt.TrailerAttempt)
		att, _ := strconv.Atoi(n)
		if _, seen := out[task]; !seen { // newest first: keep the latest
			out[task] = integration{commit: e.ID, kind: kind, attempt: att}
		}
	}
	return out, nil
}

// restoreTask decides whether t is done: it has a receipt whose commit (if
// it succeeded with one) is on the branch, or its commit is on the branch
// and the receipt is written now.
func (r *runner) restoreTask(ctx context.Context, t *taskState, in integration) error {
	td := r.st.Task(t.name)
	rc, err := td.Receipt()
	if err != nil {
		return err
	}
	if rc != nil && rc.Status == envelope.StatusSucceeded && rc.Integrated != nil {
		if ok, err := r.repo.IsAncestor(ctx, rc.Commit, r.ref); err != nil || !ok {
			// The branch no longer holds it (rewritten by someone): run again.
			if err := os.Rename(td.ReceiptPath(), td.OrphanedReceiptPath()); err != nil {
				return err
			}
			rc = nil
		}
	}
	if rc == nil && in.commit != "" {
		rc = r.receiptOf(t, envelope.StatusSucceeded, "")
		rc.Commit, rc.Integrated = in.commit, &in.kind
		rc.Attempt = max(in.attempt, t.attempts)
		rc.Summary = "receipt written on resume from the integration branch's trailers"
		if changes, err := r.repo.DiffNameStatus(ctx, in.commit+"^", in.commit); err == nil {
			rc.ChangedPaths = changedPaths(changes)
		}
		kids, _ := td.Children()
		rc.Artifacts = append(rc.Artifacts, kids...)
		if err := td.WriteReceipt(rc); err != nil {
			return err
		}
		if err := r.st.Emit(Event{Kind: rundir.EvTaskDone, Task: t.name, Attempt: rc.Attempt, Status: string(rc.Status),
			Commit: rc.Commit, Integrated: in.kind, Reason: "receipt restored from the branch"}); err != nil {
			return err
		}
	}
	if rc != nil {
		t.receipt, t.state = rc, stateDone
		t.attempts = max(t.attempts, rc.Attempt)
	}
	return nil
}

// cleanStale removes what earlier attempts left behind, by the run's
// records only: every process a dead process of the run left (the scopes
// its events record, found by cgroup or marker, and anything else carrying
// the run's marker — nothing of this process runs yet), its cgroups, every
// worktree not recorded as removed, and the attempt branches of tasks that
// did not fail.
func (r *runner) cleanStale(ctx context.Context, evs []Event) {
	if n := killStale(ctx, r.rec.RunID, staleOf(evs)); n > 0 {
		r.s.log.Info("killed what the run's earlier process left running", "processes", n)
		_ = r.st.Emit(Event{Kind: rundir.EvProcessesReaped, Tasks: n})
	}
	removed := map[string]bool{}
	for _, ev := range evs {
		if ev.Kind == rundir.EvWorktreeRemoved {
			removed[ev.Path] = true
		}
	}
	for _, ev := range evs {
		if ev.Kind != rundir.EvWorktree {
			continue
		}
		if !removed[ev.Path] {
			if _, err := os.Stat(ev.Path); err == nil {
				r.removeWorktree(ctx, ev.Task, ev.Path)
			}
			os.RemoveAll(ev.Path + ".home")
			removed[ev.Path] = true
		}
		// Branches of tasks not done, and of succeeded ones (their work is
		// on the integration branch); a failed task's is kept to look at.
		if t := r.tasks[ev.Task]; ev.Branch != "" && (t == nil || !t.done() || t.succeeded()) {
			if ok, _ := r.repo.BranchExists(ctx, ev.Branch); ok {
				if err := r.wt.Do(func() error { return r.repo.DeleteBranch(ctx, ev.Branch) }); err == nil {
					_ = r.st.Emit(Event{Kind: rundir.EvBranchDeleted, Task: ev.Task, Branch: ev.Branch})
				}
			}
		}
	}
	_ = r.wt.Do(func() error { return r.repo.WorktreePrune(ctx) })
}
