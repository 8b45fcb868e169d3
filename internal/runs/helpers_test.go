package runs

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/apiary-dev/apiary/internal/attempt"
	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/git"
	"github.com/apiary-dev/apiary/internal/rundir"
)

// start runs plan src in repo with cfg (Repo is filled in) and fails the
// test on an infrastructure error.
func start(t testing.TB, repo *git.Repo, src string, cfg Config) *Report {
	t.Helper()
	cfg.Repo = repo
	ctx := boundedCtx(t)
	rep, err := Start(ctx, cfg, NewRun{PlanFile: "plan.yaml", PlanData: []byte(src)})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("run %s: %v", rep.RunID, context.Cause(ctx))
	}
	return rep
}

// receipt reads a task's receipt from disk.
func receipt(t testing.TB, repo *git.Repo, run, task string) *envelope.Receipt {
	t.Helper()
	rc, err := rundir.Open(repo.Dir(), run).Task(task).Receipt()
	if err != nil || rc == nil {
		t.Fatalf("receipt of %s: %v (missing: %v)", task, err, rc == nil)
	}
	return rc
}

// integrations lists (task, kind) along the branch's first-parent chain
// since the run started, oldest first, and checks that every entry has the
// run's trailers.
func integrationsOf(t testing.TB, repo *git.Repo, rep *Report) []string {
	t.Helper()
	log, err := repo.FirstParentLog(t.Context(), rep.StartHead, "refs/heads/"+rep.IntegrationBranch)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for i := len(log) - 1; i >= 0; i-- {
		e := log[i]
		task, ok1 := git.TrailerValue(e.Trailers, git.TrailerTask)
		run, ok2 := git.TrailerValue(e.Trailers, git.TrailerRun)
		if !ok1 || !ok2 || run != rep.RunID {
			continue
		}
		kind, ok := git.TrailerValue(e.Trailers, attempt.TrailerIntegration)
		if !ok {
			kind = attempt.FastForward
		}
		out = append(out, task+":"+kind)
	}
	return out
}

// eventLog collects events for assertions.
type eventLog struct {
	mu  sync.Mutex
	evs []Event
}

func (l *eventLog) add(ev Event) {
	l.mu.Lock()
	l.evs = append(l.evs, ev)
	l.mu.Unlock()
}

func (l *eventLog) count(kind string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, ev := range l.evs {
		if ev.Kind == kind {
			n++
		}
	}
	return n
}
