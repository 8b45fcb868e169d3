package runs

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apiary-dev/apiary/internal/git/gittest"
	"github.com/apiary-dev/apiary/internal/rundir"
)

// BenchmarkLongCheck: a plan of one task whose check takes 3 s and 8
// tasks with quick checks, all started at once (max_parallel 9); the long
// one's agent finishes first, so its candidate is first in line. With
// checks run in parallel ("parallel"), the short ones integrate while the
// long check runs; the baseline of the same run checks one candidate at a
// time ("serial", MaxParallelChecks 1: how the integrator worked before),
// which makes them wait behind it. Reported: the slowest short task's time
// from its agent's end to its integration (short-max-s), the long one's
// (long-s), the number of checks run (checks) and the run's wall time.
//
//	go test ./internal/runs -run '^$' -bench LongCheck -benchtime 3x
func BenchmarkLongCheck(b *testing.B) {
	var src strings.Builder
	src.WriteString("version: 1\nmax_parallel: 9\nagents:\n")
	src.WriteString("  fast: {kind: command, argv: [\"sh\", \"-c\", \"echo $APIARY_TASK > $APIARY_TASK.txt\"]}\n")
	src.WriteString("  slow: {kind: command, argv: [\"sh\", \"-c\", \"sleep 0.3; echo $APIARY_TASK > $APIARY_TASK.txt\"]}\n")
	src.WriteString("tasks:\n  - {id: long, objective: x, agent: fast, write_scope: [long.txt], checks: [\"sleep 3\"]}\n")
	for i := range 8 {
		fmt.Fprintf(&src, "  - {id: s%d, objective: x, agent: slow, write_scope: [s%d.txt], checks: [\"test -s s%d.txt\"]}\n", i, i, i)
	}
	for _, c := range []struct {
		name   string
		checks int
	}{{"parallel", 0}, {"serial", 1}} {
		b.Run(c.name, func(b *testing.B) {
			var shortMax, long, wall time.Duration
			checks, n := 0, 0
			for b.Loop() {
				repo := gittest.NewRepo(b, map[string]string{"README": "x\n"})
				var mu sync.Mutex
				finished, integrated := map[string]time.Time{}, map[string]time.Time{}
				onEvent := func(ev Event) {
					mu.Lock()
					defer mu.Unlock()
					switch ev.Kind {
					case rundir.EvAttemptFinished:
						finished[ev.Task] = ev.Time
					case rundir.EvIntegrated:
						integrated[ev.Task] = ev.Time
					case rundir.EvProcessStarted:
						if strings.HasPrefix(ev.Role, "check") {
							checks++
						}
					}
				}
				t0 := time.Now()
				rep, err := Start(boundedCtx(b), Config{Repo: repo, OnEvent: onEvent, MaxParallelChecks: c.checks},
					NewRun{PlanFile: "plan.yaml", PlanData: []byte(src.String())})
				if err != nil || !rep.OK() {
					b.Fatalf("run: %v %+v", err, rep)
				}
				wall += time.Since(t0)
				var shorts []time.Duration
				for task, at := range integrated {
					d := at.Sub(finished[task])
					if task == "long" {
						long += d
					} else {
						shorts = append(shorts, d)
					}
				}
				if len(shorts) != 8 {
					b.Fatalf("%d short tasks integrated", len(shorts))
				}
				shortMax += slices.Max(shorts)
				n++
			}
			b.ReportMetric(shortMax.Seconds()/float64(n), "short-max-s")
			b.ReportMetric(long.Seconds()/float64(n), "long-s")
			b.ReportMetric(float64(checks)/float64(n), "checks")
			b.ReportMetric(wall.Seconds()/float64(n), "wall-s")
		})
	}
}
