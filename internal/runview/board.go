package runview

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/apiary-dev/apiary/internal/board"
	"github.com/apiary-dev/apiary/internal/dashboard"
	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/swarm"
)

// Swarm runs live on the board, not in .apiary/runs: the dashboard and
// top show them beside the local runs, with the same run view — the DAG,
// each task's status, worker and money, the workers.

// swarmStatus maps a swarm task's status onto the page's.
func swarmStatus(s string) string {
	switch s {
	case string(board.TaskDone):
		return dashboard.StatusSucceeded
	case string(board.TaskFailed):
		return dashboard.StatusFailed
	case string(board.TaskCancelled):
		return dashboard.StatusCancelled
	case string(board.TaskRunning):
		return dashboard.StatusRunning
	}
	return dashboard.StatusPending // ready or pending: waiting for a worker or a dependency
}

// swarmRuns lists the board's swarm runs (none without a board).
func (s *runFiles) swarmRuns(ctx context.Context) ([]dashboard.RunSummary, error) {
	if s.board == nil {
		return nil, nil
	}
	recs, err := swarm.ListRecords(ctx, s.board)
	if err != nil {
		return nil, fmt.Errorf("swarm runs on the board: %w", err)
	}
	var out []dashboard.RunSummary
	for _, rec := range recs {
		rep, err := swarm.LoadReport(ctx, s.board, rec.Run)
		if err != nil {
			out = append(out, dashboard.RunSummary{ID: rec.Run, Status: "unreadable", Started: rec.Created, Mode: dashboard.ModeSwarm})
			continue
		}
		out = append(out, summaryOf(swarmRunView(rec, rep)))
	}
	return out, nil
}

// swarmRun is one swarm run; ErrNotFound when the board has none of that
// id.
func (s *runFiles) swarmRun(ctx context.Context, id string) (*dashboard.Run, error) {
	rec, rep, err := s.loadSwarm(ctx, id)
	if err != nil {
		return nil, err
	}
	return swarmRunView(rec, rep), nil
}

func (s *runFiles) loadSwarm(ctx context.Context, id string) (*swarm.Record, *swarm.Report, error) {
	rec, err := swarm.ReadRecord(ctx, s.board, id)
	if errors.Is(err, swarm.ErrNoRun) {
		return nil, nil, fmt.Errorf("%w: no run %s", dashboard.ErrNotFound, id)
	}
	if err != nil {
		return nil, nil, err
	}
	rep, err := swarm.LoadReport(ctx, s.board, id)
	if err != nil {
		return nil, nil, err
	}
	return rec, rep, nil
}

// swarmRunView maps a swarm run's report onto the dashboard's run.
func swarmRunView(rec *swarm.Record, rep *swarm.Report) *dashboard.Run {
	r := &dashboard.Run{ID: rep.Run, Repo: rec.Remote, IntegrationBranch: rep.IntegrationBranch, StartHead: rep.StartHead,
		Status: rep.Status, Started: rec.Created, Finished: rec.Finished, Mode: dashboard.ModeSwarm,
		Tasks: make([]dashboard.Task, 0, len(rep.Tasks)), Edges: []dashboard.Edge{}, Shares: []dashboard.Share{},
		Totals: dashboard.Totals{Tasks: rep.Totals.Tasks, Succeeded: rep.Totals.Done, Failed: rep.Totals.Failed, Cancelled: rep.Totals.Cancelled,
			Unfinished: rep.Totals.Running + rep.Totals.Waiting, Attempts: rep.Totals.Attempts, Integrated: map[string]int{}}}
	for _, t := range rep.Tasks {
		tv := dashboard.Task{ID: t.ID, Status: swarmStatus(t.Status), Attempts: t.Attempts, Reason: t.Reason, Worker: t.Worker,
			Usage: recordedUsage(t.Usage), WallS: t.Usage.WallS}
		if t.Commit != "" {
			c := t.Commit
			tv.Commit = &c
		}
		if t.Integrated != "" {
			k := t.Integrated
			tv.Integrated = &k
			r.Totals.Integrated[k]++
		}
		if tv.Status == dashboard.StatusFailed {
			tv.Failure = &dashboard.Failure{Kind: dashboard.FailAgent, Summary: firstLineOf(t.Reason)}
			if strings.Contains(t.Reason, "check") {
				tv.Failure.Kind = dashboard.FailCheck
			}
		}
		r.Tasks = append(r.Tasks, tv)
		for _, succ := range t.Succ {
			r.Edges = append(r.Edges, dashboard.Edge{From: t.ID, To: succ, Kind: dashboard.EdgeData})
		}
	}
	r.Totals.Usage = recordedUsage(rep.Totals.Usage)
	if !r.Finished.IsZero() {
		r.WallS = r.Finished.Sub(r.Started).Seconds()
	}
	for _, w := range rep.Workers {
		id := w.Worker
		if w.Host != "" {
			id += "@" + w.Host
		}
		r.Workers = append(r.Workers, dashboard.Worker{ID: id, Skills: w.Skills, Profile: w.Profile, Slots: w.Slots, Busy: w.Busy, LastSeen: w.Updated})
	}
	slices.SortFunc(r.Workers, func(a, b dashboard.Worker) int { return strings.Compare(a.ID, b.ID) })
	return r
}

// recordedUsage is what attempts recorded: known when anything was
// measured (swarm workers report their agents' own usage; a local
// attempt's is its gateway key's, else its agent's report).
func recordedUsage(u envelope.Usage) dashboard.Usage {
	return dashboard.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, USD: u.USD,
		Known: u.InputTokens+u.OutputTokens > 0 || u.USD > 0}
}

// swarmTask is one task of a swarm run.
func (s *runFiles) swarmTask(ctx context.Context, run, task string) (*dashboard.TaskDetail, error) {
	rec, rep, err := s.loadSwarm(ctx, run)
	if err != nil {
		return nil, err
	}
	r := swarmRunView(rec, rep)
	var tv *dashboard.Task
	for i := range r.Tasks {
		if r.Tasks[i].ID == task {
			tv = &r.Tasks[i]
		}
	}
	if tv == nil {
		return nil, fmt.Errorf("%w: task %s of run %s", dashboard.ErrNotFound, task, run)
	}
	td := &dashboard.TaskDetail{Run: run, Task: *tv, Fence: uint64(max(rep.Task(task).Token, 0))}
	if notes := rep.Task(task).Notes; len(notes) > 0 {
		td.Summary = strings.Join(notes, "\n")
	}
	if c, err := s.board.Holder(ctx, run+"/"+task); err == nil {
		td.Claim = &dashboard.Claim{Task: c.Task, Agent: c.Agent, Score: c.Score, Lease: int64(c.Lease), Token: c.Token}
	}
	return td, nil
}

// boardView is dashboard.BoardSource and dashboard.HintReviewer over a
// board.
type boardView struct{ st *board.Store }

var (
	_ dashboard.BoardSource  = boardView{}
	_ dashboard.HintReviewer = boardView{}
)

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
	byRun, err := swarm.Workers(ctx, b.st)
	if err != nil {
		return snap, err
	}
	for _, ws := range byRun {
		for _, w := range ws {
			id := w.Worker
			if w.Host != "" {
				id += "@" + w.Host
			}
			snap.Workers = append(snap.Workers, dashboard.Worker{ID: id, Skills: w.Skills, Profile: w.Profile, Slots: w.Slots, Busy: w.Busy, LastSeen: w.Updated})
		}
	}
	slices.SortFunc(snap.Workers, func(a, b dashboard.Worker) int { return strings.Compare(a.ID, b.ID) })
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
