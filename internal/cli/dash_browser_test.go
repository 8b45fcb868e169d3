//go:build unix

package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/chromedp/chromedp/remote"

	"github.com/apiary-dev/apiary/internal/board"
	"github.com/apiary-dev/apiary/internal/board/connect"
	"github.com/apiary-dev/apiary/internal/envtest"
	"github.com/apiary-dev/apiary/internal/rundir"
	"github.com/apiary-dev/apiary/internal/runs"
)

// devtoolsWriter watches Chromium's stderr for its DevTools address.
type devtoolsWriter struct {
	mu   sync.Mutex
	buf  strings.Builder
	url  chan string
	sent bool
}

func (w *devtoolsWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.buf.Len() < 1<<20 {
		w.buf.Write(p)
	}
	if !w.sent {
		s := w.buf.String()
		if i := strings.Index(s, "DevTools listening on "); i >= 0 {
			rest := s[i+len("DevTools listening on "):]
			if j := strings.IndexByte(rest, '\n'); j >= 0 {
				w.url <- strings.TrimSpace(rest[:j])
				w.sent = true
			}
		}
	}
	return len(p), nil
}

func (w *devtoolsWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// startChromium starts headless Chromium in its own process group with a
// fresh profile and returns its DevTools websocket address. The group is
// killed when the test ends, and the test fails if any of it survives.
func startChromium(t *testing.T) string {
	t.Helper()
	bin := envtest.Command(t, "chromium")
	ver, err := exec.CommandContext(t.Context(), bin, "--version").Output()
	if err != nil || !strings.Contains(string(ver), "Chromium") {
		t.Fatalf("%s --version: %v %q: not Chromium (scripts/deps.sh installs Debian's)", bin, err, ver)
	}
	t.Logf("browser: %s, %s", bin, strings.TrimSpace(string(ver)))
	cmd := exec.CommandContext(t.Context(), bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--no-first-run", "--no-default-browser-check",
		"--user-data-dir="+t.TempDir(), "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0",
		"--window-size=1280,1000", "about:blank")
	cmd.SysProcAttr = envtest.ChildGroup()
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	out := &devtoolsWriter{url: make(chan string, 1)}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	t.Cleanup(func() {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		_ = cmd.Wait()
		// Nothing of the group may outlive the test.
		deadline := time.Now().Add(5 * time.Second)
		for syscall.Kill(-pgid, 0) == nil {
			if time.Now().After(deadline) {
				t.Errorf("chromium's process group %d survived", pgid)
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
	select {
	case u := <-out.url:
		return u
	case <-time.After(60 * time.Second):
		t.Fatalf("chromium printed no DevTools address:\n%s", out.String())
	}
	return ""
}

// js evaluates an expression and decodes its value.
func js[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// waitJS waits until a predicate holds in the page.
func waitJS(t *testing.T, ctx context.Context, what, expr string) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(90*time.Second), chromedp.WithPollingInterval(50*time.Millisecond))); err != nil {
		t.Fatalf("waiting for %s (%s): %v", what, expr, err)
	}
}

func screenshot(t *testing.T, ctx context.Context, paths ...string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range paths {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// click clicks the element sel names with the mouse. The page redraws
// the run as events arrive, so the element found may be replaced before
// the click lands; then it is looked up again, a few times.
func click(t *testing.T, ctx context.Context, sel string) {
	t.Helper()
	var err error
	for range 20 {
		if err = chromedp.Do(ctx, chromedp.Click(chromedp.CSS(sel))); err == nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("click %s: %v", sel, err)
}

// focused describes the focused element.
type focused struct {
	Tag  string `json:"tag"`
	Key  string `json:"key"`
	Name string `json:"name"`
}

const describeFocus = `(() => {
  const a = document.activeElement;
  if (!a || a === document.body) return {tag: "BODY", key: "", name: ""};
  let name = a.getAttribute("aria-label") || "";
  if (!name && a.id) { const l = document.querySelector('label[for="' + a.id + '"]'); if (l) name = l.textContent; }
  if (!name) name = a.textContent;
  return {tag: a.tagName, key: a.dataset.key || a.id || a.getAttribute("href") || "", name: name.trim().replace(/\s+/g, " ")};
})()`

// watchNodes records, for every DAG node, the statuses it showed, in order.
const watchNodes = `(() => {
  window.__load = Math.random();
  window.__seen = {};
  window.__errors = [];
  window.addEventListener("error", (e) => window.__errors.push(String(e.message)));
  document.addEventListener("securitypolicyviolation", (e) => window.__errors.push("CSP " + e.violatedDirective + " " + e.blockedURI));
  const look = () => document.querySelectorAll(".node[data-task]").forEach((n) => {
    const s = window.__seen[n.dataset.task] || (window.__seen[n.dataset.task] = []);
    if (s[s.length - 1] !== n.dataset.status) s.push(n.dataset.status);
  });
  look();
  new MutationObserver(look).observe(document.body, {subtree: true, childList: true, attributes: true});
  return window.__load;
})()`

func nodeIs(task, status string) string {
	return fmt.Sprintf(`(document.querySelector('.node[data-task=%q]') || {dataset: {}}).dataset.status === %q`, task, status)
}

// TestDashBrowser drives the dashboard in Debian's headless Chromium
// during a run of command agents that sleep: it watches the DAG progress
// live over SSE, reads the run's /metrics, opens a task, walks the page
// with the keyboard and approves a pending resolution hint with it,
// approves an escrowed operation, sees a simulator plot, cancels a running
// task through the confirm dialog, measures the page weight, and checks
// the run's files, the escrow queue and the board afterwards.
func TestDashBrowser(t *testing.T) {
	t.Parallel()
	envtestGit(t)
	ws := startChromium(t)
	repo, planPath, _ := dashRepo(t, []dashTask{
		{id: "setup", sleep: "1.5", est: 10},
		{id: "left", sleep: "2.5", deps: []string{"setup"}, est: 40},
		{id: "right", sleep: "1", deps: []string{"setup"}, est: 10},
		{id: "join", sleep: "1", deps: []string{"left", "right"}, est: 10},
		{id: "slow", sleep: "300", est: 5},
		{id: "after-slow", sleep: "0", deps: []string{"slow"}, est: 5},
	})
	st, err := connect.Open(t.Context(), "local:"+filepath.Join(repo, board.DefaultLocalPath), connect.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, first, err := st.RecordConflict(t.Context(), board.Conflict{Type: "readme-overlap", Tasks: []string{"left", "right"},
		Files: []string{"README.md"}, Resolution: "keep both sections, left's first"}); err != nil || !first {
		t.Fatalf("conflict: %v %v", first, err)
	}

	// A simulator plot where the dashboard looks for plots.
	plot, err := os.ReadFile(filepath.Join(envtest.ModuleRoot(t), "docs", "plots", "swarm-makespan.svg"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(rundir.State(repo, "plots"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(rundir.State(repo, "plots", "swarm-makespan.svg"), plot, 0o644); err != nil {
		t.Fatal(err)
	}

	// An escrowed operation of another run waits for a human.
	esc, err := json.Marshal(runs.EscrowRequest{ID: "push-1", Run: "20260101-000000-abcdef", Task: "release", Kind: "command",
		Operation: "git push origin main", Chain: []string{"release", "root"}, State: runs.EscrowPending, Created: time.Now().UTC()})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(rundir.State(repo, "escrow"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(rundir.State(repo, "escrow", "push-1.json"), esc, 0o644); err != nil {
		t.Fatal(err)
	}

	runCtx, stopRun := context.WithCancel(t.Context())
	defer stopRun()
	var stdout, stderr lockedBuffer
	runDone := make(chan error, 1)
	go func() {
		runDone <- cliRun(runCtx, nil, &stdout, &stderr, "run", "--dash", "127.0.0.1:0", "--repo", repo, planPath)
	}()
	base := waitURL(t, &stderr, "dashboard on ")

	actx, cancelA := remote.NewAllocator(t.Context(), ws, remote.NoModifyURL)
	defer cancelA()
	ctx, cancelC := chromedp.NewContext(actx)
	defer cancelC()
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/")); err != nil {
		t.Fatal(err)
	}
	load := js[float64](t, ctx, watchNodes)
	shots := t.TempDir()

	// The DAG completes live: every task but slow succeeds while the page
	// stays loaded, and the statuses were seen changing.
	waitJS(t, ctx, "the run's DAG", `document.querySelectorAll('.node[data-task]').length === 6`)
	waitJS(t, ctx, "the fast tasks to succeed", strings.Join([]string{nodeIs("setup", "succeeded"), nodeIs("left", "succeeded"),
		nodeIs("right", "succeeded"), nodeIs("join", "succeeded"), nodeIs("slow", "running"), nodeIs("after-slow", "pending")}, " && "))
	seen := js[map[string][]string](t, ctx, `window.__seen`)
	for _, task := range []string{"left", "join"} {
		s := seen[task]
		if len(s) < 2 || s[len(s)-1] != "succeeded" || !slices.Contains(s, "running") && !slices.Contains(s, "pending") {
			t.Errorf("node %s showed %v: its progress was not seen live", task, s)
		}
	}
	if got := js[float64](t, ctx, `window.__load`); got != load {
		t.Fatal("the page reloaded; updates must come over the event stream")
	}
	if !js[bool](t, ctx, `document.getElementById("conn").textContent === "live"`) {
		t.Error("the connection indicator does not say live")
	}
	crit := js[[]string](t, ctx, `[...document.querySelectorAll('.node.crit')].map((n) => n.dataset.task)`)
	if !slices.Equal(crit, []string{"setup", "left", "join"}) {
		t.Errorf("critical path highlighted on %v, want setup, left, join", crit)
	}
	if n := js[int](t, ctx, `document.querySelectorAll('.dag path.crit').length`); n != 2 {
		t.Errorf("%d critical edges drawn, want 2", n)
	}
	// What needs a person is on top: the escrowed push and the pending
	// hint. A request of this run's running task makes it "wait for you".
	ids, err := rundir.List(repo)
	if err != nil || len(ids) != 1 {
		t.Fatalf("runs %v %v", ids, err)
	}
	esc2, err := json.Marshal(runs.EscrowRequest{ID: "rm-2", Run: ids[0], Task: "slow", Kind: "command",
		Operation: "rm -rf build", Chain: []string{"slow", "root"}, State: runs.EscrowPending, Created: time.Now().UTC()})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(rundir.State(repo, "escrow", "rm-2.json"), esc2, 0o644); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, "the needs-you banner", `!document.getElementById("needs").hidden && document.getElementById("needs-h").textContent === "3 things need you" && document.title === "(3) apiary dashboard"`)
	waitJS(t, ctx, "slow waiting for a person", `(document.querySelector('.node[data-task="slow"]') || {classList: {contains: () => false}}).classList.contains("needs") && document.querySelector('.why[data-task="slow"]').textContent.includes("escrow rm-2: rm -rf build")`)
	if top := js[float64](t, ctx, `document.getElementById("needs").getBoundingClientRect().top`); top > 120 {
		t.Errorf("the needs-you banner is %g px down the page", top)
	}
	screenshot(t, ctx, filepath.Join(shots, "dashboard-running.png"))
	// The run's Prometheus metrics, served beside the page, counted the
	// four tasks done so far and slow's attempt still running.
	metrics := httpGet(t, base+"/metrics")
	for _, want := range []string{`apiary_runtime_tasks_done_total{status="succeeded"} 4`, `apiary_runtime_attempts_running{role="worker"} 1`,
		`apiary_runtime_attempts_started_total{role="worker"} 5`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}

	// Open a task.
	click(t, ctx, `.node[data-task="left"]`)
	waitJS(t, ctx, "left's details", `document.getElementById("task-h").textContent === "Task left" && document.querySelector("#task-body pre") !== null`)
	detail := js[string](t, ctx, `document.getElementById("task-body").innerText`)
	for _, want := range []string{"Fencing token", "Lease", "Every gate passed.", "left.txt", "+1", "test -f left.txt", "left done", "Write left.txt.", "Integrated"} {
		if !strings.Contains(detail, want) {
			t.Errorf("task details lack %q:\n%s", want, detail)
		}
	}
	if !strings.Contains(detail, "merge") && !strings.Contains(detail, "fast-forward") {
		t.Errorf("task details do not say how left was integrated:\n%s", detail)
	}
	if !js[bool](t, ctx, `location.hash.includes("task=left") && document.querySelector('.node[data-task="left"]').getAttribute("aria-pressed") === "true"`) {
		t.Error("the open task is not in the URL or not marked on the graph")
	}

	// Keyboard: from the top, Tab walks every control in reading order;
	// each is a link, button or field with a name. Type a note into the
	// hint's field and approve it with Enter.
	first := js[string](t, ctx, `[...document.querySelectorAll('a[href], button, input, summary, [tabindex]:not([tabindex="-1"])')]
	  .filter((e) => e.getClientRects().length > 0)[0].className`)
	if first != "skip" {
		t.Errorf("the first control in reading order is %q, want the skip link", first)
	}
	js[bool](t, ctx, `document.querySelector(".skip").focus(), true`)
	walk := []focused{js[focused](t, ctx, describeFocus)}
	for i := 0; i < 200; i++ {
		if err := chromedp.Do(ctx, chromedp.KeyEvent(kb.Tab)); err != nil {
			t.Fatal(err)
		}
		f := js[focused](t, ctx, describeFocus)
		walk = append(walk, f)
		if f.Key == "hint-note:readme-overlap" {
			if err := chromedp.Do(ctx, chromedp.KeyEvent("ok from the keyboard")); err != nil {
				t.Fatal(err)
			}
		}
		if f.Key == "approve:readme-overlap" {
			break
		}
	}
	order := func(key string) int {
		return slices.IndexFunc(walk, func(f focused) bool {
			return f.Key == key || strings.HasPrefix(f.Key, key) && strings.HasSuffix(key, ":")
		})
	}
	if walk[0].Tag != "A" || walk[0].Name != "Skip to the run" {
		t.Errorf("walk starts at %+v, want the skip link", walk[0])
	}
	steps := []string{"needs:escrow:push-1", "run:", "node:setup", "node:left", "node:slow", "open:setup", "cancel:slow", "task-close", "escrow-approve:push-1", "hint-note:readme-overlap", "approve:readme-overlap"}
	last := -1
	for _, k := range steps {
		i := order(k)
		if i < 0 || i < last {
			t.Errorf("Tab order: %s at %d (after %d); walk %+v", k, i, last, walk)
		}
		last = i
	}
	for _, f := range walk {
		if !slices.Contains([]string{"A", "BUTTON", "INPUT", "PRE", "SUMMARY"}, f.Tag) || f.Name == "" {
			t.Errorf("focus reached %+v: not a named control", f)
		}
	}
	if err := chromedp.Do(ctx, chromedp.KeyEvent(kb.Enter)); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, "the hint approved", `(document.querySelector('tr[data-hint="readme-overlap"]') || {textContent: ""}).textContent.includes("approved")`)

	if msg := js[string](t, ctx, `document.getElementById("alert").hidden ? "" : document.getElementById("alert").textContent`); msg != "" {
		t.Errorf("the page shows an error after approving: %s", msg)
	}
	// Approve the escrowed push through its confirm dialog.
	click(t, ctx, `[data-key="escrow-approve:push-1"]`)
	waitJS(t, ctx, "the escrow dialog", `document.getElementById("confirm").open && document.activeElement.id === "confirm-no"`)
	if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.ID("confirm-note"), "release day"), chromedp.Click(chromedp.ID("confirm-ok"))); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, "the escrow request approved", `(document.querySelector('tr[data-escrow="push-1"]') || {textContent: ""}).textContent.includes("approved")`)
	click(t, ctx, `[data-key="escrow-deny:rm-2"]`)
	waitJS(t, ctx, "nothing more to decide", `document.getElementById("needs").hidden && document.title === "apiary dashboard" && !document.querySelector('.node.needs')`)

	// The simulator's plot is shown (and has loaded).
	if err := chromedp.Do(ctx, chromedp.ScrollIntoView(chromedp.ID("plots"))); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, "the plot", `[...document.querySelectorAll("#plots-body img")].some((i) => i.complete && i.naturalWidth > 0 && i.alt.includes("makespan"))`)
	// The skip link takes the keyboard past the runs to the run.
	js[bool](t, ctx, `document.querySelector(".skip").focus(), true`)
	if err := chromedp.Do(ctx, chromedp.KeyEvent(kb.Enter)); err != nil {
		t.Fatal(err)
	}
	if f := js[focused](t, ctx, describeFocus); f.Key != "main" || !js[bool](t, ctx, `location.hash.includes("task=left")`) {
		t.Errorf("after the skip link focus is on %+v (hash %s)", f, js[string](t, ctx, `location.hash`))
	}

	// Every button in the accessibility tree has a name.
	tree, err := chromedp.Run(ctx, chromedp.Action[accessibility.GetFullAXTreeResult](func(ctx context.Context, tg *chromedp.Target) (accessibility.GetFullAXTreeResult, error) {
		return cdp.Call(ctx, tg, accessibility.GetFullAXTree, accessibility.GetFullAXTreeParams{})
	}))
	if err != nil {
		t.Fatal(err)
	}
	buttons := 0
	for _, n := range tree.Nodes {
		if n.Ignored || n.Role == nil || axString(n.Role) != "button" {
			continue
		}
		buttons++
		if n.Name == nil || strings.TrimSpace(axString(n.Name)) == "" {
			t.Errorf("a button without an accessible name (DOM node %d)", n.BackendDOMNodeID)
		}
	}
	if buttons < 10 {
		t.Errorf("only %d buttons in the accessibility tree", buttons)
	}

	// Cancel the running task: the dialog opens on its safe choice.
	click(t, ctx, `[data-key="cancel:slow"]`)
	waitJS(t, ctx, "the confirm dialog", `document.getElementById("confirm").open && document.activeElement.id === "confirm-no"`)
	if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.ID("confirm-note"), "stopped by the browser test"),
		chromedp.Click(chromedp.ID("confirm-ok"))); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, "slow cancelled, its dependent skipped, the run over", nodeIs("slow", "cancelled")+" && "+nodeIs("after-slow", "skipped")+
		` && document.querySelector("#run-body .summary .badge").textContent !== "running"`)
	if got := js[float64](t, ctx, `window.__load`); got != load {
		t.Error("the page reloaded")
	}
	screenshot(t, ctx, filepath.Join(shots, "dashboard.png"))
	if w := shoot(t, ctx, shots, "dashboard", 420, true); w > 420 {
		t.Errorf("at 420 px the page is %d px wide: it would render shrunk", w)
	}
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 1000)); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshots in %s", shots)
	if dir := *shotDir; dir != "" { // for a person to look at
		for _, n := range []string{"dashboard-running.png", "dashboard.png", "dashboard-420.png"} {
			if b, err := os.ReadFile(filepath.Join(shots, n)); err == nil {
				_ = os.WriteFile(filepath.Join(dir, n), b, 0o644)
			}
		}
	}

	// The page weighs what its embedded assets weigh, and ran cleanly.
	weight := js[float64](t, ctx, `performance.getEntriesByType("navigation").concat(performance.getEntriesByType("resource"))
	  .filter((e) => e.name.includes("/assets/") || e.entryType === "navigation").reduce((s, e) => s + e.decodedBodySize, 0)`)
	t.Logf("page weight: %.0f bytes", weight)
	if weight <= 0 || weight >= 300<<10 {
		t.Errorf("page weight %.0f bytes, want under 300 KB", weight)
	}
	if errs := js[[]string](t, ctx, `window.__errors`); len(errs) > 0 {
		t.Errorf("the page reported errors: %q", errs)
	}

	// The run ended as the page said, and the board holds the review.
	select {
	case err := <-runDone:
		if !errors.Is(err, errSilent) {
			t.Errorf("run: %v, want a failed run (a task was cancelled)\n%s", err, stderr.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the run did not end after the cancellation")
	}
	waitJS(t, ctx, "the page to keep the final state", `document.getElementById("conn").classList.contains("ended") && `+nodeIs("slow", "cancelled"))
	rep, err := runs.LoadReport(repo, ids[0])
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"setup": "succeeded", "left": "succeeded", "right": "succeeded", "join": "succeeded", "slow": "cancelled", "after-slow": "skipped"}
	for _, tr := range rep.Tasks {
		if tr.Status != want[tr.ID] {
			t.Errorf("task %s %s, want %s (%s)", tr.ID, tr.Status, want[tr.ID], tr.Reason)
		}
	}
	if slow := rep.Task("slow"); slow == nil || !strings.Contains(slow.Reason, "stopped by the browser test") {
		t.Errorf("slow's receipt does not give the reason typed in the dialog: %+v", slow)
	}
	h, err := st.Hint(t.Context(), "readme-overlap")
	if err != nil || h.State != board.HintApproved || h.Reviewer != "dashboard" || h.Note != "ok from the keyboard" {
		t.Errorf("hint %+v %v", h, err)
	}
	if r, err := runs.NewEscrowQueue(repo, nil).Get("push-1"); err != nil || r.State != runs.EscrowApproved || r.DecidedBy != "dashboard" || r.Note != "release day" {
		t.Errorf("escrow push-1 %+v %v, want approved by dashboard with the note typed", r, err)
	}
	if _, err := os.Stat(filepath.Join(shots, "dashboard.png")); err != nil {
		t.Error(err)
	}
}

// axString decodes an accessibility value holding a string.
func axString(v *accessibility.Value) string {
	var s string
	if json.Unmarshal([]byte(v.Value), &s) != nil {
		return ""
	}
	return s
}

// httpGet returns the body of a 200 answer to GET url.
func httpGet(t *testing.T, url string) string {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v", url, resp.StatusCode, err)
	}
	return string(b)
}
