//go:build unix

package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/remote"

	"github.com/apiary-dev/apiary/internal/dashboard"
	"github.com/apiary-dev/apiary/internal/envtest"
	"github.com/apiary-dev/apiary/internal/llmfake"
	"github.com/apiary-dev/apiary/internal/rundir"
)

// failingCheck is a check whose reason is only in its output, as a Go
// test's is.
const failingCheck = `sh -c 'echo "=== RUN   TestPow"; echo "    calc_test.go:9: Pow(2, 10) = 20, want 1024"; echo "--- FAIL: TestPow (0.00s)"; echo FAIL; exit 1'`

// watchGateway records the most requests the page ever showed waiting on
// a rate window, and the queue figures it showed then.
const watchGateway = `(() => {
  window.__maxWaiting = 0; window.__atMax = null;
  const look = () => {
    const w = document.querySelector('[data-count="waiting"]');
    if (!w) return;
    const n = Number(w.textContent);
    if (n > window.__maxWaiting) {
      window.__maxWaiting = n;
      window.__atMax = {waiting: n, queued: Number(document.querySelector('[data-count="queued"]').textContent),
        depth: Number(document.querySelector('[data-count="queue"]').textContent)};
    }
  };
  new MutationObserver(look).observe(document.body, {subtree: true, childList: true, characterData: true});
  return true;
})()`

// shoot takes a full-page screenshot at a viewport width into dir, named
// for the width, and reports whether the page fits it (nothing wider than
// the viewport).
func shoot(t *testing.T, ctx context.Context, dir, name string, width int64, mobile bool) (pageWidth int) {
	t.Helper()
	opts := []chromedp.EmulateViewportOption{}
	if mobile {
		opts = append(opts, chromedp.EmulateMobile)
	}
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(width, 900, opts...)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // let the layout settle
	screenshot(t, ctx, filepath.Join(dir, fmt.Sprintf("%s-%d.png", name, width)))
	return js[int](t, ctx, `document.documentElement.scrollWidth`)
}

// TestDashBrowserGateway drives the dashboard of `apiary run --dash` in
// Chromium while the run's own gateway paces the agents on a provider's
// rate window (llmfake: 4 requests per 6 s, told in its headers): the page
// shows the run's gateway, the requests waiting on the window, the learned
// limit, each key's remaining budget; a failed check's reason inline; the
// running task's spend and, after a cancellation, the run's cost as the
// ledger has them, to the cent; and, once the run ended, its final state
// instead of reconnecting. It looks right at 1400 px and at 420 px
// (screenshots in the test's temp dir).
func TestDashBrowserGateway(t *testing.T) {
	t.Parallel()
	ws := startChromium(t)
	f := moneyRepo(t, llmfake.Config{Output: llmfake.Output{TokensMean: 60},
		Limits: llmfake.Limits{RPM: 4, WindowLength: 6 * time.Second}}, []moneyTask{
		{id: "cheap", requests: 2},
		{id: "broken", requests: 1, check: failingCheck},
		{id: "busy", requests: 3},
		{id: "spender", requests: 2},
		{id: "after", requests: 1, deps: []string{"spender"}},
	})
	runCtx, stopRun := context.WithCancel(t.Context())
	defer stopRun()
	var stdout, stderr lockedBuffer
	runDone := make(chan error, 1)
	go func() {
		runDone <- cliRun(runCtx, f.vars, &stdout, &stderr, "run", "--dash", "127.0.0.1:0", "--repo", f.repo, f.plan)
	}()
	base := waitURL(t, &stderr, "dashboard on ")
	actx, cancelA := remote.NewAllocator(t.Context(), ws, remote.NoModifyURL)
	defer cancelA()
	ctx, cancelC := chromedp.NewContext(actx)
	defer cancelC()
	shots := t.TempDir()
	t.Cleanup(func() {
		if t.Failed() {
			screenshot(t, ctx, filepath.Join(shots, "failure.png"))
			t.Logf("screenshots in %s", shots)
		}
	})
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1400, 900)); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/")); err != nil {
		t.Fatal(err)
	}
	js[bool](t, ctx, watchGateway)

	// The run's own gateway is on the page, pacing on the learned window.
	waitJS(t, ctx, "the run's gateway", `document.querySelector('[data-upstream="models"]') !== null`)
	waitJS(t, ctx, "requests waiting on the rate window", `window.__maxWaiting > 0`)
	at := js[map[string]int](t, ctx, `window.__atMax`)
	if at["depth"] != at["queued"]+at["waiting"] || at["waiting"] < 1 {
		t.Errorf("the page showed queue depth %d = %d queued + %d waiting", at["depth"], at["queued"], at["waiting"])
	}
	waitJS(t, ctx, "the learned request limit", `[...document.querySelectorAll('[data-upstream="models"] tr')].some((r) => /^requests/.test(r.cells[0].textContent) && r.cells[1].textContent === "4")`)
	var view dashboard.GatewayView
	if code := getJSON(t, base+"/api/gateway", &view); code != 200 {
		t.Fatalf("GET /api/gateway: %d", code)
	}
	peak := 0
	for _, p := range view.History["models"] {
		peak = max(peak, p.Waiting)
	}
	if peak < 1 {
		t.Errorf("the gateway's history never had a request waiting on the window: %+v", view.History["models"])
	}

	// Why broken failed is on the page, not only in its check's log.
	waitJS(t, ctx, "broken's reason", `(document.querySelector('#tasks .why[data-task="broken"]') || {textContent: ""}).textContent.includes("Pow(2, 10) = 20, want 1024")`)

	// spender's spend while it still runs is the ledger's.
	waitFor(t, 2*time.Minute, func() bool {
		_, err := os.Stat(filepath.Join(f.flags, "spent-spender"))
		return err == nil
	}, "/dev/null")
	ids, err := rundir.List(f.repo)
	if err != nil || len(ids) != 1 {
		t.Fatalf("runs %v %v", ids, err)
	}
	run := ids[0]
	deadline := time.Now().Add(30 * time.Second)
	for {
		led := readLedger(t, f.repo, run)
		want := fmt.Sprintf("$%.4f", led.tasks["spender"].USD)
		got := js[string](t, ctx, `(document.querySelector('[data-usd="spender"]') || {textContent: ""}).textContent`)
		status := js[string](t, ctx, `(document.querySelector('.node[data-task="spender"]') || {dataset: {}}).dataset.status || ""`)
		if got == want && status == dashboard.StatusRunning && led.tasks["spender"].USD > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("spender shows %s (%s) while the ledger has %s", got, status, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Each attempt's key and what is left of its budget.
	waitJS(t, ctx, "the keys' budgets", `[...document.querySelectorAll('tr[data-budget]')].some((r) => r.cells[0].textContent.includes("/spender/a1") && r.cells[4].textContent.startsWith("$4."))`)
	pageWidth := shoot(t, ctx, shots, "dashboard-gateway", 1400, false)
	if pageWidth > 1400 {
		t.Errorf("at 1400 px the page is %d px wide", pageWidth)
	}
	// No cell of the task table wraps at 1400 px but the reasons.
	if tall := js[[]string](t, ctx, `[...document.querySelectorAll('#tasks tbody tr[data-task]')].filter((r) => r.getBoundingClientRect().height > 40).map((r) => r.dataset.task)`); len(tall) > 0 {
		t.Errorf("task rows %v wrap at 1400 px", tall)
	}
	if w := shoot(t, ctx, shots, "dashboard-gateway", 420, true); w > 420 {
		t.Errorf("at 420 px the page is %d px wide: it would render shrunk", w)
	}
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1400, 900)); err != nil {
		t.Fatal(err)
	}

	// Cancel spender from the page; the run ends; the page keeps its final
	// state, whose cost is the ledger's.
	click(t, ctx, `[data-key="cancel:spender"]`)
	waitJS(t, ctx, "the confirm dialog", `document.getElementById("confirm").open`)
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.ID("confirm-ok"))); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-runDone:
		if !errors.Is(err, errSilent) {
			t.Fatalf("run: %v, want a failed run\n%s", err, stderr.String())
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("the run did not end after the cancellation")
	}
	waitJS(t, ctx, "the page to show the run ended", `document.getElementById("conn").classList.contains("ended") && `+nodeIs("spender", "cancelled"))
	time.Sleep(3 * time.Second) // a reconnecting page would say so by now
	if txt := js[string](t, ctx, `document.getElementById("conn").textContent`); strings.Contains(txt, "reconnecting") {
		t.Errorf("after the run ended the page says %q", txt)
	}
	led := readLedger(t, f.repo, run)
	if got, want := js[string](t, ctx, `document.getElementById("run-cost").textContent`), fmt.Sprintf("$%.4f", led.total.USD); got != want {
		t.Errorf("the page's run cost %s, the ledger's %s", got, want)
	}
	for task, u := range led.tasks {
		if got, want := js[string](t, ctx, fmt.Sprintf(`(document.querySelector('[data-usd=%q]') || {textContent: ""}).textContent`, task)), fmt.Sprintf("$%.4f", u.USD); got != want {
			t.Errorf("task %s costs %s on the page, %s in the ledger", task, got, want)
		}
	}
	screenshot(t, ctx, filepath.Join(shots, "dashboard-gateway-ended.png"))
	if *docImage { // the README's: the run going on, at 1400 and 420 px
		for from, to := range map[string]string{"dashboard-gateway-1400.png": "dashboard.png", "dashboard-gateway-420.png": "dashboard-420.png"} {
			b, err := os.ReadFile(filepath.Join(shots, from))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(envtest.ModuleRoot(t), "docs", "img", to), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if dir := *shotDir; dir != "" {
		for _, n := range []string{"dashboard-gateway-1400.png", "dashboard-gateway-420.png", "dashboard-gateway-ended.png"} {
			if b, err := os.ReadFile(filepath.Join(shots, n)); err == nil {
				_ = os.WriteFile(filepath.Join(dir, n), b, 0o644)
			}
		}
	}
}
