package runs

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apiary-dev/apiary/internal/envtest"
	"github.com/apiary-dev/apiary/internal/git/gittest"
	"github.com/apiary-dev/apiary/internal/rundir"
)

// fanAgent: a plan task spawns four children over the control socket
// (without waiting for them); every agent, parent or child, leaves a
// background process in its process group and waits.
const fanAgent = `
case "$APIARY_TASK" in
*-k*) ;;
*) mkdir -p out
   for k in 0 1 2 3; do spawn "$APIARY_TASK-k$k" "$APIARY_TASK/k$k/" false "out/k$k.json"; done ;;
esac
sleep 1000 &
wait
`

// BenchmarkCancelSubtree measures the cancel target: a run of 50
// tasks (10 plan tasks, each with 4 spawned children; 100 processes) is
// cancelled through its control socket, as `apiary cancel RUN` does, and
// the time from the request until /proc shows none of the run's processes
// is reported (gone-ms), with the acknowledgement (ack-ms: every receipt
// written). Each iteration also checks the outcome: no process, no
// worktree left, every receipt cancelled.
//
//	go test -run '^$' -bench CancelSubtree -benchtime 3x ./internal/swarm
func BenchmarkCancelSubtree(b *testing.B) {
	b.ReportAllocs()
	envtest.Command(b, "curl")
	p := filepath.Join(b.TempDir(), "agent.sh")
	if err := os.WriteFile(p, []byte("set -e\n"+spawnLib+fanAgent), 0o755); err != nil {
		b.Fatal(err)
	}
	var src strings.Builder
	fmt.Fprintf(&src, "version: 1\nmax_parallel: 10\nagents:\n  sh: {kind: command, argv: [\"sh\", %q]}\ntasks:\n", p)
	for i := range 10 {
		fmt.Fprintf(&src, "  - {id: p%d, objective: fan out, agent: sh, write_scope: [out/, p%d/]}\n", i, i)
	}
	var gone, ack time.Duration
	n := 0
	for b.Loop() {
		b.StopTimer()
		repo := gittest.NewRepo(b, map[string]string{"README": "x\n"})
		id := fmt.Sprintf("cancel-bench-%d", n)
		w := newWaiter()
		done := make(chan *Report, 1)
		ctx := boundedCtx(b)
		go func() {
			rep, err := Start(ctx, Config{Repo: repo, OnEvent: w.add, AgentGrace: 5 * time.Second},
				NewRun{ID: id, PlanFile: "plan.yaml", PlanData: []byte(src.String())})
			if err != nil {
				b.Error(err)
			}
			done <- rep
		}()
		w.waitFor(b, "50 agents", func(evs []Event) bool { return countKind(evs, rundir.EvAgentStarted, "") == 50 })
		waitProcs(b, id, "", 100)
		b.StartTimer()
		tok := operator(b, repo, id)
		ctl := DialControl(ControlPath(repo.Dir(), id))
		acked := make(chan error, 1)
		t0 := time.Now()
		go func() {
			_, err := ctl.Cancel(ctx, CancelRequest{Operator: tok, Reason: "benchmark"})
			ack += time.Since(t0)
			acked <- err
		}()
		for len(procsOf(id, "")) > 0 && ctx.Err() == nil {
			time.Sleep(time.Millisecond)
		}
		gone += time.Since(t0)
		if err := <-acked; err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		rep := <-done
		if rep == nil || rep.Status != "cancelled" || len(rep.Tasks) != 50 {
			b.Fatalf("report %+v", rep)
		}
		for _, tr := range rep.Tasks {
			if tr.Status != "cancelled" {
				b.Errorf("%s: %s", tr.ID, tr.Status)
			}
		}
		if ps := procsOf(id, ""); len(ps) != 0 {
			b.Fatalf("orphans: %v", ps)
		}
		if wts, _ := repo.Worktrees(b.Context()); len(wts) != 1 {
			b.Fatalf("worktrees left: %d", len(wts)-1)
		}
		n++
		b.StartTimer()
	}
	b.ReportMetric(float64(gone.Microseconds())/1000/float64(n), "gone-ms")
	b.ReportMetric(float64(ack.Microseconds())/1000/float64(n), "ack-ms")
}
