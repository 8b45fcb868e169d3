package dashboard

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// TextOptions shape WriteText's output.
type TextOptions struct {
	// Color adds ANSI colors to statuses (for a terminal).
	Color bool
	// Width cuts lines to this many columns; 0 does not cut.
	Width int
	// MaxRuns bounds the runs listed; 0 is 5.
	MaxRuns int
}

// ANSI colors of statuses.
var statusColor = map[string]string{
	StatusSucceeded: "32", StatusFailed: "31", "interrupted": "31", StatusRunning: "36",
	StatusPending: "2", StatusSkipped: "2", StatusCancelled: "33", "open": "31", "half-open": "33",
	HintApproved: "32", HintRejected: "31", EscrowDenied: "31",
}

// actionColor marks what waits for a person: a pending hint or escrow
// request.
const actionColor = "33"

// WriteText renders v for a terminal: the runs, the selected run's tasks
// with the critical path marked, the gateway, the board and the escrow
// queue. Without Color it is plain text.
func WriteText(w io.Writer, v *View, o TextOptions) error {
	bw := bufio.NewWriter(w)
	t := &textOut{w: bw, o: o}
	if o.MaxRuns == 0 {
		t.o.MaxRuns = 5
	}
	t.line(fmt.Sprintf("apiary top · %s · %d run(s)", v.Time.Local().Format("2006-01-02 15:04:05"), len(v.Runs)))
	t.runs(v)
	t.run(v)
	t.gateway(v)
	t.board(v)
	t.escrow(v)
	return bw.Flush()
}

type textOut struct {
	w *bufio.Writer
	o TextOptions
}

type cell struct {
	text  string
	color string // ANSI code, "" for none
}

func c(s string) cell { return cell{text: s} }

func (t *textOut) status(s string) cell { return cell{text: s, color: statusColor[s]} }

func (t *textOut) line(s string) {
	if t.o.Width > 0 && utf8.RuneCountInString(s) > t.o.Width {
		r := []rune(s)
		s = string(r[:max(t.o.Width-1, 0)]) + "…"
	}
	t.w.WriteString(s)
	t.w.WriteByte('\n')
}

// table writes rows under a header, columns padded to their widest plain
// text; colors do not count towards the widths.
func (t *textOut) table(header []string, rows [][]cell) {
	widths := make([]int, len(header))
	for i, h := range header {
		widths[i] = utf8.RuneCountInString(h)
	}
	for _, r := range rows {
		for i, x := range r {
			if i < len(widths) {
				widths[i] = max(widths[i], utf8.RuneCountInString(x.text))
			}
		}
	}
	render := func(cells []cell) {
		var b strings.Builder
		plain := 0
		for i, x := range cells {
			text := x.text
			if t.o.Width > 0 && plain+utf8.RuneCountInString(text) > t.o.Width {
				room := max(t.o.Width-plain-1, 0)
				text = string([]rune(text)[:min(room, utf8.RuneCountInString(text))]) + "…"
			}
			if x.color != "" && t.o.Color {
				b.WriteString("\x1b[" + x.color + "m" + text + "\x1b[0m")
			} else {
				b.WriteString(text)
			}
			plain += utf8.RuneCountInString(text)
			if i < len(cells)-1 {
				pad := widths[i] - utf8.RuneCountInString(text) + 2
				b.WriteString(strings.Repeat(" ", max(pad, 1)))
				plain += max(pad, 1)
			}
			if t.o.Width > 0 && plain >= t.o.Width {
				break
			}
		}
		t.w.WriteString(strings.TrimRight(b.String(), " "))
		t.w.WriteByte('\n')
	}
	hs := make([]cell, len(header))
	for i, h := range header {
		hs[i] = c(h)
	}
	render(hs)
	for _, r := range rows {
		render(r)
	}
}

func money(usd float64) string { return "$" + strconv.FormatFloat(usd, 'f', 4, 64) }

// cost is what a usage cost, "n/a" when nothing measured it.
func cost(u Usage) string {
	if !u.Known {
		return "n/a"
	}
	return money(u.USD)
}

func (t *textOut) runs(v *View) {
	t.line("")
	switch {
	case v.RunsError != "":
		t.line("runs: " + v.RunsError)
		return
	case v.Runs == nil:
		t.line("runs: not connected")
		return
	case len(v.Runs) == 0:
		t.line("runs: none yet")
		return
	}
	var rows [][]cell
	for _, r := range v.Runs[:min(len(v.Runs), t.o.MaxRuns)] {
		rows = append(rows, []cell{c(r.ID), t.status(r.Status), c(fmt.Sprintf("%d/%d", r.Succeeded, r.Tasks)),
			c(strconv.Itoa(r.Running)), c(cost(Usage{USD: r.USD, Known: r.USDKnown}))})
	}
	t.table([]string{"RUN", "STATUS", "SUCCEEDED", "RUNNING", "USD"}, rows)
}

func (t *textOut) run(v *View) {
	if v.RunError != "" {
		t.line("")
		t.line("run: " + v.RunError)
	}
	r := v.Run
	if r == nil {
		return
	}
	tt := r.Totals
	t.line("")
	head := fmt.Sprintf("run %s: %s — %d of %d tasks succeeded", r.ID, r.Status, tt.Succeeded, tt.Tasks)
	for _, x := range []struct {
		n    int
		what string
	}{{tt.Failed, "failed"}, {tt.Cancelled, "cancelled"}, {tt.Skipped, "skipped"}} {
		if x.n > 0 {
			head += fmt.Sprintf(", %d %s", x.n, x.what)
		}
	}
	t.line(head + fmt.Sprintf(" · tokens %d in / %d out · %s · %.1fs", tt.Usage.InputTokens, tt.Usage.OutputTokens, cost(tt.Usage), r.WallS))
	crit := set(r.Predicted.Tasks)
	var rows [][]cell
	for _, x := range r.Tasks {
		mark := " "
		if crit[x.ID] {
			mark = "*"
		}
		integ := "-"
		if x.Integrated != nil {
			integ = *x.Integrated
		}
		why := x.Reason
		switch {
		case x.Failure != nil:
			why = x.Failure.Summary
			if n := len(x.Failure.Lines); n > 0 {
				why += ": " + strings.TrimSpace(lastMeaningful(x.Failure.Lines))
			}
		case x.Waiting != "":
			why = "waits for you: " + x.Waiting
		case x.Gate != nil:
			why = x.Gate.Gate + ": " + x.Gate.Detail
		}
		rows = append(rows, []cell{c(mark + " " + x.ID), t.status(x.Status), c(strconv.Itoa(x.Attempts)), c(integ),
			c(fmt.Sprintf("%d/%d", x.Usage.InputTokens, x.Usage.OutputTokens)), c(cost(x.Usage)),
			c(fmt.Sprintf("%.1fs", x.WallS)), c(firstLine(why))})
	}
	t.table([]string{"  TASK", "STATUS", "ATT", "INTEGRATED", "TOKENS IN/OUT", "USD", "WALL", "GATE / REASON"}, rows)
	if len(r.Predicted.Tasks) > 0 {
		t.line(fmt.Sprintf("* critical path: %s (%.0fs predicted)", strings.Join(r.Predicted.Tasks, " → "), r.Predicted.Seconds))
	}
}

func (t *textOut) gateway(v *View) {
	if v.Gateway == nil && v.GatewayErr == "" {
		return
	}
	t.line("")
	if v.GatewayErr != "" {
		t.line("gateway: " + v.GatewayErr)
		return
	}
	var rows [][]cell
	for _, u := range v.Gateway.Upstreams {
		rows = append(rows, []cell{c(u.Name), c(strconv.Itoa(u.InFlight)), c(strconv.Itoa(u.Queued)), c(strconv.Itoa(u.ConcurrencyLimit)),
			t.status(u.Breaker), c(fmt.Sprint(u.Requests)), c(fmt.Sprint(u.Status429)), c(fmt.Sprint(u.Status5xx)), c(fmt.Sprint(u.Retries))})
	}
	t.table([]string{"UPSTREAM", "IN FLIGHT", "QUEUED", "LIMIT", "BREAKER", "REQUESTS", "429", "5XX", "RETRIES"}, rows)
	if len(v.Gateway.Agents) == 0 {
		return
	}
	rows = nil
	for _, a := range v.Gateway.Agents {
		rows = append(rows, []cell{c(a.Agent), c(strconv.Itoa(a.InFlight)), c(strconv.FormatInt(a.InputTokens, 10)),
			c(strconv.FormatInt(a.OutputTokens, 10)), c(money(a.USD))})
	}
	t.table([]string{"AGENT", "IN FLIGHT", "TOKENS IN", "TOKENS OUT", "USD"}, rows)
}

func (t *textOut) board(v *View) {
	if v.Board == nil {
		if v.BoardError != "" {
			t.line("")
			t.line("board: " + v.BoardError)
		}
		return
	}
	b := v.Board
	pending := 0
	for _, h := range b.Hints {
		if h.State == HintPending {
			pending++
		}
	}
	t.line("")
	t.line(fmt.Sprintf("board: %d worker(s), %d claim(s), %d conflict(s), %d pending hint(s)", len(b.Workers), len(b.Claims), len(b.Conflicts), pending))
	if len(b.Claims) > 0 {
		var rows [][]cell
		for _, cl := range b.Claims {
			rows = append(rows, []cell{c(cl.Task), c(cl.Agent), c(strconv.FormatInt(cl.Token, 10)), c(fmt.Sprintf("%.2f", cl.Score))})
		}
		t.table([]string{"CLAIMED TASK", "WORKER", "FENCE", "SCORE"}, rows)
	}
	if len(b.Hints) > 0 {
		var rows [][]cell
		hints := slices.Clone(b.Hints)
		slices.SortStableFunc(hints, func(a, b Hint) int { return boolInt(b.State == HintPending) - boolInt(a.State == HintPending) })
		for _, h := range hints {
			st := t.status(h.State)
			if h.State == HintPending {
				st.color = actionColor
			}
			rows = append(rows, []cell{c(h.Type), st, c(firstLine(h.Resolution))})
		}
		t.table([]string{"HINT", "STATE", "RESOLUTION"}, rows)
	}
}

func (t *textOut) escrow(v *View) {
	if v.Escrow == nil {
		if v.EscrowErr != "" {
			t.line("")
			t.line("escrow: " + v.EscrowErr)
		}
		return
	}
	pending := 0
	for _, e := range v.Escrow {
		if e.State == EscrowPending {
			pending++
		}
	}
	t.line("")
	t.line(fmt.Sprintf("escrow: %d pending of %d", pending, len(v.Escrow)))
	if len(v.Escrow) == 0 {
		return
	}
	var rows [][]cell
	for _, e := range v.Escrow {
		st := t.status(e.State)
		if e.State == EscrowPending {
			st.color = actionColor
		}
		rows = append(rows, []cell{c(e.ID), c(e.Operation), c(e.Task), st})
	}
	t.table([]string{"ID", "OPERATION", "TASK", "STATE"}, rows)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// lastMeaningful is the last line of a failure's output that says
// something (not a bare FAIL).
func lastMeaningful(lines []string) string {
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" && l != "FAIL" && !strings.HasPrefix(l, "FAIL\t") && !strings.HasPrefix(l, "--- FAIL") {
			return l
		}
	}
	return ""
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

// WriteSnapshots prints a plain snapshot of src (see WriteText) every
// interval, separated by a blank line, until ctx ends or count snapshots
// (0: no limit) are printed. A snapshot that cannot be collected ends it
// without an error: that is how an interrupt shows.
func WriteSnapshots(ctx context.Context, w io.Writer, src Sources, run string, interval time.Duration, count int) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for n := 1; ; n++ {
		v, err := Collect(ctx, src, run, time.Now())
		if err != nil {
			return nil // interrupted
		}
		if n > 1 {
			fmt.Fprintln(w)
		}
		if err := WriteText(w, v, TextOptions{}); err != nil {
			return err
		}
		if count > 0 && n >= count {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
