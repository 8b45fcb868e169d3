package runview

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apiary-dev/apiary/internal/dashboard"
	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/gateway"
	"github.com/apiary-dev/apiary/internal/rundir"
	"github.com/apiary-dev/apiary/internal/runs"
)

// TestAttemptTask: only agent names RUN/TASK/aN of the run name a task,
// including task names with slashes.
func TestAttemptTask(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		agent, task string
		ok          bool
	}{
		{"r1/build/a1", "build", true},
		{"r1/planner/a2", "planner", true},
		{"r1/a/b/a3", "a/b", true},
		{"r2/build/a1", "", false},
		{"r1/build", "", false},
		{"r1//a1", "", false},
		{"r1/build/x1", "", false},
		{"eval-swarm", "", false},
	} {
		task, ok := attemptTask(c.agent, "r1/")
		if task != c.task || ok != c.ok {
			t.Errorf("attemptTask(%q) = %q, %v; want %q, %v", c.agent, task, ok, c.task, c.ok)
		}
	}
}

// TestLedgerSpend: the money of a run is the ledger's, per task and in
// total, from keys created under the run's attempt names; a ledger file
// that does not exist is not created by reading it.
func TestLedgerSpend(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "gateway.db")
	missing := NewLedger(path)
	if rs, err := missing.spend(ctx, "r1"); rs != nil || err != nil {
		t.Fatalf("spend of a missing ledger: %+v, %v", rs, err)
	}
	if _, err := os.Stat(path); err == nil {
		t.Fatal("reading a missing ledger created it")
	}
	db, err := gateway.OpenDB(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	now := time.Now()
	for _, agent := range []string{"r1/build/a1", "r1/build/a2", "r1/test/a1", "r2/build/a1"} {
		if _, _, err := gateway.CreateKey(ctx, db, agent, 1e6, 0, 0, now); err != nil {
			t.Fatal(err)
		}
	}
	l := NewLedger(path)
	defer l.Close()
	rs, err := l.spend(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if !rs.Metered || len(rs.Keys) != 3 || len(rs.Tasks) != 2 || !rs.Tasks["build"].Known || !rs.Tasks["test"].Known || !rs.Total.Known {
		t.Errorf("spend of r1: %+v", rs)
	}
	if rs.Total.USD != 0 || rs.Total.InputTokens != 0 {
		t.Errorf("a run that sent nothing spent %+v", rs.Total)
	}
	other, err := l.spend(ctx, "r3")
	if err != nil || other.Metered || len(other.Tasks) != 0 {
		t.Errorf("spend of a run without keys: %+v, %v", other, err)
	}
	r := &dashboard.Run{Tasks: []dashboard.Task{{ID: "build", Usage: dashboard.Usage{USD: 9}}, {ID: "lint"}}}
	applySpend(r, rs)
	if u := r.Tasks[0].Usage; u.USD != 0 || !u.Known {
		t.Errorf("build's usage %+v: the ledger's, not the report's", u)
	}
	if u := r.Tasks[1].Usage; !u.Known {
		t.Errorf("lint's usage %+v: metered runs know a task that spent nothing", u)
	}
	unmetered := &dashboard.Run{Tasks: []dashboard.Task{{ID: "a", Usage: dashboard.Usage{USD: 0.5}}, {ID: "b"}}}
	applySpend(unmetered, nil)
	if !unmetered.Tasks[0].Usage.Known || unmetered.Tasks[1].Usage.Known {
		t.Errorf("without a ledger only measured usage is known: %+v", unmetered.Tasks)
	}
}

// TestReadTail: the tail of a long log starts at a whole line and says it
// is cut; a directory or a missing file is nothing.
func TestReadTail(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "agent.log")
	var b strings.Builder
	for i := range 100 {
		b.WriteString(strings.Repeat("x", 20) + " line " + string(rune('a'+i%26)) + "\n")
	}
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	lt := readTail(p, 100)
	if lt == nil || !lt.Truncated || lt.Size != int64(b.Len()) || len(lt.Text) > 100 || !strings.HasPrefix(lt.Text, "xxxx") || !strings.HasSuffix(b.String(), lt.Text) {
		t.Errorf("tail %+v", lt)
	}
	if whole := readTail(p, 1<<20); whole == nil || whole.Truncated || whole.Text != b.String() {
		t.Errorf("a short log whole: %+v", whole)
	}
	if readTail(dir, 100) != nil || readTail(filepath.Join(dir, "nope"), 100) != nil {
		t.Error("a directory or a missing file has a tail")
	}
}

// TestAttempts: a task's attempts and its start and end come from the
// run's events, each attempt's end matched to its start by role and
// number.
func TestAttempts(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	evs := []runs.Event{
		{Time: at(0), Kind: rundir.EvAttemptStarted, Task: "a", Attempt: 1, Role: "worker", Base: "b0", Fence: 7, Trace: "tp1"},
		{Time: at(1), Kind: rundir.EvAttemptStarted, Task: "b", Attempt: 1, Role: "worker"},
		{Time: at(2), Kind: rundir.EvAttemptFinished, Task: "a", Attempt: 1, Role: "worker", Commit: "c1", Reason: "gate", Usage: &envelope.Usage{}},
		{Time: at(3), Kind: rundir.EvAttemptStarted, Task: "a", Attempt: 2, Role: "worker", Trace: "tp2"},
		{Time: at(5), Kind: rundir.EvAttemptFinished, Task: "a", Attempt: 2, Role: "worker", Commit: "c2", Usage: &envelope.Usage{InputTokens: 9, USD: 0.5}},
		{Time: at(6), Kind: rundir.EvTaskDone, Task: "a"},
	}
	as := attemptsOf(evs, "a")
	if len(as) != 2 || as[0].N != 1 || as[0].Fence != 7 || as[0].Commit != "c1" || as[0].Finished == nil || !as[0].Finished.Equal(at(2)) ||
		as[1].N != 2 || as[1].Commit != "c2" || as[1].Reason != "" {
		t.Errorf("attempts %+v", as)
	}
	// What nothing measured is not known (the page and top say n/a).
	if len(as) == 2 && (as[0].Usage.Known || !as[1].Usage.Known || as[1].Usage.USD != 0.5) {
		t.Errorf("attempts' usage %+v, %+v", as[0].Usage, as[1].Usage)
	}
	if tp := traceOf(evs, "a", 2); tp != "tp2" {
		t.Errorf("trace of attempt 2: %q", tp)
	}
	spans := taskTimes(evs)
	if sp := spans["a"]; !sp[0].Equal(at(0)) || !sp[1].Equal(at(6)) {
		t.Errorf("a's span %v", sp)
	}
	if sp := spans["b"]; !sp[0].Equal(at(1)) || !sp[1].IsZero() {
		t.Errorf("b, still running: %v", sp)
	}
}

// TestSourcesEmptyRepo: a repository without runs, board or ledger lists
// no runs, names a missing run ErrNotFound, and creates nothing.
func TestSourcesEmptyRepo(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	src := Sources(Config{Root: root, Ledger: NewLedger(filepath.Join(root, ".apiary", "gateway.db"))})
	if src.Board != nil || src.Gateway != nil || src.Runs == nil || src.Cancel == nil || src.Plots == nil {
		t.Fatalf("sources %+v", src)
	}
	ctx := context.Background()
	if sums, err := src.Runs.Runs(ctx); err != nil || len(sums) != 0 {
		t.Errorf("runs %v, %v", sums, err)
	}
	for _, id := range []string{"../x", "0190d5a0-0000-7000-8000-000000000000"} {
		if _, err := src.Runs.Run(ctx, id); err == nil || !strings.Contains(err.Error(), dashboard.ErrNotFound.Error()) {
			t.Errorf("run %q: %v", id, err)
		}
	}
	if err := src.Cancel.Cancel(ctx, "../x", "", ""); err == nil {
		t.Error("cancelled a malformed run id")
	}
	if _, err := os.Stat(filepath.Join(root, ".apiary")); err == nil {
		t.Error("reading created .apiary")
	}
	if DefaultBoardDSN(root) != "" {
		t.Error("a board DSN for a repository without a board")
	}
}
