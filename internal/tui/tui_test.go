package tui

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/apiary-dev/apiary/internal/dashboard"
)

// views is a Source over a fixed view, recording cancellations.
type views struct {
	mu        sync.Mutex
	v         *dashboard.View
	attempts  []dashboard.Attempt // every task's detail lists these
	cancelled []string
}

func (s *views) View(context.Context, string) (*dashboard.View, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.v, nil
}

func (s *views) Task(_ context.Context, run, task string) (*dashboard.TaskDetail, error) {
	for _, t := range s.v.Run.Tasks {
		if t.ID == task {
			return &dashboard.TaskDetail{Run: run, Task: t, Objective: "Do " + task + ".",
				Log: &dashboard.LogTail{Name: "attempt-1.log", Text: "starting\nworking on " + task + "\n"}, AttemptList: s.attempts}, nil
		}
	}
	return nil, fmt.Errorf("%w: task %s", dashboard.ErrNotFound, task)
}

func (s *views) Cancel(_ context.Context, run, task, reason string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cancelled = append(s.cancelled, run+"/"+task+": "+reason)
	return nil
}

const longReason = "calc_test.go:9: Pow(2, 10) = 20, want 1024 — the exponent is multiplied instead of raised, see calc.go:14"

func sampleView(tasks int) *dashboard.View {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	r := &dashboard.Run{ID: "20261201-120000-abcdef", Status: dashboard.StatusRunning, Mode: dashboard.ModeLocal, Started: now.Add(-time.Minute),
		Predicted: dashboard.Path{Tasks: []string{"t00", "t01"}}}
	for i := range tasks {
		t := dashboard.Task{ID: fmt.Sprintf("t%02d", i), Status: dashboard.StatusSucceeded, Attempts: 1, WallS: float64(i),
			Usage: dashboard.Usage{InputTokens: 10, OutputTokens: 20, USD: 0.0125, Known: true}}
		switch i {
		case 1:
			t.Status, t.Started = dashboard.StatusRunning, now.Add(-30*time.Second)
		case 2:
			t.Status = dashboard.StatusFailed
			t.Failure = &dashboard.Failure{Kind: dashboard.FailCheck, Summary: "the check exited 1 after 0.4s", Command: "go test ./...",
				Lines: []string{"--- FAIL: TestPow (0.00s)", "    " + longReason, "FAIL"}}
		}
		r.Tasks = append(r.Tasks, t)
	}
	r.Totals = dashboard.Totals{Tasks: tasks, Succeeded: tasks - 2, Failed: 1, Usage: dashboard.Usage{USD: 0.0125 * float64(tasks), Known: true}}
	return &dashboard.View{Time: now, Runs: []dashboard.RunSummary{{ID: r.ID, Status: r.Status}}, Run: r,
		Gateway: &dashboard.GatewaySnapshot{ClientInFlight: 14, Waiting: 12, Upstreams: []dashboard.Upstream{{Name: "models", InFlight: 2, ConcurrencyLimit: 8,
			Breaker: "closed", Requests: 40, Status429: 3, Refusals: map[string]float64{dashboard.RefuseBudget: 2},
			RateLimits: []dashboard.RateLimit{{Dim: "requests", Limit: 50, Available: 0, PeriodS: 60}}}}},
		Board:  &dashboard.BoardSnapshot{Hints: []dashboard.Hint{{Type: "overlap:go", State: dashboard.HintPending, Resolution: "keep both"}}},
		Escrow: []dashboard.EscrowRequest{{ID: "push-1", Task: "t05", Operation: "git push origin main", State: dashboard.EscrowPending}}}
}

// start makes a model of size w×h that has read its first view.
func start(t *testing.T, v *dashboard.View, w, h int) (*Model, *views) {
	t.Helper()
	src := &views{v: v}
	m := New(t.Context(), src, Options{NoColor: true})
	m.Update(tea.WindowSizeMsg{Width: w, Height: h})
	m.Update(m.load()())
	return m, src
}

// press sends keys, running the commands they return (not the ticker).
func press(m *Model, keys ...string) {
	for _, k := range keys {
		var msg tea.KeyMsg
		switch k {
		case "enter":
			msg = tea.KeyMsg{Type: tea.KeyEnter}
		case "esc":
			msg = tea.KeyMsg{Type: tea.KeyEsc}
		case "down":
			msg = tea.KeyMsg{Type: tea.KeyDown}
		case "tab":
			msg = tea.KeyMsg{Type: tea.KeyTab}
		default:
			msg = tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(k)}
		}
		_, cmd := m.Update(msg)
		run(m, cmd)
	}
}

func run(m *Model, cmd tea.Cmd) {
	if cmd == nil {
		return
	}
	msg := cmd()
	if _, quit := msg.(tea.QuitMsg); quit {
		return
	}
	if b, ok := msg.(tea.BatchMsg); ok {
		for _, c := range b {
			run(m, c)
		}
		return
	}
	if _, tick := msg.(tickMsg); tick {
		return
	}
	_, next := m.Update(msg)
	run(m, next)
}

// screen checks the frame fits w×h and returns its plain lines.
func screen(t *testing.T, m *Model, w, h int) []string {
	t.Helper()
	lines := strings.Split(m.View(), "\n")
	if len(lines) != h {
		t.Fatalf("%d lines on a %d-line terminal", len(lines), h)
	}
	for i, l := range lines {
		if n := ansi.StringWidth(l); n > w {
			t.Fatalf("line %d is %d columns on a %d-column terminal: %q", i, n, w, ansi.Strip(l))
		}
		lines[i] = ansi.Strip(l)
	}
	return lines
}

func has(lines []string, s string) bool {
	for _, l := range lines {
		if strings.Contains(l, s) {
			return true
		}
	}
	return false
}

func TestFits(t *testing.T) {
	t.Parallel()
	for _, size := range [][2]int{{80, 24}, {160, 45}} {
		w, h := size[0], size[1]
		t.Run(fmt.Sprintf("%dx%d", w, h), func(t *testing.T) {
			t.Parallel()
			m, _ := start(t, sampleView(40), w, h)
			lines := screen(t, m, w, h)
			if !strings.HasPrefix(lines[0], "apiary top") || !strings.Contains(lines[0], "2 need you") {
				t.Errorf("header %q", lines[0])
			}
			if !strings.Contains(lines[h-1], "q quit") {
				t.Errorf("footer %q", lines[h-1])
			}
			if !has(lines, "run 20261201-120000-abcdef") || !has(lines, "cost $0.5000") {
				t.Errorf("no run summary:\n%s", strings.Join(lines, "\n"))
			}
			// The selection stays on screen as it moves down the 40 tasks.
			for range 39 {
				press(m, "down")
			}
			lines = screen(t, m, w, h)
			if !has(lines, "  t39  ") || has(lines, "* t00  ") {
				t.Errorf("after 39 downs t39 is not shown (or t00 still is):\n%s", strings.Join(lines, "\n"))
			}
			// Every tab fits too.
			for _, k := range []string{"2", "3", "1"} {
				press(m, k)
				screen(t, m, w, h)
			}
		})
	}
}

// TestReasonNotCut: on a narrow terminal the selected task's reason is
// shown whole, wrapped under the table.
func TestReasonNotCut(t *testing.T) {
	t.Parallel()
	m, _ := start(t, sampleView(5), 80, 24)
	press(m, "j", "j")
	text := strings.Join(screen(t, m, 80, 24), " ")
	text = strings.Join(strings.Fields(text), " ")
	if !strings.Contains(text, "Pow(2, 10) = 20, want 1024") || !strings.Contains(text, "calc.go:14") {
		t.Errorf("the reason is not shown whole:\n%s", text)
	}
}

func TestDetailAndCancel(t *testing.T) {
	t.Parallel()
	m, src := start(t, sampleView(5), 80, 24)
	press(m, "j", "j", "enter")
	lines := screen(t, m, 80, 24)
	if !has(lines, "task t02") || !has(lines, "why it failed: the check exited 1") || !has(lines, "$ go test ./...") || !has(lines, "Pow(2, 10) = 20") {
		t.Errorf("detail of t02:\n%s", strings.Join(lines, "\n"))
	}
	press(m, "c") // t02 failed: nothing to cancel
	if lines = screen(t, m, 80, 24); !strings.Contains(lines[23], "nothing to cancel") {
		t.Errorf("footer %q", lines[23])
	}
	press(m, "esc", "k") // back to the table, onto t01, which runs
	if has(screen(t, m, 80, 24), "task t01") {
		t.Error("esc did not leave the detail")
	}
	press(m, "c")
	if lines = screen(t, m, 80, 24); !strings.Contains(lines[23], "Cancel task t01 and every task it spawned? y/n") {
		t.Errorf("no confirmation: %q", lines[23])
	}
	press(m, "n")
	press(m, "c", "y")
	src.mu.Lock()
	got := src.cancelled
	src.mu.Unlock()
	if len(got) != 1 || got[0] != "20261201-120000-abcdef/t01: cancelled from apiary top" {
		t.Errorf("cancellations %q, want one of t01 after y (none after n)", got)
	}
	if lines = screen(t, m, 80, 24); !strings.Contains(lines[23], "cancelled t01") {
		t.Errorf("footer after cancelling %q", lines[23])
	}
}

func TestTabs(t *testing.T) {
	t.Parallel()
	m, _ := start(t, sampleView(3), 160, 45)
	press(m, "tab")
	lines := screen(t, m, 160, 45)
	for _, want := range []string{"queue depth 12: 0 waiting for a slot, 12 waiting on a rate window", "upstream models", "refused: budget 2", "limit requests", "per 1m00s"} {
		if !has(lines, want) {
			t.Errorf("gateway tab lacks %q:\n%s", want, strings.Join(lines, "\n"))
		}
	}
	press(m, "3")
	lines = screen(t, m, 160, 45)
	if !has(lines, `escrow push-1: task t05 asks to run "git push origin main"`) || !has(lines, "hint overlap:go waits for a review") {
		t.Errorf("board tab:\n%s", strings.Join(lines, "\n"))
	}
	if _, cmd := m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("q")}); cmd == nil {
		t.Error("q does not quit")
	} else if _, ok := cmd().(tea.QuitMsg); !ok {
		t.Error("q does not quit")
	}
}

func TestFriendly(t *testing.T) {
	t.Parallel()
	for err, want := range map[error]string{
		fmt.Errorf("%w: no run source", dashboard.ErrUnavailable):         "not connected",
		fmt.Errorf("%w: run %s is not live", dashboard.ErrConflict, "r1"): "run r1 is not live",
		fmt.Errorf("x: %w", context.Canceled):                             "interrupted",
		errors.New("board local:/x: no such file"):                        "board local:/x: no such file",
	} {
		if got := friendly(err); got != want {
			t.Errorf("friendly(%v) = %q, want %q", err, got, want)
		}
	}
}

// TestDetailAttemptCost: an attempt's dollars show when measured and say
// n/a when nothing measured them, never $0.0000.
func TestDetailAttemptCost(t *testing.T) {
	t.Parallel()
	src := &views{v: sampleView(3)}
	at := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	exit := 0
	src.attempts = []dashboard.Attempt{
		{N: 1, Role: "worker", Started: at, Finished: &at, Exit: &exit},
		{N: 2, Role: "worker", Started: at, Finished: &at, Exit: &exit, Usage: dashboard.Usage{InputTokens: 10, USD: 0.25, Known: true}},
	}
	m := New(t.Context(), src, Options{NoColor: true})
	m.Update(tea.WindowSizeMsg{Width: 100, Height: 40})
	m.Update(m.load()())
	press(m, "enter")
	lines := screen(t, m, 100, 40)
	var one, two string
	for _, l := range lines {
		switch {
		case strings.Contains(l, "#1 worker"):
			one = l
		case strings.Contains(l, "#2 worker"):
			two = l
		}
	}
	if !strings.HasSuffix(strings.TrimSpace(one), "exit 0  n/a") || !strings.HasSuffix(strings.TrimSpace(two), "exit 0  $0.2500") {
		t.Errorf("attempt lines %q and %q:\n%s", one, two, strings.Join(lines, "\n"))
	}
}
