//go:build unix

package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apiary-dev/apiary/internal/board/connect"
	"github.com/apiary-dev/apiary/internal/board/etcd/etcdtest"
	"github.com/apiary-dev/apiary/internal/envtest"
	"github.com/apiary-dev/apiary/internal/swarm"
)

// e2eAgent writes its task's file after a pause long enough for the test
// to kill things while work is in flight.
const e2eAgent = `set -e
sleep 1.5
echo "$APIARY_TASK" > "$APIARY_TASK.txt"
`

// e2eTasks is the plan's size: a dozen tasks, every fourth depending on the one before. Claims
// last 6 s (lease_s), so a killed worker's task is put back quickly.
const e2eTasks = 12

func e2ePlan(agent string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "version: 1\nintegration_branch: main\nagents:\n  sh: {kind: command, argv: [sh, %q]}\ntasks:\n", agent)
	for i := 1; i <= e2eTasks; i++ {
		deps := ""
		if i%4 == 0 {
			deps = fmt.Sprintf(", deps: [t%02d]", i-1)
		}
		fmt.Fprintf(&b, "  - {id: t%02d, objective: write t%02d, agent: sh, write_scope: [t%02d.txt], tags: [txt], lease_s: 6%s}\n", i, i, i, deps)
	}
	return b.String()
}

// TestEtcdMultiProcess is the across-machines run: a 3-member etcd
// cluster on loopback, `apiary run --mode swarm` (publishing and standing
// for the merge role) and three `apiary worker` processes sharing a bare git
// remote. Mid-run the test kill -9s a worker that holds a claim and one
// etcd member. The run must still succeed, with every task integrated
// exactly once on the remote's branch (by commit trailers), every task's
// file present, and the killed worker's task finished by another worker.
func TestEtcdMultiProcess(t *testing.T) {
	t.Parallel()
	c := etcdtest.Start(t, envtest.Command(t, "etcd"), 3)
	dsn := "etcd://" + strings.Join(c.Endpoints(), ",") + "/e2e"
	dir := t.TempDir()
	work, remote := filepath.Join(dir, "work"), filepath.Join(dir, "remote.git")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	git(t, work, "init", "-q", "-b", "main")
	if err := os.WriteFile(filepath.Join(work, "README.md"), []byte("e2e\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, work, "add", "README.md")
	git(t, work, "commit", "-q", "-m", "start")
	git(t, dir, "clone", "-q", "--bare", work, remote)
	agent := filepath.Join(dir, "agent.sh")
	planFile := filepath.Join(dir, "plan.yaml")
	if err := os.WriteFile(agent, []byte(e2eAgent), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(planFile, []byte(e2ePlan(agent)), 0o644); err != nil {
		t.Fatal(err)
	}

	run := start(t, "run", work, "run", planFile, "--mode", "swarm", "--board", dsn, "--remote", remote, "--shards", "2", "--json")
	runID := strings.TrimPrefix(run.waitLine(t, "run ", time.Minute), "run ")
	workers := map[string]*proc{}
	for i := 1; i <= 3; i++ {
		id := fmt.Sprintf("w%d", i)
		workers[id] = start(t, id, dir, "worker", "--board", dsn, "--profile", "sh", "--skills", "txt", "--id", id,
			"--run", runID, "--ttl", "2s", "--workdir", filepath.Join(dir, id), "--log-level", "info")
	}

	// Mid-run: a worker holding a running task, and one etcd member.
	st, err := connect.Open(t.Context(), dsn, connect.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	victim, victimTask := "", ""
	deadline := time.Now().Add(time.Minute)
	for victim == "" {
		if time.Now().After(deadline) {
			t.Fatal("no worker was running a task within a minute")
		}
		rep, err := swarm.LoadReport(t.Context(), st, runID)
		if err == nil && rep.Totals.Done > 0 {
			for _, tr := range rep.Tasks {
				// Running with no outcome recorded: a task whose candidate
				// waits for the merge role is running too, but with its
				// token on the record, and killing its worker changes nothing.
				if tr.Status == "running" && tr.Token == 0 && workers[tr.Worker] != nil {
					victim, victimTask = tr.Worker, tr.ID
					break
				}
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	workers[victim].kill()
	c.Members[0].Kill()
	t.Logf("killed worker %s (running %s) and etcd member %s", victim, victimTask, c.Members[0].Name)

	t.Cleanup(func() {
		if t.Failed() {
			if rep, err := swarm.LoadReport(context.WithoutCancel(t.Context()), st, runID); err == nil {
				var b strings.Builder
				rep.WriteText(&b)
				t.Logf("the board's report:\n%s", b.String())
			}
		}
	})
	if err := run.wait(t, 3*time.Minute); err != nil {
		t.Fatalf("apiary run: %v\n%s", err, run.output(&run.stderr))
	}
	var rep swarm.Report
	if err := json.Unmarshal([]byte(run.output(&run.stdout)), &rep); err != nil {
		t.Fatalf("the run's JSON report: %v\n%s", err, run.output(&run.stdout))
	}
	if !rep.OK() || len(rep.Tasks) != e2eTasks {
		t.Fatalf("run not OK: %+v", rep)
	}
	// The killed worker's task was finished by someone else — unless its
	// candidate had reached the remote before the kill (the board still
	// said running), when the merge role integrated that one.
	vt := rep.Task(victimTask)
	switch {
	case vt.Status != "done" || !slices.Contains(vt.Workers, victim):
		t.Errorf("task %s (killed with %s): %+v; want done after %s's attempt", victimTask, victim, vt, victim)
	case vt.Worker == victim && vt.Integrated == "":
		t.Errorf("task %s (killed with %s): %+v; done by the killed worker but never integrated", victimTask, victim, vt)
	case vt.Worker == victim:
		t.Logf("task %s: %s's candidate was pushed before the kill and integrated (%s)", victimTask, victim, vt.Integrated)
	}
	// The surviving workers exit on their own once the run has finished.
	for id, w := range workers {
		if id != victim {
			if err := w.wait(t, time.Minute); err != nil {
				t.Errorf("worker %s: %v", id, err)
			}
		}
	}
	// Exactly once on the shared remote, by trailers, and every file there.
	log := git(t, remote, "log", "--first-parent", "--format=%(trailers:key=Apiary-Task,valueonly,separator=)", rep.StartHead+"..main")
	seen := map[string]int{}
	for _, l := range strings.Fields(log) {
		seen[l]++
	}
	files := strings.Fields(git(t, remote, "ls-tree", "--name-only", "main"))
	for i := 1; i <= e2eTasks; i++ {
		name := fmt.Sprintf("t%02d", i)
		if seen[name] != 1 {
			t.Errorf("task %s integrated %d times on the remote (%v)", name, seen[name], seen)
		}
		if !slices.Contains(files, name+".txt") {
			t.Errorf("%s.txt missing from the remote's main: %v", name, files)
		}
	}
	if len(seen) != e2eTasks {
		t.Errorf("integrated tasks %v; want exactly the plan's %d", seen, e2eTasks)
	}
}
