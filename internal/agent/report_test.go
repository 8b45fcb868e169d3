package agent

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReportParserRealOutput feeds each parser what the pinned CLI really
// printed (testdata/KIND-VERSION.jsonl, captured against llmfake) and checks
// every field the runtime reads.
func TestReportParserRealOutput(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		kind, file string
		want       Report
	}{
		{KindClaude, "claude-2.1.332.jsonl", Report{Kind: KindClaude, Subtype: "success", CostUSD: 0.010731999999999998,
			InputTokens: 2678, OutputTokens: 1, Turns: 1, SessionID: "6a7e5b35-aea6-46dd-9e23-0765754870b9", Text: "ok"}},
		{KindCodex, "codex-0.171.0.jsonl", Report{Kind: KindCodex, Subtype: "success", InputTokens: 19480, OutputTokens: 21,
			Turns: 1, SessionID: "01a233a3-b1f6-7760-b555-a72ff1f817b2", Text: "Wrote hello.txt."}},
		// 14,691 in / 101 out, once: the stats repeat them as "input" and
		// per model (a parser summing every key counted 4× and 2×).
		{KindGemini, "gemini-0.61.0.jsonl", Report{Kind: KindGemini, Subtype: "success", InputTokens: 14691, OutputTokens: 101,
			SessionID: "3a6b914e-8497-41fc-bc21-13179f7bfafb", Text: "ok"}},
		{KindOpenCode, "opencode-1.18.33.jsonl", Report{Kind: KindOpenCode, Subtype: "success", InputTokens: 7513, OutputTokens: 1,
			Turns: 1, SessionID: "ses_dcc642b1dffeqRzVEkq9YXZ7J2", Text: "ok"}},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			t.Parallel()
			got := parseFile(t, tc.kind, filepath.Join("testdata", tc.file))
			if got == nil || *got != tc.want {
				t.Errorf("report = %+v\nwant     %+v", got, tc.want)
			}
		})
	}
}

func parseFile(t *testing.T, kind, path string) *Report {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p := newReportParser(kind)
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, maxLine)
	for sc.Scan() {
		p.line(sc.Bytes())
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return p.report()
}

func parseLines(kind string, lines ...string) *Report {
	p := newReportParser(kind)
	for _, l := range lines {
		p.line([]byte(l))
	}
	return p.report()
}

// TestCodexTransientErrors: "Reconnecting…" notices before a completed turn
// leave the run a success; an error with no completed turn, or a failed
// turn, is a failure.
func TestCodexTransientErrors(t *testing.T) {
	t.Parallel()
	reconnect := `{"type":"error","message":"Reconnecting... 1/5 (stream disconnected before completion: error sending request)"}`
	started := `{"type":"thread.started","thread_id":"th-1"}`
	done := `{"type":"turn.completed","usage":{"input_tokens":100,"cached_input_tokens":20,"output_tokens":30}}`
	for _, tc := range []struct {
		name    string
		lines   []string
		subtype string
		isError bool
	}{
		{"reconnects then completes", []string{started, reconnect, reconnect, `{"type":"turn.started"}`, done}, "success", false},
		{"only reconnects", []string{started, `{"type":"turn.started"}`, reconnect, reconnect}, "failed", true},
		{"turn failed", []string{started, `{"type":"turn.started"}`, `{"type":"error","message":"unexpected status 401"}`,
			`{"type":"turn.failed","error":{"message":"unexpected status 401"}}`}, "failed", true},
		{"warning item", []string{started, `{"type":"item.completed","item":{"id":"item_0","type":"error","message":"Model metadata for x not found."}}`, done}, "success", false},
	} {
		r := parseLines(KindCodex, tc.lines...)
		if r == nil || r.Subtype != tc.subtype || r.IsError != tc.isError || r.SessionID != "th-1" {
			t.Errorf("%s: report %+v, want subtype %s is_error %v session th-1", tc.name, r, tc.subtype, tc.isError)
		}
	}
}

// TestSummaries: the summary is the CLI's last message, after its last
// tool call.
func TestSummaries(t *testing.T) {
	t.Parallel()
	g := parseLines(KindGemini,
		`{"type":"init","session_id":"g1","model":"m"}`,
		`{"type":"message","role":"user","content":"write it"}`,
		`{"type":"message","role":"assistant","content":"I'll ","delta":true}`,
		`{"type":"message","role":"assistant","content":"write it.","delta":true}`,
		`{"type":"tool_use","tool_name":"write_file","tool_id":"t1","parameters":{}}`,
		`{"type":"tool_result","tool_id":"t1","status":"success"}`,
		`{"type":"message","role":"assistant","content":"Wrote ","delta":true}`,
		`{"type":"message","role":"assistant","content":"hello.txt.","delta":true}`,
		`{"type":"result","status":"error","error":{"type":"FatalTurnLimitedError","message":"turn limit"},"stats":{"input_tokens":5,"output_tokens":2}}`)
	if g == nil || g.Text != "Wrote hello.txt." || g.SessionID != "g1" || !g.IsError || g.Subtype != "failed" || g.InputTokens != 5 {
		t.Errorf("gemini report %+v", g)
	}
	o := parseLines(KindOpenCode,
		`{"type":"step_start","sessionID":"s1","part":{"type":"step-start"}}`,
		`{"type":"text","sessionID":"s1","part":{"type":"text","text":"Writing."}}`,
		`{"type":"tool_use","sessionID":"s1","part":{"type":"tool","tool":"write"}}`,
		`{"type":"step_finish","sessionID":"s1","part":{"type":"step-finish","reason":"tool-calls","tokens":{"input":10,"output":3,"reasoning":1,"cache":{"read":4,"write":2}},"cost":0.5}}`,
		`{"type":"step_start","sessionID":"s1","part":{"type":"step-start"}}`,
		`{"type":"text","sessionID":"s1","part":{"type":"text","text":"Done."}}`,
		`{"type":"step_finish","sessionID":"s1","part":{"type":"step-finish","reason":"stop","tokens":{"input":20,"output":5,"reasoning":0,"cache":{"read":0,"write":0}},"cost":0.25}}`)
	want := Report{Kind: KindOpenCode, Subtype: "success", InputTokens: 36, OutputTokens: 9, Turns: 2, SessionID: "s1", Text: "Done.", CostUSD: 0.75}
	if o == nil || *o != want {
		t.Errorf("opencode report %+v, want %+v", o, want)
	}
	oe := parseLines(KindOpenCode, `{"type":"error","sessionID":"s2","error":{"name":"APIError","data":{"message":"Not Found"}}}`)
	if oe == nil || !oe.IsError {
		t.Errorf("opencode error report %+v", oe)
	}
}

func TestBound(t *testing.T) {
	t.Parallel()
	s := strings.Repeat("é", maxText)
	b := bound(s)
	if len(b) > maxText+len("…") || !strings.HasSuffix(b, "…") || !strings.HasPrefix(s, strings.TrimSuffix(b, "…")) {
		t.Errorf("bound cut badly: %d bytes", len(b))
	}
}

// FuzzReportParsers: no input line makes a parser panic, and a report's
// token counts are never negative.
func FuzzReportParsers(f *testing.F) {
	for _, name := range []string{"claude-2.1.332.jsonl", "codex-0.171.0.jsonl", "gemini-0.61.0.jsonl", "opencode-1.18.33.jsonl"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		for _, l := range strings.Split(string(b), "\n") {
			f.Add(l)
		}
	}
	f.Fuzz(func(t *testing.T, line string) {
		for _, k := range Kinds {
			p := newReportParser(k)
			p.line([]byte(line))
			p.line([]byte(line))
			if r := p.report(); r != nil && r.Kind != k {
				t.Fatalf("%s parser reported kind %q", k, r.Kind)
			}
		}
	})
}
