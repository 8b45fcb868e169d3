package runs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/git"
	"github.com/apiary-dev/apiary/internal/plan"
	"github.com/apiary-dev/apiary/internal/rundir"
)

// Start runs a new run to its end and returns its report, read back from
// disk. Plan problems are returned as plan.Errors and repository problems
// (a dirty tree, a missing branch) as the plan package reports them; a run
// whose tasks fail is not an error: see Report.OK. When ctx ends, running
// agents are stopped, nothing more is integrated, and the run can be
// continued with Resume. Where processes cannot be contained (Windows,
// see proc.Supported) Start refuses with an error wrapping
// proc.ErrUnsupported before it writes anything.
func Start(ctx context.Context, cfg Config, nr NewRun) (*Report, error) {
	s, err := cfg.resolve()
	if err != nil {
		return nil, err
	}
	root, err := s.Repo.TopLevel(ctx)
	if err != nil {
		return nil, fmt.Errorf("finding the repository: %w", err)
	}
	repo := s.Repo.At(root)
	id := nr.ID
	if id == "" {
		if id, err = rundir.NewID(s.now(), s.rnd); err != nil {
			return nil, err
		}
	}
	if !rundir.ValidID(id) {
		return nil, fmt.Errorf("%w: run id %q", ErrConfig, id)
	}
	if _, err := os.Stat(rundir.Path(root, id)); !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: run %s already exists", ErrConfig, id)
	}
	if nr.Goal != "" {
		return startPlanned(ctx, s, repo, id, nr)
	}
	p, err := plan.ParseWith(nr.PlanFile, nr.PlanData, plan.Options{Agents: nr.Agents})
	if err != nil {
		return nil, err
	}
	rec, err := newRecord(ctx, s, repo, id, p, nr)
	if err != nil {
		return nil, err
	}
	st := rundir.NewLog(rec.Repo, id, s.now, s.OnEvent)
	defer st.Close()
	if err := st.Lock(); err != nil {
		return nil, err
	}
	if err := savePlan(st, rec, nr.PlanData); err != nil {
		return nil, err
	}
	return launch(ctx, s, st, rec, p, repo, nil)
}

// newRecord checks the repository side of the plan and describes the run.
func newRecord(ctx context.Context, s *settings, repo *git.Repo, id string, p *plan.Plan, nr NewRun) (*rundir.Record, error) {
	branch, err := p.CheckRepo(ctx, repo)
	if err != nil {
		return nil, err
	}
	head, err := repo.RevParse(ctx, "refs/heads/"+branch)
	if err != nil {
		return nil, err
	}
	trace, err := rundir.RandomHex(s.rnd, 16)
	if err != nil {
		return nil, err
	}
	rec := &rundir.Record{Version: 1, RunID: id, Created: s.now().UTC(), Repo: repo.Dir(), PlanFile: nr.PlanFile,
		IntegrationBranch: branch, StartHead: head, TraceID: trace, Tasks: map[string]string{}, Goal: nr.Goal,
		Options: s.recordOptions(nr)}
	if rec.Options.MaxParallel == 0 {
		rec.Options.MaxParallel = p.MaxParallel
	}
	if err := assignIDs(s, rec, p); err != nil {
		return nil, err
	}
	return rec, nil
}

func assignIDs(s *settings, rec *rundir.Record, p *plan.Plan) error {
	for _, t := range p.Tasks {
		id, err := envelope.NewTaskID(s.now(), s.rnd)
		if err != nil {
			return err
		}
		rec.Tasks[t.ID] = id
	}
	return nil
}

// savePlan stores the plan copy and run.json.
func savePlan(st *rundir.Log, rec *rundir.Record, data []byte) error {
	if err := rundir.Init(st.Root()); err != nil {
		return err
	}
	if data != nil {
		sum := sha256.Sum256(data)
		rec.PlanSHA256 = hex.EncodeToString(sum[:])
		if err := rundir.WriteFile(st.PlanPath(), data); err != nil {
			return err
		}
	}
	return st.WriteRecord(rec)
}

// launch registers the plan's tasks (restore, if set, brings back what a
// previous process did) and executes the run.
func launch(ctx context.Context, s *settings, st *rundir.Log, rec *rundir.Record, p *plan.Plan, repo *git.Repo,
	restore func(*runner) (int, error)) (*Report, error) {
	r, err := newRunner(ctx, s, st, rec, p, repo)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err := r.procs.Close(); err != nil {
			s.log.Warn("removing the run's cgroup", "err", err)
		}
	}()
	kind, todo := rundir.EvRunStarted, len(p.Tasks)
	if restore != nil {
		kind = rundir.EvRunResumed
		if todo, err = restore(r); err != nil {
			r.abort(nil)
			return nil, err
		}
	} else {
		r.registerPlan()
	}
	if err := st.Emit(Event{Kind: kind, Tasks: todo, Branch: rec.IntegrationBranch, Base: rec.StartHead, Cgroup: r.procs.Dir()}); err != nil {
		r.abort(nil)
		return nil, err
	}
	for _, t := range append([]*taskState{}, r.list...) {
		if t.state == statePending && t.waiting == 0 {
			r.wire(t)
		}
	}
	runErr := r.execute()
	rep, err := LoadReport(rec.Repo, rec.RunID)
	if runErr != nil {
		return rep, runErr
	}
	return rep, err
}
