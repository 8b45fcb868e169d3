package runview

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/apiary-dev/apiary/internal/dashboard"
	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/rundir"
)

// Why a task failed, as a person reads it: the dashboard and top show it
// inline, so no one has to open the check's log to find "Pow(2, 10) = 20,
// want 1024".

// failureLines is how many lines of a failing check's output are shown.
const failureLines = 8

// maxFailureLine bounds one shown line.
const maxFailureLine = 240

// failureOf says why a finished task failed; nil when it did not.
func failureOf(root string, status string, g *envelope.GateReason, reason string, agentLog string) *dashboard.Failure {
	if status != dashboard.StatusFailed {
		return nil
	}
	if g == nil {
		f := &dashboard.Failure{Kind: dashboard.FailAgent, Summary: firstLineOf(reason)}
		if agentLog != "" {
			f.Lines = tailLines(root, agentLog, 0, failureLines)
		}
		return f
	}
	if g.Gate == "check" {
		f := &dashboard.Failure{Kind: dashboard.FailCheck, Summary: g.Detail, Command: checkCommand(g.Detail)}
		if f.Command != "" {
			// `check "CMD" exited 1 after 0.4s`: the command is shown apart.
			f.Summary = "the check" + strings.TrimPrefix(g.Detail, "check "+strconv.Quote(f.Command))
		}
		for _, l := range tailLines(root, g.File, g.Line, failureLines+1) {
			if f.Command != "" && l == "$ "+f.Command {
				continue // the log's echo of the command
			}
			f.Lines = append(f.Lines, l)
		}
		if len(f.Lines) > failureLines {
			f.Lines = f.Lines[len(f.Lines)-failureLines:]
		}
		return f
	}
	f := &dashboard.Failure{Kind: dashboard.FailGate, File: g.File, Line: g.Line}
	loc := g.File
	if g.Line > 0 {
		loc = fmt.Sprintf("%s:%d", g.File, g.Line)
	}
	what := "gate " + g.Gate
	if g.Pattern != "" {
		what += " (" + g.Pattern + ")"
	}
	f.Summary = what
	if loc != "" {
		f.Summary += " at " + loc
	}
	if g.Detail != "" {
		f.Summary += ": " + firstLineOf(g.Detail)
	}
	return f
}

// checkCommand takes the command out of a check gate's detail (`check
// "go test ./..." exited 1 after 0.4s`).
func checkCommand(detail string) string {
	rest, ok := strings.CutPrefix(detail, "check \"")
	if !ok {
		return ""
	}
	// The command was quoted with %q: find its closing quote.
	for i := 0; i < len(rest); i++ {
		switch rest[i] {
		case '\\':
			i++
		case '"':
			var s string
			if _, err := fmt.Sscanf(`"`+rest[:i+1], "%q", &s); err == nil {
				return s
			}
			return rest[:i]
		}
	}
	return ""
}

// tailLines returns up to n lines of a log under the repository's .apiary
// directory: ending a few lines after line at (1-based; the line a gate
// pointed at), or the last n when at is 0. Logs elsewhere are not read.
func tailLines(root, path string, at, n int) []string {
	if path == "" {
		return nil
	}
	state, err := filepath.Abs(rundir.State(root))
	if err != nil {
		return nil
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil
	}
	if rel, err := filepath.Rel(state, abs); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return nil
	}
	f, err := os.Open(abs)
	if err != nil {
		return nil
	}
	defer f.Close()
	var ring []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for ln := 1; sc.Scan(); ln++ {
		line := strings.TrimRight(strings.ToValidUTF8(sc.Text(), "\uFFFD"), " \t\r")
		if r := []rune(line); len(r) > maxFailureLine {
			line = string(r[:maxFailureLine-1]) + "…"
		}
		ring = append(ring, line)
		if len(ring) > n {
			ring = ring[1:]
		}
		if at > 0 && ln >= at+2 {
			break
		}
	}
	for len(ring) > 0 && strings.TrimSpace(ring[0]) == "" {
		ring = ring[1:]
	}
	return ring
}

func firstLineOf(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}
