//go:build unix

package cli

import (
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/remote"

	"github.com/apiary-dev/apiary/internal/board"
	"github.com/apiary-dev/apiary/internal/dashboard"
)

// TestDashBrowserSwarm drives the dashboard of `apiary run --mode swarm
// --dash` in Chromium while two `apiary worker`s claim the tasks from the
// repository's local board: the page shows the swarm run with its DAG,
// the two live workers and who holds which task, every task succeeding
// live; `apiary top --json` lists the run as a swarm run.
func TestDashBrowserSwarm(t *testing.T) {
	t.Parallel()
	envtestGit(t)
	ws := startChromium(t)
	repo, planPath, _ := dashRepo(t, []dashTask{
		{id: "base", sleep: "1", est: 10},
		{id: "left", sleep: "2", deps: []string{"base"}, est: 10},
		{id: "right", sleep: "2", deps: []string{"base"}, est: 10},
		{id: "top", sleep: "1", deps: []string{"left", "right"}, est: 10},
	})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var stdout, stderr lockedBuffer
	runDone := make(chan error, 1)
	go func() {
		runDone <- cliRun(ctx, nil, &stdout, &stderr, "run", "--mode", "swarm", "--dash", "127.0.0.1:0", "--repo", repo, planPath)
	}()
	base := waitURL(t, &stderr, "dashboard on ")
	var run string
	for deadline := time.Now().Add(time.Minute); run == ""; time.Sleep(20 * time.Millisecond) {
		for _, l := range strings.Split(stdout.String(), "\n") {
			if id, ok := strings.CutPrefix(l, "run "); ok {
				run = strings.TrimSpace(id)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no run id:\n%s\n%s", stdout.String(), stderr.String())
		}
	}
	dsn := "local:" + filepath.Join(repo, board.DefaultLocalPath)
	var workers sync.WaitGroup
	for _, id := range []string{"w1", "w2"} {
		workers.Go(func() {
			var out lockedBuffer
			if err := cliRun(ctx, nil, &out, &out, "worker", "--board", dsn, "--profile", "worker", "--id", id, "--run", run,
				"--workdir", filepath.Join(t.TempDir(), id)); err != nil && ctx.Err() == nil {
				t.Errorf("worker %s: %v\n%s", id, err, out.String())
			}
		})
	}
	defer workers.Wait()

	actx, cancelA := remote.NewAllocator(t.Context(), ws, remote.NoModifyURL)
	defer cancelA()
	bctx, cancelC := chromedp.NewContext(actx)
	defer cancelC()
	shots := t.TempDir()
	t.Cleanup(func() {
		if t.Failed() {
			screenshot(t, bctx, filepath.Join(shots, "failure.png"))
			t.Logf("screenshots in %s", shots)
		}
	})
	if err := chromedp.Do(bctx, chromedp.EmulateViewport(1400, 900)); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(bctx, chromedp.Navigate(base+"/")); err != nil {
		t.Fatal(err)
	}
	js[float64](t, bctx, watchNodes)
	waitJS(t, bctx, "the swarm run's DAG", `document.getElementById("run-h").textContent.includes("(swarm)") && document.querySelectorAll('.node[data-task]').length === 4 && document.querySelectorAll('.dag svg > path').length === 4`)
	waitJS(t, bctx, "both workers", `["w1", "w2"].every((w) => [...document.querySelectorAll("#board-body tr")].some((r) => r.cells[0] && r.cells[0].textContent.startsWith(w + "@")))`)
	waitJS(t, bctx, "a task held by a worker", `[...document.querySelectorAll('#tasks tr[data-task]')].some((r) => /^w[12]$/.test(r.cells[3].textContent))`)
	screenshot(t, bctx, filepath.Join(shots, "dashboard-swarm-running.png"))
	waitJS(t, bctx, "every task to succeed", strings.Join([]string{nodeIs("base", "succeeded"), nodeIs("left", "succeeded"), nodeIs("right", "succeeded"), nodeIs("top", "succeeded")}, " && "))
	seen := js[map[string][]string](t, bctx, `window.__seen`)
	if s := seen["top"]; len(s) < 2 || !slices.Contains(s, "pending") {
		t.Errorf("node top showed %v: its progress was not seen live", s)
	}
	screenshot(t, bctx, filepath.Join(shots, "dashboard-swarm.png"))

	select {
	case err := <-runDone:
		if err != nil {
			t.Fatalf("swarm run: %v\n%s\n%s", err, stdout.String(), stderr.String())
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("the swarm run did not finish")
	}
	var top lockedBuffer
	if err := cliRun(t.Context(), nil, &top, io.Discard, "top", "--json", "--repo", repo, "--run", run); err != nil {
		t.Fatal(err)
	}
	var v dashboard.View
	if err := json.Unmarshal([]byte(top.String()), &v); err != nil || v.Run == nil {
		t.Fatalf("top --json: %v\n%s", err, top.String())
	}
	if len(v.Runs) != 1 || v.Runs[0].Mode != dashboard.ModeSwarm || v.Run.Status != dashboard.StatusSucceeded || len(v.Run.Tasks) != 4 {
		t.Errorf("top sees runs %+v, run %+v", v.Runs, v.Run)
	}
	for _, tr := range v.Run.Tasks {
		if tr.Worker != "w1" && tr.Worker != "w2" {
			t.Errorf("task %s was worked by %q", tr.ID, tr.Worker)
		}
	}
}
