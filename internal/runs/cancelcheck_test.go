//go:build unix

package runs

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/git/gittest"
	"github.com/apiary-dev/apiary/internal/proc"
	"github.com/apiary-dev/apiary/internal/rundir"
)

// TestCancelDuringCheck cancels a task while its integration check runs
// (a check that left a background child): when the cancel returns, every
// process of the check is gone, the candidate is not on the branch, the receipt and the report say cancelled
// with the reason, and the other task integrates. Cancelling it again, or
// a task the run does not have, is refused with a typed error. In a cgroup
// per scope and in marked process groups.
func TestCancelDuringCheck(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{proc.ModeCgroup, proc.ModeGroup} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			check := `sleep 1000 & echo $! > ` + dir + `/pid; touch ` + dir + `/started; until [ -e ` + dir + `/pass ]; do sleep 0.01; done`
			repo := gittest.NewRepo(t, map[string]string{"README": "x\n"})
			src := `version: 1
max_parallel: 2
agents:
  sh: {kind: command, argv: ["sh", "-c", "echo $APIARY_TASK > $APIARY_TASK.txt"]}
tasks:
  - {id: a, objective: a, agent: sh, write_scope: [a.txt], checks: ["` + check + `"]}
  - {id: b, objective: b, agent: sh, write_scope: [b.txt], deps: [{task: a, kind: control}]}
`
			w := newWaiter()
			id := "cancel-check-" + mode
			wait := startBG(t, repo, id, src, Config{OnEvent: w.add, ProcessGroups: mode == proc.ModeGroup})
			w.waitFor(t, "a's check", func(evs []Event) bool {
				for _, ev := range evs {
					if ev.Kind == rundir.EvProcessStarted && ev.Task == "a" && strings.HasPrefix(ev.Role, "check") {
						return true
					}
				}
				return false
			})
			waitFile(t, filepath.Join(dir, "started"))
			b, _ := os.ReadFile(filepath.Join(dir, "pid"))
			child, _ := strconv.Atoi(strings.TrimSpace(string(b)))
			if len(proc.OwnerProcesses(id, "a")) < 2 {
				t.Fatalf("a's check and its child are not running: %v", proc.OwnerProcesses(id, "a"))
			}
			ctl := DialControl(ControlPath(repo.Dir(), id))
			start := time.Now()
			res, err := ctl.Cancel(boundedCtx(t), CancelRequest{Operator: operator(t, repo, id), Task: "a", Reason: "not wanted"})
			took := time.Since(start)
			switch {
			case err != nil:
				t.Fatal(err)
			case len(res.Cancelled) == 1 && res.Cancelled[0] == "a" && len(res.Pending) == 0:
			default:
				t.Fatalf("cancel: %+v", res)
			}
			t.Logf("%s: cancel during a check answered in %v (ack %.1f ms)", mode, took, res.AckMs)
			if ps := proc.OwnerProcesses(id, "a"); len(ps) > 0 {
				t.Errorf("a's processes left when the cancel returned: %v", ps)
			}
			if syscall.Kill(child, 0) == nil && pidRunning(child) {
				t.Errorf("the check's background child %d outlived the cancel", child)
			}
			rc := receipt(t, repo, id, "a")
			if rc.Status != envelope.StatusCancelled || rc.Reason != "not wanted" {
				t.Errorf("a's receipt: %s %q", rc.Status, rc.Reason)
			}
			if _, err := ctl.Cancel(boundedCtx(t), CancelRequest{Operator: operator(t, repo, id), Task: "a"}); !errors.Is(err, ErrFinished) {
				t.Errorf("cancelling a again: %v", err)
			}
			if _, err := ctl.Cancel(boundedCtx(t), CancelRequest{Operator: operator(t, repo, id), Task: "nope"}); !errors.Is(err, ErrUnknownTask) {
				t.Errorf("cancelling an unknown task: %v", err)
			}
			rep := wait()
			if rep.Status != "cancelled" || rep.Task("a").Status != "cancelled" || rep.Task("b").Status != "succeeded" {
				t.Errorf("report: run %s, a %s, b %s", rep.Status, rep.Task("a").Status, rep.Task("b").Status)
			}
			for _, in := range integrationsOf(t, repo, rep) {
				if strings.HasPrefix(in, "a:") {
					t.Errorf("the cancelled task was integrated: %v", integrationsOf(t, repo, rep))
				}
			}
			if gittest.Git(t, repo.Dir(), "ls-tree", "--name-only", "main", "a.txt") != "" {
				t.Error("a.txt is on the branch")
			}
		})
	}
}

func pidRunning(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && i+2 < len(s) && s[i+2] != 'Z' && s[i+2] != 'X'
}

func waitFile(t *testing.T, p string) {
	t.Helper()
	ctx := boundedCtx(t)
	for {
		if _, err := os.Stat(p); err == nil {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s never appeared", p)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// TestCancelAfterChecksPassed: a cancel that arrives after a candidate's
// checks passed but before its ref update wins: the integration re-checks
// the cancel under the lock the cancel takes, so the work stays off the
// branch and the receipt says cancelled.
func TestCancelAfterChecksPassed(t *testing.T) {
	t.Parallel()
	repo := gittest.NewRepo(t, map[string]string{"README": "x\n"})
	src := `version: 1
agents:
  sh: {kind: command, argv: ["sh", "-c", "echo a > a.txt"]}
tasks:
  - {id: a, objective: a, agent: sh, write_scope: [a.txt], checks: ["true"]}
`
	passed, proceed := make(chan struct{}), make(chan struct{})
	id := "cancel-after-checks"
	wait := startBG(t, repo, id, src, Config{beforeRefUpdate: func(task string) {
		close(passed)
		<-proceed
	}})
	select {
	case <-passed:
	case <-boundedCtx(t).Done():
		t.Fatal("the checks never passed")
	}
	type out struct {
		res *CancelResult
		err error
	}
	ch := make(chan out, 1)
	go func() {
		res, err := DialControl(ControlPath(repo.Dir(), id)).Cancel(boundedCtx(t), CancelRequest{Operator: operator(t, repo, id), Task: "a"})
		ch <- out{res, err}
	}()
	// Let the integration go on once the cancel is in.
	w := func() bool {
		evs, _, _ := rundir.Open(repo.Dir(), id).Events()
		return countKind(evs, rundir.EvCancelRequested, "a") > 0
	}
	bound := boundedCtx(t)
	for !w() {
		if bound.Err() != nil {
			t.Fatal("the cancel never arrived")
		}
		time.Sleep(5 * time.Millisecond)
	}
	close(proceed)
	o := <-ch
	if o.err != nil || len(o.res.Cancelled) != 1 {
		t.Fatalf("cancel: %+v %v", o.res, o.err)
	}
	rep := wait()
	if rep.Task("a").Status != "cancelled" || len(integrationsOf(t, repo, rep)) != 0 {
		t.Errorf("a: %s, integrations %v", rep.Task("a").Status, integrationsOf(t, repo, rep))
	}
}
