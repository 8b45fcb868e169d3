package runview

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/apiary-dev/apiary/internal/attempt"
	"github.com/apiary-dev/apiary/internal/board"
	"github.com/apiary-dev/apiary/internal/dashboard"
	"github.com/apiary-dev/apiary/internal/git"
	"github.com/apiary-dev/apiary/internal/rundir"
	"github.com/apiary-dev/apiary/internal/runs"
)

// The dashboard's sources over the runtime's files, the board and the
// escrow queue. The dashboard imports none of these packages: it declares
// what it reads and this file adapts the real values.

// runFiles is dashboard.RunSource over a repository's .apiary/runs and,
// with a board, the swarm runs on it. The money is the run gateway
// ledger's (see Ledger) when the run had one.
type runFiles struct {
	root   string
	repo   *git.Repo
	board  *board.Store // nil: no claims in task details, no swarm runs
	ledger *Ledger      // nil: usage as the runs recorded it
	escrow *runs.EscrowQueue

	mu    sync.Mutex
	done  map[string]runStamp                // finished runs' summaries, by id
	diffs map[[2]string][]dashboard.FileStat // base..commit → diff stat
}

// runStamp is a finished run's summary and the state of its events file
// when it was read; a changed file (a resume) invalidates it.
type runStamp struct {
	size int64
	mod  time.Time
	sum  dashboard.RunSummary
}

func newRunFiles(root string, st *board.Store, ledger *Ledger) *runFiles {
	return &runFiles{root: root, repo: git.New(root, git.Options{}), board: st, ledger: ledger, escrow: runs.NewEscrowQueue(root, nil),
		done: map[string]runStamp{}, diffs: map[[2]string][]dashboard.FileStat{}}
}

var _ dashboard.RunSource = (*runFiles)(nil)

func (s *runFiles) Runs(ctx context.Context) ([]dashboard.RunSummary, error) {
	ids, err := rundir.List(s.root)
	if err != nil {
		return nil, err
	}
	out := make([]dashboard.RunSummary, 0, len(ids))
	for _, id := range ids {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		fi, _ := os.Stat(rundir.Open(s.root, id).EventsPath())
		s.mu.Lock()
		c, ok := s.done[id]
		s.mu.Unlock()
		if ok && fi != nil && fi.Size() == c.size && fi.ModTime().Equal(c.mod) {
			out = append(out, c.sum)
			continue
		}
		rep, err := runs.LoadReport(s.root, id)
		if err != nil {
			out = append(out, dashboard.RunSummary{ID: id, Status: "unreadable", Mode: dashboard.ModeLocal})
			continue
		}
		r := runView(rep)
		rs, _ := s.spend(ctx, id)
		applySpend(r, rs)
		sum := summaryOf(r)
		if rep.Status != "running" && fi != nil {
			s.mu.Lock()
			s.done[id] = runStamp{size: fi.Size(), mod: fi.ModTime(), sum: sum}
			s.mu.Unlock()
		}
		out = append(out, sum)
	}
	sw, err := s.swarmRuns(ctx)
	if err != nil {
		return nil, err
	}
	out = append(out, sw...)
	slices.SortStableFunc(out, func(a, b dashboard.RunSummary) int { return a.Started.Compare(b.Started) })
	return out, nil
}

// summaryOf is a run's entry in the runs list.
func summaryOf(r *dashboard.Run) dashboard.RunSummary {
	sum := dashboard.RunSummary{ID: r.ID, Status: r.Status, Started: r.Started, Goal: r.Goal, Tasks: r.Totals.Tasks,
		Succeeded: r.Totals.Succeeded, Failed: r.Totals.Failed, USD: r.Totals.Usage.USD, USDKnown: r.Totals.Usage.Known, Mode: r.Mode}
	for _, t := range r.Tasks {
		if t.Status == dashboard.StatusRunning {
			sum.Running++
		}
	}
	return sum
}

// spend reads a run's spend from the ledger (nil without one).
func (s *runFiles) spend(ctx context.Context, run string) (*runSpend, error) {
	if s.ledger == nil {
		return nil, nil
	}
	return s.ledger.spend(ctx, run)
}

// report loads a run's report; an unknown or malformed id is ErrNotFound.
func (s *runFiles) report(id string) (*runs.Report, error) {
	if !rundir.ValidID(id) {
		return nil, fmt.Errorf("%w: run %q", dashboard.ErrNotFound, id)
	}
	rep, err := runs.LoadReport(s.root, id)
	if errors.Is(err, runs.ErrNoRun) {
		return nil, fmt.Errorf("%w: no run %s", dashboard.ErrNotFound, id)
	}
	return rep, err
}

func (s *runFiles) Run(ctx context.Context, id string) (*dashboard.Run, error) {
	rep, err := s.report(id)
	if errors.Is(err, dashboard.ErrNotFound) && s.board != nil {
		if r, serr := s.swarmRun(ctx, id); serr == nil || !errors.Is(serr, dashboard.ErrNotFound) {
			return r, serr
		}
	}
	if err != nil {
		return nil, err
	}
	r := runView(rep)
	d := rundir.Open(s.root, id)
	if rec, err := d.Record(); err == nil {
		if p, err := d.ParsePlan(rec); err == nil && p != nil {
			for _, t := range p.Tasks {
				for _, dep := range t.Deps {
					r.Edges = append(r.Edges, dashboard.Edge{From: dep.Task, To: t.ID, Kind: string(dep.Kind)})
				}
			}
		}
	}
	for _, t := range rep.Tasks {
		if t.Parent != "" {
			r.Edges = append(r.Edges, dashboard.Edge{From: t.Parent, To: t.ID, Kind: dashboard.EdgeSpawn})
		}
	}
	evs, _, err := d.Events()
	if err != nil {
		return nil, err
	}
	spans := taskTimes(evs)
	if r.Status != "running" && len(evs) > 0 {
		r.Finished = evs[len(evs)-1].Time
	}
	waiting := s.waiting(id)
	for i := range r.Tasks {
		t := &r.Tasks[i]
		if sp, ok := spans[t.ID]; ok {
			t.Started, t.Finished = sp[0], sp[1]
		}
		t.Waiting = waiting[t.ID]
		log := ""
		if t.Attempts > 0 {
			log = d.Task(t.ID).LogPath(t.Attempts)
		}
		t.Failure = failureOf(s.root, t.Status, rep.Tasks[i].Gate, t.Reason, log)
	}
	rs, err := s.spend(ctx, id)
	if err != nil {
		return nil, err
	}
	applySpend(r, rs)
	return r, nil
}

// taskTimes is, per task, when its first attempt started and when it
// ended, from the run's events.
func taskTimes(evs []runs.Event) map[string][2]time.Time {
	out := map[string][2]time.Time{}
	for _, ev := range evs {
		sp := out[ev.Task]
		switch ev.Kind {
		case rundir.EvAttemptStarted:
			if sp[0].IsZero() {
				sp[0] = ev.Time
			}
			sp[1] = time.Time{}
		case rundir.EvTaskDone:
			sp[1] = ev.Time
		default:
			continue
		}
		out[ev.Task] = sp
	}
	return out
}

// waiting says, per task of run, which escrow request waits for a person.
func (s *runFiles) waiting(run string) map[string]string {
	out := map[string]string{}
	es, err := s.escrow.List()
	if err != nil {
		return out
	}
	for _, e := range es {
		if e.Run == run && e.State == runs.EscrowPending && out[e.Task] == "" {
			out[e.Task] = "escrow " + e.ID + ": " + e.Operation
		}
	}
	return out
}

// logTail is how much of a log the task view shows.
const logTail = 16 << 10

func (s *runFiles) Task(ctx context.Context, run, task string) (*dashboard.TaskDetail, error) {
	rep, err := s.report(run)
	if errors.Is(err, dashboard.ErrNotFound) && s.board != nil {
		if td, serr := s.swarmTask(ctx, run, task); serr == nil || !errors.Is(serr, dashboard.ErrNotFound) {
			return td, serr
		}
	}
	if err != nil {
		return nil, err
	}
	d := rundir.Open(s.root, run)
	tr, dir := rep.Task(task), d.Task(task)
	if tr == nil && rep.Planner != nil && task == attempt.RolePlanner {
		tr, dir = rep.Planner, d.Planner()
	}
	if tr == nil { // only names the report knows reach the file system
		return nil, fmt.Errorf("%w: task %s of run %s", dashboard.ErrNotFound, task, run)
	}
	td := &dashboard.TaskDetail{Run: run, Task: taskView(*tr)}
	metered := false
	if rs, err := s.spend(ctx, run); err == nil && rs != nil && rs.Metered {
		metered = true
		td.Task.Usage = rs.Tasks[td.Task.ID]
		td.Task.Usage.Known = true
	} else {
		u := &td.Task.Usage
		u.Known = u.InputTokens+u.OutputTokens > 0 || u.USD > 0
	}
	td.Task.Waiting = s.waiting(run)[task]
	agentLog := ""
	if tr.Attempts > 0 {
		agentLog = dir.LogPath(tr.Attempts)
	}
	td.Task.Failure = failureOf(s.root, tr.Status, tr.Gate, tr.Reason, agentLog)
	if raw, e, err := dir.Envelope(); raw != nil && json.Valid(raw) {
		td.Envelope = raw
		if err == nil {
			td.Objective, td.Agent, td.WriteScope, td.LeaseS = e.Objective, e.Agent.Profile, e.Authority.WriteScope, e.LeaseS
			if e.Trace != nil {
				td.Traceparent = e.Trace.Traceparent
			}
		}
	}
	var base, commit string
	if b, err := os.ReadFile(dir.ReceiptPath()); err == nil && json.Valid(b) {
		td.Receipt = b
		if rc, err := dir.Receipt(); err == nil && rc != nil {
			td.Gate = gateView(rc.Gate)
			for i := range rc.GateFailures {
				td.GateFailures = append(td.GateFailures, *gateView(&rc.GateFailures[i]))
			}
			for _, c := range rc.Checks {
				td.Checks = append(td.Checks, dashboard.Check{Command: c.Command, Exit: c.Exit, Duration: c.Duration, TimedOut: c.TimedOut, Log: c.Log})
			}
			td.Fence, td.ChangedPaths, td.Summary = rc.FencingToken, rc.ChangedPaths, rc.Summary
			base, commit = rc.Base, rc.Commit
		}
	}
	evs, _, err := d.Events()
	if err != nil {
		return nil, err
	}
	td.AttemptList = attemptsOf(evs, task)
	for i := range td.AttemptList {
		if a := &td.AttemptList[i]; metered && a.Finished != nil {
			a.Usage.Known = true // the gateway measured it, zero included
		}
	}
	if n := len(td.AttemptList); n > 0 {
		last := td.AttemptList[n-1]
		if td.Fence == 0 {
			td.Fence = last.Fence
		}
		if td.Traceparent == "" {
			td.Traceparent = traceOf(evs, task, last.N)
		}
		if last.Commit != "" { // the attempt's own change, not a merge's
			base, commit = last.Base, last.Commit
		}
		log := dir.LogPath(last.N)
		if last.Role == attempt.RoleReconciler {
			log = dir.ReconcileLogPath(last.N)
		}
		td.Log = readTail(log, logTail)
	}
	if base != "" && commit != "" && base != commit {
		td.DiffStat = s.diffStat(ctx, base, commit)
	}
	if s.board != nil {
		for _, key := range []string{run + "/" + task, task} {
			if c, err := s.board.Holder(ctx, key); err == nil {
				td.Claim = &dashboard.Claim{Task: c.Task, Agent: c.Agent, Score: c.Score, Lease: int64(c.Lease), Token: c.Token}
				break
			}
		}
	}
	return td, nil
}

// attemptsOf lists a task's attempts from the run's events.
func attemptsOf(evs []runs.Event, task string) []dashboard.Attempt {
	var out []dashboard.Attempt
	open := map[string]int{} // role/n → index in out
	for _, ev := range evs {
		if ev.Task != task {
			continue
		}
		key := fmt.Sprintf("%s/%d", ev.Role, ev.Attempt)
		switch ev.Kind {
		case rundir.EvAttemptStarted:
			open[key] = len(out)
			out = append(out, dashboard.Attempt{N: ev.Attempt, Role: ev.Role, Started: ev.Time, Base: ev.Base, Fence: ev.Fence})
		case rundir.EvAttemptFinished:
			i, ok := open[key]
			if !ok {
				continue
			}
			delete(open, key)
			t := ev.Time
			a := &out[i]
			a.Finished, a.Commit, a.Exit, a.Reason = &t, ev.Commit, ev.Exit, ev.Reason
			if ev.Usage != nil {
				a.Usage = recordedUsage(*ev.Usage)
			}
		}
	}
	return out
}

func traceOf(evs []runs.Event, task string, n int) string {
	for i := len(evs) - 1; i >= 0; i-- {
		if ev := evs[i]; ev.Kind == rundir.EvAttemptStarted && ev.Task == task && ev.Attempt == n {
			return ev.Trace
		}
	}
	return ""
}

// readTail returns the last n bytes of a file, nil if it cannot be read.
func readTail(path string, n int64) *dashboard.LogTail {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	lt := &dashboard.LogTail{Name: filepath.Base(path), Size: fi.Size()}
	off := max(fi.Size()-n, 0)
	b, err := io.ReadAll(io.NewSectionReader(f, off, fi.Size()-off))
	if err != nil {
		return nil
	}
	if off > 0 {
		lt.Truncated = true
		if i := strings.IndexByte(string(b), '\n'); i >= 0 && i < len(b)-1 {
			b = b[i+1:] // start at a whole line
		}
	}
	lt.Text = strings.ToValidUTF8(string(b), "\uFFFD")
	return lt
}

// diffStat counts the added and deleted lines of base..commit per file;
// the result is kept, since both commits are immutable.
func (s *runFiles) diffStat(ctx context.Context, base, commit string) []dashboard.FileStat {
	key := [2]string{base, commit}
	s.mu.Lock()
	st, ok := s.diffs[key]
	s.mu.Unlock()
	if ok {
		return st
	}
	patches, err := s.repo.DiffPatch(ctx, base, commit)
	if err != nil {
		return nil
	}
	st = make([]dashboard.FileStat, 0, len(patches))
	for _, p := range patches {
		fs := dashboard.FileStat{Path: p.Path(), Binary: p.Binary}
		for _, l := range p.Lines {
			switch l.Op {
			case '+':
				fs.Added++
			case '-':
				fs.Deleted++
			}
		}
		st = append(st, fs)
	}
	s.mu.Lock()
	if len(s.diffs) > 256 {
		clear(s.diffs)
	}
	s.diffs[key] = st
	s.mu.Unlock()
	return st
}
