package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/apiary-dev/apiary/internal/attempt"
	"github.com/apiary-dev/apiary/internal/board"
	"github.com/apiary-dev/apiary/internal/dashboard"
	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/git"
	"github.com/apiary-dev/apiary/internal/plan"
	"github.com/apiary-dev/apiary/internal/rundir"
	"github.com/apiary-dev/apiary/internal/runs"
)

// The dashboard's sources over the runtime's files, the board and the
// escrow queue. The dashboard imports none of these packages: it declares
// what it reads and this file adapts the real values.

// runFiles is dashboard.RunSource over a repository's .apiary/runs.
type runFiles struct {
	root  string
	repo  *git.Repo
	board *board.Store // nil: no claims in task details

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

func newRunFiles(root string, st *board.Store) *runFiles {
	return &runFiles{root: root, repo: git.New(root, git.Options{}), board: st,
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
		fi, _ := os.Stat(filepath.Join(rundir.Path(s.root, id), "events.jsonl"))
		s.mu.Lock()
		c, ok := s.done[id]
		s.mu.Unlock()
		if ok && fi != nil && fi.Size() == c.size && fi.ModTime().Equal(c.mod) {
			out = append(out, c.sum)
			continue
		}
		rep, err := runs.LoadReport(s.root, id)
		if err != nil {
			out = append(out, dashboard.RunSummary{ID: id, Status: "unreadable"})
			continue
		}
		sum := dashboard.RunSummary{ID: id, Status: rep.Status, Started: rep.Started, Goal: rep.Goal, Tasks: rep.Totals.Tasks,
			Succeeded: rep.Totals.Succeeded, Failed: rep.Totals.Failed, USD: rep.Totals.Usage.USD}
		for _, t := range rep.Tasks {
			if t.Status == dashboard.StatusRunning {
				sum.Running++
			}
		}
		if rep.Status != "running" && fi != nil {
			s.mu.Lock()
			s.done[id] = runStamp{size: fi.Size(), mod: fi.ModTime(), sum: sum}
			s.mu.Unlock()
		}
		out = append(out, sum)
	}
	return out, nil
}

// report loads a run's report; an unknown or malformed id is ErrNotFound.
func (s *runFiles) report(id string) (*runs.Report, error) {
	if !rundir.ValidID(id) {
		return nil, fmt.Errorf("%w: run %q", dashboard.ErrNotFound, id)
	}
	rep, err := runs.LoadReport(s.root, id)
	if errors.Is(err, runs.ErrNoRun) {
		return nil, fmt.Errorf("%w: %w", dashboard.ErrNotFound, err)
	}
	return rep, err
}

// convert copies v into out through JSON: the dashboard's types mirror the
// runtime's JSON form (`apiary status --json`).
func convert(v, out any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, out)
}

func (s *runFiles) Run(ctx context.Context, id string) (*dashboard.Run, error) {
	rep, err := s.report(id)
	if err != nil {
		return nil, err
	}
	var r dashboard.Run
	if err := convert(rep, &r); err != nil {
		return nil, err
	}
	r.Edges = []dashboard.Edge{}
	if rec, err := rundir.Open(s.root, id).Record(); err == nil {
		if data, err := os.ReadFile(filepath.Join(rundir.Path(s.root, id), "plan.yaml")); err == nil {
			if p, err := plan.ParseWith(rec.PlanFile, data, plan.Options{Agents: rec.Options.Agents}); err == nil {
				for _, t := range p.Tasks {
					for _, d := range t.Deps {
						r.Edges = append(r.Edges, dashboard.Edge{From: d.Task, To: t.ID, Kind: string(d.Kind)})
					}
				}
			}
		}
	}
	for _, t := range rep.Tasks {
		if t.Parent != "" {
			r.Edges = append(r.Edges, dashboard.Edge{From: t.Parent, To: t.ID, Kind: dashboard.EdgeSpawn})
		}
	}
	return &r, nil
}

// logTail is how much of a log the task view shows.
const logTail = 16 << 10

func (s *runFiles) Task(ctx context.Context, run, task string) (*dashboard.TaskDetail, error) {
	rep, err := s.report(run)
	if err != nil {
		return nil, err
	}
	tr := rep.Task(task)
	dir := filepath.Join(rundir.Path(s.root, run), "tasks", task)
	if tr == nil && rep.Planner != nil && task == attempt.RolePlanner {
		tr, dir = rep.Planner, filepath.Join(rundir.Path(s.root, run), "planner")
	}
	if tr == nil { // only names the report knows reach the file system
		return nil, fmt.Errorf("%w: task %s of run %s", dashboard.ErrNotFound, task, run)
	}
	d := &dashboard.TaskDetail{Run: run}
	if err := convert(tr, &d.Task); err != nil {
		return nil, err
	}
	if b, err := os.ReadFile(filepath.Join(dir, "envelope.json")); err == nil && json.Valid(b) {
		d.Envelope = b
		if e, err := envelope.DecodeEnvelope(b); err == nil {
			d.Objective, d.Agent, d.WriteScope, d.LeaseS = e.Objective, e.Agent.Profile, e.Authority.WriteScope, e.LeaseS
			if e.Trace != nil {
				d.Traceparent = e.Trace.Traceparent
			}
		}
	}
	var base, commit string
	if b, err := os.ReadFile(filepath.Join(dir, "receipt.json")); err == nil && json.Valid(b) {
		d.Receipt = b
		if rc, err := envelope.DecodeReceipt(b); err == nil {
			_ = convert(rc.Gate, &d.Gate)
			_ = convert(rc.GateFailures, &d.GateFailures)
			_ = convert(rc.Checks, &d.Checks)
			d.Fence, d.ChangedPaths, d.Summary = rc.FencingToken, rc.ChangedPaths, rc.Summary
			base, commit = rc.Base, rc.Commit
		}
	}
	evs, _, err := rundir.Open(s.root, run).Events()
	if err != nil {
		return nil, err
	}
	d.AttemptList = attemptsOf(evs, task)
	if n := len(d.AttemptList); n > 0 {
		last := d.AttemptList[n-1]
		if d.Fence == 0 {
			d.Fence = last.Fence
		}
		if d.Traceparent == "" {
			d.Traceparent = traceOf(evs, task, last.N)
		}
		if last.Commit != "" { // the attempt's own change, not a merge's
			base, commit = last.Base, last.Commit
		}
		name := fmt.Sprintf("attempt-%d.log", last.N)
		if last.Role == attempt.RoleReconciler {
			name = fmt.Sprintf("reconcile-%d.log", last.N)
		}
		d.Log = readTail(filepath.Join(dir, name), logTail)
	}
	if base != "" && commit != "" && base != commit {
		d.DiffStat = s.diffStat(ctx, base, commit)
	}
	if s.board != nil {
		for _, key := range []string{run + "/" + task, task} {
			if c, err := s.board.Holder(ctx, key); err == nil {
				d.Claim = &dashboard.Claim{Task: c.Task, Agent: c.Agent, Score: c.Score, Lease: int64(c.Lease), Token: c.Token}
				break
			}
		}
	}
	return d, nil
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
				a.Usage = dashboard.Usage{InputTokens: ev.Usage.InputTokens, OutputTokens: ev.Usage.OutputTokens, USD: ev.Usage.USD}
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

// boardView is dashboard.BoardSource and dashboard.HintReviewer over a
// board.
type boardView struct{ st *board.Store }

var (
	_ dashboard.BoardSource  = boardView{}
	_ dashboard.HintReviewer = boardView{}
)

// workerRecord is what a swarm worker publishes under
// swarm/RUN/workers/WORKER.
type workerRecord struct {
	Worker  string    `json:"worker"`
	Host    string    `json:"host"`
	Skills  []string  `json:"skills"`
	Profile string    `json:"profile"`
	Slots   int       `json:"slots"`
	Busy    int       `json:"busy"`
	Updated time.Time `json:"updated"`
}

func (b boardView) Board(ctx context.Context) (dashboard.BoardSnapshot, error) {
	var snap dashboard.BoardSnapshot
	kvs, _, err := b.st.List(ctx, board.PrefixClaims)
	if err != nil {
		return snap, err
	}
	for _, kv := range kvs {
		var c board.Claim
		if json.Unmarshal(kv.Value, &c) == nil {
			snap.Claims = append(snap.Claims, dashboard.Claim{Task: c.Task, Agent: c.Agent, Score: c.Score, Lease: int64(c.Lease), Token: kv.CreateRevision})
		}
	}
	tasks, _, err := b.st.Tasks(ctx)
	if err != nil {
		return snap, err
	}
	for _, t := range tasks {
		snap.Tasks = append(snap.Tasks, dashboard.BoardTask{ID: t.ID, Status: string(t.Status), Worker: t.Worker, Token: t.Token, Attempts: t.Attempts})
	}
	cs, err := b.st.Conflicts(ctx)
	if err != nil {
		return snap, err
	}
	for _, c := range cs {
		snap.Conflicts = append(snap.Conflicts, dashboard.Conflict{ID: c.ID, Type: c.Type, Tasks: c.Tasks, Workers: c.Workers, Files: c.Files, Resolution: c.Resolution})
	}
	hs, err := b.st.Hints(ctx, "")
	if err != nil {
		return snap, err
	}
	for _, h := range hs {
		snap.Hints = append(snap.Hints, dashboard.Hint{Type: h.Type, Resolution: h.Resolution, Conflict: h.Conflict, State: string(h.State), Reviewer: h.Reviewer, Note: h.Note})
	}
	ws, _, err := b.st.List(ctx, "swarm/")
	if err != nil {
		return snap, err
	}
	for _, kv := range ws {
		parts := strings.Split(kv.Key, "/")
		if len(parts) != 4 || parts[2] != "workers" {
			continue
		}
		var w workerRecord
		if json.Unmarshal(kv.Value, &w) == nil && w.Worker != "" {
			id := w.Worker
			if w.Host != "" {
				id += "@" + w.Host
			}
			snap.Workers = append(snap.Workers, dashboard.Worker{ID: id, Skills: w.Skills, Profile: w.Profile, Slots: w.Slots, Busy: w.Busy, LastSeen: w.Updated})
		}
	}
	return snap, nil
}

func (b boardView) review(ctx context.Context, typ string, to board.HintState, reviewer, note string) error {
	_, err := b.st.ReviewHint(ctx, typ, to, reviewer, note)
	switch {
	case errors.Is(err, board.ErrNotFound):
		return fmt.Errorf("%w: hint %s: %w", dashboard.ErrNotFound, typ, err)
	case errors.Is(err, board.ErrBadTransition):
		return fmt.Errorf("%w: %w", dashboard.ErrConflict, err)
	}
	return err
}

func (b boardView) ApproveHint(ctx context.Context, typ, reviewer, note string) error {
	return b.review(ctx, typ, board.HintApproved, reviewer, note)
}

func (b boardView) RejectHint(ctx context.Context, typ, reviewer, note string) error {
	return b.review(ctx, typ, board.HintRejected, reviewer, note)
}

// defaultBoardDSN is the repository's local board when it exists.
func defaultBoardDSN(root string) string {
	p := filepath.Join(root, board.DefaultLocalPath)
	if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) || err != nil {
		return ""
	}
	return board.KindLocal + ":" + p
}
