package tui

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"

	"github.com/apiary-dev/apiary/internal/dashboard"
)

// styles are the UI's lipgloss styles.
type styles struct {
	title, muted, bad, ok, run, wait, needs, flash, sel, head, tabOn, tabOff lipgloss.Style
}

func newStyles(color bool) styles {
	s := lipgloss.NewStyle
	st := styles{title: s().Bold(true), muted: s(), bad: s(), ok: s(), run: s(), wait: s(), needs: s().Bold(true),
		flash: s().Bold(true), sel: s().Reverse(true), head: s().Bold(true), tabOn: s().Reverse(true).Bold(true), tabOff: s()}
	if color {
		st.muted = st.muted.Foreground(lipgloss.Color("8"))
		st.bad = st.bad.Foreground(lipgloss.Color("1"))
		st.ok = st.ok.Foreground(lipgloss.Color("2"))
		st.run = st.run.Foreground(lipgloss.Color("6"))
		st.wait = st.wait.Foreground(lipgloss.Color("8"))
		st.needs = st.needs.Foreground(lipgloss.Color("3"))
		st.flash = st.flash.Foreground(lipgloss.Color("3"))
	}
	return st
}

func (s styles) status(st string) lipgloss.Style {
	switch st {
	case dashboard.StatusSucceeded, dashboard.HintApproved:
		return s.ok
	case dashboard.StatusFailed, "interrupted", "open", dashboard.HintRejected, dashboard.EscrowDenied:
		return s.bad
	case dashboard.StatusRunning:
		return s.run
	case dashboard.HintPending:
		return s.needs
	}
	return s.wait
}

// fit cuts a line to width columns (escape codes do not count).
func fit(s string, width int) string {
	if width <= 0 {
		return ""
	}
	if ansi.StringWidth(s) <= width {
		return s
	}
	return ansi.Truncate(s, width, "…")
}

// pad pads (or cuts) s to exactly w columns.
func pad(s string, w int) string {
	s = fit(s, w)
	if n := ansi.StringWidth(s); n < w {
		s += strings.Repeat(" ", w-n)
	}
	return s
}

// wrap breaks text into lines of at most width columns, at spaces when it
// can.
func wrap(text string, width int) []string {
	var out []string
	for _, para := range strings.Split(text, "\n") {
		if width <= 0 {
			out = append(out, para)
			continue
		}
		for ansi.StringWidth(para) > width {
			r := []rune(para)
			cut := width
			if i := strings.LastIndex(string(r[:width]), " "); i > width/2 {
				cut = len([]rune(string(r[:width])[:i]))
			}
			out = append(out, string(r[:cut]))
			para = strings.TrimLeft(string(r[cut:]), " ")
		}
		out = append(out, para)
	}
	return out
}

func money(u dashboard.Usage) string {
	if !u.Known {
		return "n/a"
	}
	return "$" + strconv.FormatFloat(u.USD, 'f', 4, 64)
}

func tokens(u dashboard.Usage) string {
	if !u.Known {
		return "n/a"
	}
	return fmt.Sprintf("%d in / %d out", u.InputTokens, u.OutputTokens)
}

func secs(s float64) string {
	if s < 60 {
		return strconv.FormatFloat(s, 'f', 1, 64) + "s"
	}
	return fmt.Sprintf("%dm%02ds", int(s)/60, int(s)%60)
}

// wall is a task's wall time, counting on while it runs.
func wall(t dashboard.Task, now time.Time, running bool) string {
	if running && t.Status == dashboard.StatusRunning && !t.Started.IsZero() && t.Finished.IsZero() {
		return secs(now.Sub(t.Started).Seconds())
	}
	return secs(t.WallS)
}

// reason is a task's one-line reason.
func reason(t dashboard.Task) string {
	switch {
	case t.Failure != nil:
		s := t.Failure.Summary
		for i := len(t.Failure.Lines) - 1; i >= 0; i-- {
			if l := strings.TrimSpace(t.Failure.Lines[i]); l != "" && l != "FAIL" && !strings.HasPrefix(l, "FAIL\t") {
				return s + ": " + l
			}
		}
		return s
	case t.Waiting != "":
		return "waits for you: " + t.Waiting
	case t.Gate != nil:
		return t.Gate.Gate + ": " + t.Gate.Detail
	}
	return t.Reason
}

func needsCount(v *dashboard.View) int {
	n := len(v.Reviews)
	for _, e := range v.Escrow {
		if e.State == dashboard.EscrowPending {
			n++
		}
	}
	if v.Board != nil {
		for _, h := range v.Board.Hints {
			if h.State == dashboard.HintPending {
				n++
			}
		}
	}
	return n
}

// runLines is the run tab: the run's summary, what needs you, and its
// tasks, the selected one highlighted and always on screen, its reason in
// full below the table.
func (m *Model) runLines() []string {
	v := m.view
	var out []string
	if v.RunError != "" {
		out = append(out, m.st.bad.Render("run: "+v.RunError))
	}
	r := v.Run
	if r == nil {
		if len(v.Runs) == 0 {
			out = append(out, "No runs yet. Start one with: apiary run PLAN")
		}
		return out
	}
	tt := r.Totals
	mode := ""
	if r.Mode == dashboard.ModeSwarm {
		mode = " (swarm)"
	}
	head := fmt.Sprintf("run %s%s %s · %d/%d succeeded", r.ID, mode, m.st.status(r.Status).Render(r.Status), tt.Succeeded, tt.Tasks)
	for _, x := range []struct {
		n    int
		what string
	}{{tt.Failed, "failed"}, {tt.Cancelled, "cancelled"}, {tt.Skipped, "skipped"}} {
		if x.n > 0 {
			head += fmt.Sprintf(", %d %s", x.n, x.what)
		}
	}
	runWall := r.WallS
	if r.Status == dashboard.StatusRunning && !r.Started.IsZero() {
		runWall = v.Time.Sub(r.Started).Seconds()
	}
	out = append(out, head, fmt.Sprintf("tokens %s · cost %s · wall %s", tokens(tt.Usage), money(tt.Usage), secs(runWall)))
	path := r.Predicted.Tasks
	label := "critical path"
	if r.Status != dashboard.StatusRunning && len(r.Achieved.Tasks) > 0 {
		path, label = r.Achieved.Tasks, "critical path (achieved)"
	}
	if len(path) > 0 {
		out = append(out, m.st.muted.Render(label+": "+strings.Join(path, " → ")))
	}
	if n := needsCount(v); n > 0 {
		out = append(out, m.st.needs.Render(fmt.Sprintf("%d thing(s) need you: see the Board tab (3)", n)))
	}
	out = append(out, "")
	// Columns: the reason takes what is left.
	nameW := 4
	for _, t := range r.Tasks {
		nameW = max(nameW, ansi.StringWidth(t.ID))
	}
	nameW = min(nameW, max(m.width/4, 10))
	worker := r.Mode == dashboard.ModeSwarm
	cols := []struct {
		name string
		w    int
	}{{"TASK", nameW + 3}, {"STATUS", 10}, {"ATT", 4}, {"USD", 10}, {"WALL", 8}}
	if worker {
		cols = append(cols, struct {
			name string
			w    int
		}{"WORKER", 10})
	}
	used := 0
	var hdr strings.Builder
	for _, c := range cols {
		hdr.WriteString(pad(c.name, c.w))
		used += c.w
	}
	whyW := m.width - used
	if whyW >= 10 {
		hdr.WriteString("WHY")
	}
	out = append(out, m.st.head.Render(hdr.String()))
	// Room for the table: what is left, less the selected task's reason.
	sel := m.selected()
	var full []string
	if sel != nil {
		if why := reason(*sel); why != "" {
			full = wrap(sel.ID+": "+why, m.width)
			full = full[:min(len(full), 4)]
		}
	}
	room := m.bodyHeight() - len(out) - len(full) - 1
	if room < 3 { // a short terminal: drop the summary lines before the table
		out = out[len(out)-1:]
		room = m.bodyHeight() - 1 - len(full) - 1
	}
	first := 0
	if m.sel >= room {
		first = m.sel - room + 1
	}
	running := r.Status == dashboard.StatusRunning
	crit := map[string]bool{}
	for _, id := range path {
		crit[id] = true
	}
	for i := first; i < len(r.Tasks) && i < first+max(room, 1); i++ {
		t := r.Tasks[i]
		mark := "  "
		if crit[t.ID] {
			mark = "* "
		}
		status := t.Status
		if t.Waiting != "" {
			status = "waiting"
		}
		cells := []string{pad(mark+t.ID, cols[0].w), m.st.status(t.Status).Render(pad(status, cols[1].w)), pad(strconv.Itoa(t.Attempts), cols[2].w),
			pad(money(t.Usage), cols[3].w), pad(wall(t, v.Time, running), cols[4].w)}
		if worker {
			cells = append(cells, pad(orDash(t.Worker), 10))
		}
		line := strings.Join(cells, "")
		if whyW >= 10 {
			line += fit(reason(t), whyW)
		}
		if i == m.sel {
			line = m.st.sel.Render(pad(ansi.Strip(line), m.width))
		}
		out = append(out, line)
	}
	if len(r.Tasks) > room && room > 0 {
		out = append(out, m.st.muted.Render(fmt.Sprintf("… %d tasks (↑↓)", len(r.Tasks))))
	}
	if len(full) > 0 {
		out = append(out, "")
		out = append(out, full...)
	}
	return out
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// detailLines is the selected task's detail.
func (m *Model) detailLines() []string {
	t := m.taskByID(m.detail)
	out := []string{m.st.title.Render("task " + m.detail)}
	if m.taskErr != nil {
		return append(out, m.st.bad.Render(friendly(m.taskErr)))
	}
	d := m.task
	if d == nil {
		return append(out, "loading…")
	}
	if t == nil {
		t = &d.Task
	}
	kv := func(k, v string) {
		if v != "" {
			for i, l := range wrap(v, max(m.width-16, 20)) {
				if i == 0 {
					out = append(out, pad(k, 16)+l)
				} else {
					out = append(out, strings.Repeat(" ", 16)+l)
				}
			}
		}
	}
	kv("status", m.st.status(t.Status).Render(t.Status))
	kv("objective", d.Objective)
	kv("agent", d.Agent)
	kv("worker", t.Worker)
	kv("attempts", strconv.Itoa(t.Attempts))
	kv("tokens", tokens(t.Usage))
	kv("cost", money(t.Usage))
	kv("wall", wall(*t, m.view.Time, m.view.Run != nil && m.view.Run.Status == dashboard.StatusRunning))
	kv("waits for", t.Waiting)
	if t.Integrated != nil {
		kv("integrated", *t.Integrated)
	}
	if t.Commit != nil {
		kv("commit", *t.Commit)
	}
	if f := t.Failure; f != nil {
		out = append(out, "", m.st.bad.Render("why it failed: "+f.Summary))
		if f.Command != "" {
			out = append(out, m.st.muted.Render("  $ "+f.Command))
		}
		for _, l := range f.Lines {
			out = append(out, "  "+l)
		}
	} else if t.Reason != "" {
		kv("reason", t.Reason)
	}
	for _, g := range d.GateFailures {
		loc := g.File
		if g.Line > 0 {
			loc += ":" + strconv.Itoa(g.Line)
		}
		out = append(out, m.st.bad.Render("gate "+g.Gate+" "+loc+": "+g.Detail))
	}
	for _, c := range d.Checks {
		st := m.st.ok
		if c.Exit != 0 {
			st = m.st.bad
		}
		out = append(out, st.Render(fmt.Sprintf("check exit %d %s  %s", c.Exit, secs(c.Duration), c.Command)))
	}
	if len(d.AttemptList) > 0 {
		out = append(out, "", m.st.head.Render("attempts"))
		for _, a := range d.AttemptList {
			exit := "running"
			if a.Exit != nil {
				exit = "exit " + strconv.Itoa(*a.Exit)
			} else if a.Finished != nil {
				exit = "ended"
			}
			out = append(out, fmt.Sprintf("  #%d %-10s %s  %s  %s", a.N, a.Role, a.Started.Local().Format("15:04:05"), exit, money(a.Usage)))
		}
	}
	if d.Log != nil {
		out = append(out, "", m.st.head.Render("log "+d.Log.Name))
		lines := strings.Split(strings.TrimRight(d.Log.Text, "\n"), "\n")
		lines = lines[max(0, len(lines)-40):]
		for _, l := range lines {
			out = append(out, "  "+l)
		}
	}
	return out
}

// gatewayLines is the gateway tab.
func (m *Model) gatewayLines() []string {
	v := m.view
	switch {
	case v.GatewayErr != "":
		return []string{m.st.bad.Render("gateway: " + v.GatewayErr)}
	case v.Gateway == nil:
		return []string{"The gateway is not connected: start top with --gateway URL, or watch a run that has one (apiary run --dash)."}
	}
	g := v.Gateway
	queued := 0
	for _, u := range g.Upstreams {
		queued += u.Queued
	}
	out := wrap(fmt.Sprintf("queue depth %d: %d waiting for a slot, %d waiting on a rate window or a retry · %d client requests in flight",
		queued+g.Waiting, queued, g.Waiting, g.ClientInFlight), m.width)
	out = append(out, "")
	for _, u := range g.Upstreams {
		out = append(out, m.st.head.Render("upstream "+u.Name)+" "+m.st.muted.Render(u.URL),
			fmt.Sprintf("  in flight %d of %d · queued %d · breaker %s", u.InFlight, u.ConcurrencyLimit, u.Queued, m.st.status(u.Breaker).Render(u.Breaker)),
			fmt.Sprintf("  sent upstream %.0f · 429 %.0f · 5xx %.0f · retries %.0f", u.Requests, u.Status429, u.Status5xx, u.Retries))
		if len(u.Refusals) > 0 {
			var parts []string
			for _, k := range []string{dashboard.RefuseBudget, dashboard.RefuseKey, dashboard.RefuseCapability, dashboard.RefuseMalformed, dashboard.RefuseRoute, dashboard.RefuseConfig} {
				if n := u.Refusals[k]; n > 0 {
					parts = append(parts, fmt.Sprintf("%s %.0f", k, n))
				}
			}
			out = append(out, "  refused: "+strings.Join(parts, " · "))
		}
		for _, l := range u.RateLimits {
			period := "period not reported"
			if l.PeriodS > 0 {
				period = "per " + secs(l.PeriodS)
			}
			out = append(out, fmt.Sprintf("  limit %-14s %8d %s · available %.0f", l.Dim, l.Limit, period, l.Available))
		}
		out = append(out, "")
	}
	if len(g.Budgets) > 0 {
		out = append(out, m.st.head.Render(pad("BUDGET", max(m.width-44, 20))+pad("UNIT", 8)+pad("SPENT", 12)+"REMAINING"))
		for _, b := range g.Budgets {
			who := b.Agent
			if who == "" {
				who = b.Scope
			}
			amt := func(x int64) string {
				if b.Unit == "usd" {
					return "$" + strconv.FormatFloat(float64(x)/1e6, 'f', 4, 64)
				}
				return strconv.FormatInt(x, 10)
			}
			out = append(out, pad(who, max(m.width-44, 20))+pad(b.Unit, 8)+pad(amt(b.Spent), 12)+amt(b.Remaining))
		}
		out = append(out, "")
	}
	if len(g.Agents) > 0 {
		out = append(out, m.st.head.Render(pad("AGENT", max(m.width-40, 20))+pad("TOKENS IN", 12)+pad("OUT", 10)+"USD"))
		for _, a := range g.Agents {
			out = append(out, pad(a.Agent, max(m.width-40, 20))+pad(strconv.FormatInt(a.InputTokens, 10), 12)+pad(strconv.FormatInt(a.OutputTokens, 10), 10)+fmt.Sprintf("$%.4f", a.USD))
		}
	}
	return out
}

// boardLines is the board tab: what needs you first, then workers and
// claims.
func (m *Model) boardLines() []string {
	v := m.view
	var out []string
	for _, e := range v.Escrow {
		if e.State == dashboard.EscrowPending {
			out = append(out, m.st.needs.Render(fmt.Sprintf("escrow %s: task %s asks to run %q", e.ID, orDash(e.Task), e.Operation)),
				m.st.muted.Render("  decide with: apiary escrow approve "+e.ID+" (or deny)"))
		}
	}
	for _, r := range v.Reviews {
		out = append(out, m.st.needs.Render("review "+r.ID+" escalated to you: "+r.Reason), m.st.muted.Render("  "+r.Command))
	}
	b := v.Board
	if b == nil {
		if v.BoardError != "" {
			out = append(out, m.st.bad.Render("board: "+v.BoardError))
		} else {
			out = append(out, "The board is not connected (no swarm run or worker has used this repository's board).")
		}
		return out
	}
	for _, h := range b.Hints {
		if h.State == dashboard.HintPending {
			out = append(out, m.st.needs.Render("hint "+h.Type+" waits for a review: "+h.Resolution), m.st.muted.Render("  apiary hints approve "+h.Type+" (or reject)"))
		}
	}
	if len(out) > 0 {
		out = append(out, "")
	}
	out = append(out, fmt.Sprintf("%d worker(s), %d claim(s), %d conflict(s)", len(b.Workers), len(b.Claims), len(b.Conflicts)))
	for _, w := range b.Workers {
		out = append(out, fmt.Sprintf("  %-24s %-10s busy %d/%d", w.ID, orDash(w.Profile), w.Busy, w.Slots))
	}
	if len(b.Claims) > 0 {
		out = append(out, "", m.st.head.Render("CLAIMED TASK              WORKER              FENCE"))
		for _, c := range b.Claims {
			out = append(out, pad(c.Task, 26)+pad(c.Agent, 20)+strconv.FormatInt(c.Token, 10))
		}
	}
	for _, h := range b.Hints {
		if h.State != dashboard.HintPending {
			out = append(out, fmt.Sprintf("hint %s %s: %s", h.Type, m.st.status(h.State).Render(h.State), h.Resolution))
		}
	}
	return out
}
