package agent

import (
	"bytes"
	"encoding/json"
	"sync"
)

// Report is an agent CLI's own account of its run.
type Report struct {
	Kind string `json:"kind"`
	// Subtype is Claude Code's result subtype (success, error_max_turns,
	// error_max_budget_usd, error_during_execution, ...), or "success" /
	// "failed" for the other kinds.
	Subtype           string  `json:"subtype"`
	IsError           bool    `json:"is_error"`
	CostUSD           float64 `json:"cost_usd"`
	InputTokens       int64   `json:"input_tokens"`
	OutputTokens      int64   `json:"output_tokens"`
	Turns             int     `json:"turns"`
	SessionID         string  `json:"session_id,omitempty"`
	Text              string  `json:"text,omitempty"` // bounded
	PermissionDenials int     `json:"permission_denials"`
}

// maxText bounds Report.Text.
const maxText = 4096

// reportParser reads the structured output lines of a CLI.
type reportParser struct {
	kind string
	mu   sync.Mutex
	rep  *Report
}

func (p *reportParser) line(b []byte) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' {
		return
	}
	var ev struct {
		Type    string  `json:"type"`
		Subtype string  `json:"subtype"`
		IsError bool    `json:"is_error"`
		Cost    float64 `json:"total_cost_usd"`
		Turns   int     `json:"num_turns"`
		Session string  `json:"session_id"`
		Result  string  `json:"result"`
		Denials []any   `json:"permission_denials"`
		Usage   *struct {
			Input       int64 `json:"input_tokens"`
			CacheCreate int64 `json:"cache_creation_input_tokens"`
			CacheRead   int64 `json:"cache_read_input_tokens"`
			Cached      int64 `json:"cached_input_tokens"`
			Output      int64 `json:"output_tokens"`
		} `json:"usage"`
		Item *struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"item"`
		Error json.RawMessage `json:"error"`
		Stats json.RawMessage `json:"stats"`
	}
	if json.Unmarshal(b, &ev) != nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch p.kind {
	case KindClaude:
		if ev.Type != "result" {
			return
		}
		r := &Report{Kind: p.kind, Subtype: ev.Subtype, IsError: ev.IsError, CostUSD: ev.Cost, Turns: ev.Turns,
			SessionID: ev.Session, Text: bound(ev.Result), PermissionDenials: len(ev.Denials)}
		if ev.Usage != nil {
			r.InputTokens = ev.Usage.Input + ev.Usage.CacheCreate + ev.Usage.CacheRead
			r.OutputTokens = ev.Usage.Output
		}
		p.rep = r
	case KindCodex:
		r := p.ensure()
		switch ev.Type {
		case "thread.started":
			r.SessionID = ev.Session
		case "turn.completed":
			r.Turns++
			if ev.Usage != nil {
				r.InputTokens += ev.Usage.Input
				r.OutputTokens += ev.Usage.Output
			}
			r.Subtype = "success"
		case "turn.failed", "error":
			r.Subtype, r.IsError = "failed", true
		case "item.completed":
			if ev.Item != nil && ev.Item.Type == "agent_message" {
				r.Text = bound(ev.Item.Text)
			}
		}
	case KindGemini:
		if ev.Type != "result" {
			return
		}
		r := p.ensure()
		r.Subtype = "success"
		if len(ev.Error) > 0 && string(ev.Error) != "null" {
			r.Subtype, r.IsError = "failed", true
		}
		r.InputTokens, r.OutputTokens = geminiTokens(ev.Stats)
	}
}

func (p *reportParser) ensure() *Report {
	if p.rep == nil {
		p.rep = &Report{Kind: p.kind}
	}
	return p.rep
}

func (p *reportParser) report() *Report {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.rep == nil {
		return nil
	}
	r := *p.rep
	return &r
}

// geminiTokens sums input/output token counts found in Gemini CLI's stats
// object, whose layout has changed between versions: it looks for the usual
// key names at any depth.
func geminiTokens(raw json.RawMessage) (in, out int64) {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return 0, 0
	}
	var walk func(any)
	walk = func(v any) {
		switch t := v.(type) {
		case map[string]any:
			for k, x := range t {
				if n, ok := x.(float64); ok {
					switch k {
					case "input_tokens", "prompt", "promptTokenCount", "input":
						in += int64(n)
					case "output_tokens", "candidates", "candidatesTokenCount", "output":
						out += int64(n)
					}
					continue
				}
				walk(x)
			}
		case []any:
			for _, x := range t {
				walk(x)
			}
		}
	}
	walk(v)
	return in, out
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
