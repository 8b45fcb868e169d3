// Package tui is the terminal UI of `apiary top`: the dashboard's view of
// the runs, the gateway and the board in a full-screen terminal program
// (github.com/charmbracelet/bubbletea, styled with lipgloss). It fits the
// terminal it is given, from 80×24 up: q quits, tab (or 1, 2, 3) switches
// between the run, the gateway and the board, ↑/↓ (k/j) select a task,
// enter shows its detail (why it failed, its log's tail, its usage), esc
// goes back, c cancels the selected task after a y/n confirmation, and r
// refreshes at once; it refreshes by itself every Options.Interval.
//
// It reads and acts through Source, which the command line implements
// over the dashboard's sources; it imports no runtime package.
package tui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/apiary-dev/apiary/internal/dashboard"
)

// Source is what the terminal UI reads and acts through. Implementations
// must be safe for concurrent use.
type Source interface {
	// View gathers the dashboard's view with run (the newest when "").
	View(ctx context.Context, run string) (*dashboard.View, error)
	// Task returns everything about one task of a run.
	Task(ctx context.Context, run, task string) (*dashboard.TaskDetail, error)
	// Cancel cancels a task and its subtree.
	Cancel(ctx context.Context, run, task, reason string) error
}

// Options shape the UI. The zero value refreshes every 2 s on the newest
// run.
type Options struct {
	// Run is the run shown first ("" is the newest).
	Run string
	// Interval is how often the view is read again; 0 is 2 s.
	Interval time.Duration
	// Reason is recorded with a cancellation; "" is "cancelled from apiary top".
	Reason string
	// NoColor renders without colors (the styles stay: bold, reverse).
	NoColor bool
}

// Tabs of the UI.
const (
	TabRun = iota
	TabGateway
	TabBoard
	numTabs
)

var tabNames = [numTabs]string{"Run", "Gateway", "Board"}

// Model is the UI's state: a bubbletea model. Its zero value is not
// usable; see New.
type Model struct {
	ctx  context.Context
	src  Source
	opts Options
	st   styles

	width, height int
	tab           int
	run           string // the run shown ("" until the first view names one)
	view          *dashboard.View
	err           error
	sel           int    // the selected task, an index into view.Run.Tasks
	detail        string // the task whose detail is shown, "" for none
	task          *dashboard.TaskDetail
	taskErr       error
	confirm       string // the task a cancellation waits to be confirmed for
	flash         string // the last action's outcome
	scroll        int    // the first line shown of a long tab or detail
	loading       bool
}

// New returns the UI's model reading src; ctx bounds every read and
// action.
func New(ctx context.Context, src Source, o Options) *Model {
	if o.Interval <= 0 {
		o.Interval = 2 * time.Second
	}
	if o.Reason == "" {
		o.Reason = "cancelled from apiary top"
	}
	return &Model{ctx: ctx, src: src, opts: o, st: newStyles(!o.NoColor), run: o.Run, width: 80, height: 24, loading: true}
}

// Run runs the UI on a terminal until the user quits or ctx ends.
func Run(ctx context.Context, src Source, o Options, in io.Reader, out io.Writer) error {
	p := tea.NewProgram(New(ctx, src, o), tea.WithContext(ctx), tea.WithInput(in), tea.WithOutput(out), tea.WithAltScreen())
	_, err := p.Run()
	if errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil {
		return nil // interrupted
	}
	return err
}

// Messages.
type (
	viewMsg struct {
		v   *dashboard.View
		err error
	}
	taskMsg struct {
		name string
		d    *dashboard.TaskDetail
		err  error
	}
	cancelMsg struct {
		task string
		err  error
	}
	tickMsg struct{}
)

func (m *Model) load() tea.Cmd {
	ctx, src, run := m.ctx, m.src, m.run
	return func() tea.Msg {
		v, err := src.View(ctx, run)
		return viewMsg{v, err}
	}
}

func (m *Model) loadTask(name string) tea.Cmd {
	ctx, src, run := m.ctx, m.src, m.run
	return func() tea.Msg {
		d, err := src.Task(ctx, run, name)
		return taskMsg{name, d, err}
	}
}

func (m *Model) tick() tea.Cmd {
	return tea.Tick(m.opts.Interval, func(time.Time) tea.Msg { return tickMsg{} })
}

// Init reads the view and starts the refresh ticker.
func (m *Model) Init() tea.Cmd { return tea.Batch(m.load(), m.tick()) }

// Update handles a message.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		return m, nil
	case viewMsg:
		m.loading = false
		m.err = msg.err
		if msg.err == nil {
			m.view = msg.v
			if m.run == "" && msg.v.Run != nil {
				m.run = msg.v.Run.ID
			}
			m.clampSel()
		}
		return m, nil
	case taskMsg:
		if msg.name == m.detail {
			m.task, m.taskErr = msg.d, msg.err
		}
		return m, nil
	case cancelMsg:
		if msg.err != nil {
			m.flash = "could not cancel " + msg.task + ": " + friendly(msg.err)
		} else {
			m.flash = "cancelled " + msg.task
		}
		return m, m.load()
	case tickMsg:
		cmds := []tea.Cmd{m.load(), m.tick()}
		if m.detail != "" {
			cmds = append(cmds, m.loadTask(m.detail))
		}
		return m, tea.Batch(cmds...)
	case tea.KeyMsg:
		return m.key(msg)
	}
	return m, nil
}

func (m *Model) key(k tea.KeyMsg) (tea.Model, tea.Cmd) {
	key := k.String()
	if m.confirm != "" {
		task := m.confirm
		switch key {
		case "y", "Y":
			m.confirm = ""
			m.flash = "cancelling " + task + "…"
			ctx, src, run, reason := m.ctx, m.src, m.run, m.opts.Reason
			return m, func() tea.Msg { return cancelMsg{task, src.Cancel(ctx, run, task, reason)} }
		case "ctrl+c":
			return m, tea.Quit
		default: // n, esc, q or anything else: keep the task
			m.confirm = ""
			m.flash = "not cancelled"
		}
		return m, nil
	}
	switch key {
	case "q", "ctrl+c":
		return m, tea.Quit
	case "tab", "right", "l":
		m.setTab((m.tab + 1) % numTabs)
	case "shift+tab", "left", "h":
		m.setTab((m.tab + numTabs - 1) % numTabs)
	case "1", "2", "3":
		m.setTab(int(key[0] - '1'))
	case "up", "k":
		if m.tab == TabRun && m.detail == "" {
			m.sel--
			m.clampSel()
		} else {
			m.scroll = max(m.scroll-1, 0)
		}
	case "down", "j":
		if m.tab == TabRun && m.detail == "" {
			m.sel++
			m.clampSel()
		} else {
			m.scroll++
		}
	case "pgdown", " ":
		m.scroll += max(m.bodyHeight()-2, 1)
	case "pgup":
		m.scroll = max(m.scroll-max(m.bodyHeight()-2, 1), 0)
	case "enter":
		if t := m.selected(); t != nil && m.tab == TabRun && m.detail == "" {
			m.detail, m.task, m.taskErr, m.scroll = t.ID, nil, nil, 0
			return m, m.loadTask(t.ID)
		}
	case "esc", "backspace":
		m.detail, m.task, m.taskErr, m.scroll = "", nil, nil, 0
	case "c":
		t := m.selected()
		if m.detail != "" {
			t = m.taskByID(m.detail)
		}
		switch {
		case m.tab != TabRun || t == nil:
		case m.view.Run.Mode == dashboard.ModeSwarm:
			m.flash = "swarm tasks are cancelled on the board's run, not from here"
		case m.view.Run.Status != dashboard.StatusRunning || !busy(t.Status):
			m.flash = t.ID + " is " + t.Status + ": nothing to cancel"
		default:
			m.confirm = t.ID
		}
	case "r":
		m.flash = ""
		return m, m.load()
	}
	return m, nil
}

func (m *Model) setTab(t int) {
	if t >= 0 && t < numTabs {
		m.tab, m.scroll = t, 0
	}
}

func (m *Model) tasks() []dashboard.Task {
	if m.view == nil || m.view.Run == nil {
		return nil
	}
	return m.view.Run.Tasks
}

func (m *Model) clampSel() {
	n := len(m.tasks())
	m.sel = max(0, min(m.sel, n-1))
}

func (m *Model) selected() *dashboard.Task {
	ts := m.tasks()
	if m.sel < 0 || m.sel >= len(ts) {
		return nil
	}
	return &ts[m.sel]
}

func (m *Model) taskByID(id string) *dashboard.Task {
	ts := m.tasks()
	for i := range ts {
		if ts[i].ID == id {
			return &ts[i]
		}
	}
	return nil
}

func busy(status string) bool {
	return status == dashboard.StatusRunning || status == dashboard.StatusPending
}

// friendly is an error as a person reads it: what the dashboard's
// sentinels mean, without the chain of package prefixes.
func friendly(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, dashboard.ErrUnavailable):
		return "not connected"
	case errors.Is(err, context.Canceled):
		return "interrupted"
	}
	s := err.Error()
	for _, p := range []string{"dashboard: not found: ", "dashboard: conflict: ", "dashboard: invalid: ", "dashboard: "} {
		s = strings.ReplaceAll(s, p, "")
	}
	return s
}

// View renders the screen: exactly the terminal's height, no line wider
// than it.
func (m *Model) View() string {
	lines := []string{m.header(), m.tabBar()}
	body := m.body()
	bh := m.bodyHeight()
	if m.detail != "" || m.tab != TabRun {
		m.scroll = max(0, min(m.scroll, len(body)-bh))
		body = body[min(m.scroll, len(body)):]
	}
	if len(body) > bh {
		body = body[:bh]
	}
	lines = append(lines, body...)
	for len(lines) < m.height-1 {
		lines = append(lines, "")
	}
	lines = append(lines, m.footer())
	for i, l := range lines {
		lines[i] = fit(l, m.width)
	}
	return strings.Join(lines[:max(min(len(lines), m.height), 0)], "\n")
}

// bodyHeight is how many lines the tab's content has: the screen less the
// header, the tab bar and the footer.
func (m *Model) bodyHeight() int { return max(m.height-3, 1) }

func (m *Model) header() string {
	title := m.st.title.Render("apiary top")
	var parts []string
	if m.view != nil {
		parts = append(parts, m.view.Time.Local().Format("15:04:05"))
		if n := needsCount(m.view); n > 0 {
			parts = append(parts, m.st.needs.Render(fmt.Sprintf("%d need you", n)))
		}
	}
	switch {
	case m.loading:
		parts = append(parts, "loading…")
	case m.err != nil:
		parts = append(parts, m.st.bad.Render(friendly(m.err)))
	}
	return title + "  " + strings.Join(parts, " · ")
}

func (m *Model) tabBar() string {
	var b strings.Builder
	for i, n := range tabNames {
		label := fmt.Sprintf(" %d %s ", i+1, n)
		if i == m.tab {
			b.WriteString(m.st.tabOn.Render(label))
		} else {
			b.WriteString(m.st.tabOff.Render(label))
		}
		b.WriteString(" ")
	}
	return b.String()
}

func (m *Model) footer() string {
	if m.confirm != "" {
		return m.st.needs.Render(fmt.Sprintf("Cancel task %s and every task it spawned? y/n", m.confirm))
	}
	help := "q quit · tab switch · ↑↓ select · enter detail · c cancel · r refresh"
	switch {
	case m.detail != "":
		help = "esc back · ↑↓ scroll · c cancel · q quit"
	case m.tab != TabRun:
		help = "q quit · tab switch · ↑↓ scroll · r refresh"
	}
	if m.flash != "" {
		return m.st.flash.Render(m.flash) + "  " + m.st.muted.Render(help)
	}
	return m.st.muted.Render(help)
}

func (m *Model) body() []string {
	if m.view == nil {
		return nil
	}
	switch {
	case m.tab == TabRun && m.detail != "":
		return m.detailLines()
	case m.tab == TabRun:
		return m.runLines()
	case m.tab == TabGateway:
		return m.gatewayLines()
	}
	return m.boardLines()
}
