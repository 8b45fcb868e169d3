package runs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apiary-dev/apiary/internal/envtest"
	"github.com/apiary-dev/apiary/internal/git"
)

// spawnLib is sourced by test agents: spawn NAME SCOPE WAIT OUT asks the run
// for a child task over the control socket (curl) and leaves the answer in
// OUT; escrow KIND OP OUT asks about an escrowed operation.
const spawnLib = `
spawn() {
  env='{"task_id":"0190a1b2-c3d4-7e5f-8a6b-0c1d2e3f4a5b","name":"'$1'","objective":"child '$1'","inputs":{"workspace":"git:'$APIARY_BASE'"},"authority":{"write_scope":["'$2'"]},"budget":{},"completion":{},"deps":[],"agent":{"profile":"sh"}}'
  printf '{"capability":"%s","envelope":%s,"wait":%s}' "$APIARY_CAPABILITY" "$env" "$3" > "$4.req"
  curl -sS --unix-socket "$APIARY_CONTROL" -H 'Content-Type: application/json' --data-binary @"$4.req" -o "$4" -w '%{http_code}' http://apiary/v1/spawn > "$4.code"
  rm -f "$4.req"
}
escrow() {
  printf '{"capability":"%s","kind":"%s","operation":"%s"}' "$APIARY_CAPABILITY" "$1" "$2" > "$3.req"
  curl -sS --unix-socket "$APIARY_CONTROL" -H 'Content-Type: application/json' --data-binary @"$3.req" -o "$3" -w '%{http_code}' http://apiary/v1/escrow > "$3.code"
  rm -f "$3.req"
}
`

// agentScript writes a test agent that sources spawnLib.
func agentScript(t *testing.T, body string) string {
	t.Helper()
	envtest.Command(t, "curl")
	p := filepath.Join(t.TempDir(), "agent.sh")
	if err := os.WriteFile(p, []byte("set -e\n"+spawnLib+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// procsOf lists the live processes (pid) that carry run's marker and, if
// task is set, that task's APIARY_TASK, read from /proc.
func procsOf(run, task string) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil {
			continue
		}
		kv := bytes.Split(b, []byte{0})
		hasRun, hasTask := false, task == ""
		for _, x := range kv {
			switch string(x) {
			case "APIARY_RUN_ID=" + run:
				hasRun = true
			case "APIARY_TASK=" + task:
				hasTask = true
			}
		}
		if hasRun && hasTask {
			if st, err := os.ReadFile("/proc/" + e.Name() + "/stat"); err == nil {
				if i := bytes.LastIndexByte(st, ')'); i > 0 && i+2 < len(st) && st[i+2] == 'Z' {
					continue // a zombie is gone, waiting to be reaped
				}
			}
			out = append(out, pid)
		}
	}
	return out
}

// waitProcs waits until task of run has at least n processes.
func waitProcs(t testing.TB, run, task string, n int) {
	t.Helper()
	ctx := boundedCtx(t)
	for len(procsOf(run, task)) < n {
		select {
		case <-ctx.Done():
			t.Fatalf("%s: processes %v, want %d: %v", task, procsOf(run, task), n, context.Cause(ctx))
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// waiter lets a test wait for events of a run it started in the
// background.
type waiter struct {
	mu   sync.Mutex
	evs  []Event
	wake chan struct{}
}

func newWaiter() *waiter { return &waiter{wake: make(chan struct{}, 1)} }

func (w *waiter) add(ev Event) {
	w.mu.Lock()
	w.evs = append(w.evs, ev)
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// all returns the events seen so far.
func (w *waiter) all() []Event {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]Event{}, w.evs...)
}

// testBound caps how long anything one test waits for may take: a run
// still going after it is cancelled (its agents killed) and a wait gives
// up, so a hang fails its test with a reason instead of stalling the
// package until go test's own timeout. It is a safety net, not a
// performance threshold: every run in this package takes seconds.
const testBound = 60 * time.Second

// boundedCtx is t's context, ended with a cause after testBound (or a
// little before the test binary's -timeout, whichever comes first).
func boundedCtx(t testing.TB) context.Context {
	t.Helper()
	bound := testBound
	if d, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if dl, ok := d.Deadline(); ok {
			bound = min(bound, time.Until(dl)*9/10)
		}
	}
	ctx, cancel := context.WithTimeoutCause(t.Context(), bound,
		fmt.Errorf("%s: still running after %s (a hang)", t.Name(), bound))
	t.Cleanup(cancel)
	return ctx
}

// waitFor blocks until pred holds on the events seen so far, failing the
// test once its bound is reached (a hang is a bug, not slowness).
func (w *waiter) waitFor(t testing.TB, what string, pred func([]Event) bool) {
	t.Helper()
	ctx := boundedCtx(t)
	for {
		w.mu.Lock()
		ok := pred(w.evs)
		w.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-w.wake:
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v; events: %s", what, context.Cause(ctx), w.kinds())
		}
	}
}

func (w *waiter) kinds() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var b strings.Builder
	for _, ev := range w.evs {
		b.WriteString(ev.Kind + ":" + ev.Task + " ")
	}
	return b.String()
}

func countKind(evs []Event, kind, task string) int {
	n := 0
	for _, ev := range evs {
		if ev.Kind == kind && (task == "" || ev.Task == task) {
			n++
		}
	}
	return n
}

// startBG starts plan src in the background under run id; the returned
// function waits for the report.
func startBG(t *testing.T, repo *git.Repo, id, src string, cfg Config) func() *Report {
	t.Helper()
	cfg.Repo = repo
	type out struct {
		rep *Report
		err error
	}
	ch := make(chan out, 1)
	ctx, cancel := context.WithCancel(boundedCtx(t))
	go func() {
		rep, err := Start(ctx, cfg, NewRun{ID: id, PlanFile: "plan.yaml", PlanData: []byte(src)})
		ch <- out{rep, err}
	}()
	var once sync.Once
	var res out
	wait := func() *Report {
		t.Helper()
		once.Do(func() {
			res = <-ch // Start returns once ctx (bounded) ends at the latest
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				t.Errorf("run %s: %v", id, context.Cause(ctx))
			}
		})
		if res.err != nil {
			t.Fatalf("Start: %v", res.err)
		}
		return res.rep
	}
	t.Cleanup(func() {
		cancel()
		once.Do(func() { res = <-ch })
	})
	return wait
}

// operator returns an operator token for run id in repo.
func operator(t testing.TB, repo *git.Repo, id string) string {
	t.Helper()
	key, err := LoadKey(repo.Dir(), false, nil)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := OperatorToken(key, id, time.Now(), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	return tok.String()
}
