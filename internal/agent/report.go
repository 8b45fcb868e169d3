package agent

import (
	"bytes"
	"sync"
)

// Report is an agent CLI's own account of its run.
type Report struct {
	Kind string `json:"kind"`
	// Subtype is Claude Code's result subtype (success, error_max_turns,
	// error_max_budget_usd, error_during_execution, ...), or "success" /
	// "failed" for the other kinds.
	Subtype string  `json:"subtype"`
	IsError bool    `json:"is_error"`
	CostUSD float64 `json:"cost_usd"`
	// InputTokens and OutputTokens are the run's usage as the CLI counts
	// it, each request once; input includes cache reads and writes.
	InputTokens  int64  `json:"input_tokens"`
	OutputTokens int64  `json:"output_tokens"`
	Turns        int    `json:"turns"`
	SessionID    string `json:"session_id,omitempty"`
	// Text is the CLI's final message, its summary of the run (bounded).
	Text              string `json:"text,omitempty"`
	PermissionDenials int    `json:"permission_denials"`
}

// maxText bounds Report.Text.
const maxText = 4096

// reportParser hands a CLI's output lines to its kind's parser; safe for
// the one writer and a concurrent reader.
type reportParser struct {
	mu sync.Mutex
	p  lineParser // nil: the kind prints no report
}

func newReportParser(kind string) *reportParser {
	rp := &reportParser{}
	if c := cliOf(kind); c != nil && c.parser != nil {
		rp.p = c.parser()
	}
	return rp
}

func (rp *reportParser) line(b []byte) {
	b = bytes.TrimSpace(b)
	if rp.p == nil || len(b) == 0 || b[0] != '{' {
		return
	}
	rp.mu.Lock()
	defer rp.mu.Unlock()
	rp.p.line(b)
}

func (rp *reportParser) report() *Report {
	if rp.p == nil {
		return nil
	}
	rp.mu.Lock()
	defer rp.mu.Unlock()
	r := rp.p.report()
	if r == nil {
		return nil
	}
	c := *r
	return &c
}

func bound(s string) string {
	if len(s) <= maxText {
		return s
	}
	cut := maxText
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}
