package llmfake

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseScriptsErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		src  string
		want string // exact first error
	}{
		{"missing tool name", `
turns:
  - text: a
  - text: b
  - text: c
  - tool_calls:
      - input: {x: 1}
`, "s.yaml:7:9: turns[3].tool_calls[0].name: required"},
		{"unknown field", "turns:\n  - text: a\n    colour: red\n", `s.yaml:3:5: turns[0].colour: unknown field (want one of id, text, tool_calls, branches, goto)`},
		{"turn without answer", "turns:\n  - id: x\n", "s.yaml:2:5: turns[0].text: required: a turn needs text or tool_calls (its answer when no branch matches)"},
		{"no turns", "name: x\n", "s.yaml:1:1: turns: required"},
		{"empty file", "", "s.yaml: empty script file"},
		{"bad yaml", "turns: [\n", "s.yaml:1: did not find expected node content"},
		{"bad regex", "scripts:\n  - match: {model: '('}\n    turns: [{text: a}]\n", "s.yaml:2:13: scripts[0].match.model: bad regular expression: error parsing regexp: missing closing ): `(`"},
		{"goto unknown", "turns:\n  - text: a\n    goto: nowhere\n", `s.yaml:3:5: turns[0].goto: no turn has id "nowhere"`},
		{"bad session key", "session_key: ip\nturns: [{text: a}]\n", `s.yaml:1:1: session_key: "ip" is not session, key or round-robin`},
		{"branch without when", "turns:\n  - text: a\n    branches:\n      - text: b\n", "s.yaml:4:9: turns[0].branches[0].when: required"},
		{"empty when", "turns:\n  - text: a\n    branches:\n      - when: {}\n        text: b\n", "s.yaml:4:9: turns[0].branches[0].when: needs contains, regex or is_error"},
		{"input a list", "turns:\n  - tool_calls:\n      - name: Bash\n        input: [ls]\n", "s.yaml:4:9: turns[0].tool_calls[0].input: must be a mapping (the tool's arguments) or a string (a freeform tool's input)"},
		{"input a number", "turns:\n  - tool_calls:\n      - name: Bash\n        input: 3\n", "s.yaml:4:9: turns[0].tool_calls[0].input: must be a mapping (the tool's arguments) or a string (a freeform tool's input)"},
		{"scripts and turns", "scripts: [{turns: [{text: a}]}]\nturns: [{text: b}]\n", "s.yaml:1:1: scripts: a file holds either scripts: or one script's turns:, not both"},
		{"duplicate names", "scripts:\n  - {name: a, turns: [{text: x}]}\n  - {name: a, turns: [{text: y}]}\n", `s.yaml:1:1: scripts: duplicate script name "a"`},
		{"duplicate field", "turns:\n  - text: a\n    text: b\n", `s.yaml:3:5: turns[0].text: key "text" given twice (first at line 2)`},
		{"two documents", "turns: [{text: a}]\n---\nturns: [{text: b}]\n", "s.yaml:2: a second YAML document: the file must hold one"},
		{"text a list", "turns:\n  - text: [a]\n", "s.yaml:2:11: turns[0].text: must be a string, not a list"},
		{"is_error not bool", "turns:\n  - text: a\n    branches:\n      - when: {is_error: maybe}\n        text: b\n", "s.yaml:4:26: turns[0].branches[0].when.is_error: must be true or false"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseScripts("s.yaml", []byte(tt.src))
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, ErrScript) {
				t.Errorf("error %v does not wrap ErrScript", err)
			}
			var se *ScriptError
			if !errors.As(err, &se) {
				t.Fatalf("error %T is not a *ScriptError", err)
			}
			if got := strings.Split(err.Error(), "\n")[0]; got != tt.want {
				t.Errorf("error\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

// TestParseScriptsReportsEveryProblem: one parse reports every decoding
// problem, each located.
func TestParseScriptsReportsEveryProblem(t *testing.T) {
	t.Parallel()
	_, err := ParseScripts("s.yaml", []byte("turns:\n  - colour: red\n    text: [a]\n    tool_calls: [{name: x, inptu: {}}]\n"))
	want := "s.yaml:2:5: turns[0].colour: unknown field (want one of id, text, tool_calls, branches, goto)\n" +
		"s.yaml:3:11: turns[0].text: must be a string, not a list\n" +
		"s.yaml:4:28: turns[0].tool_calls[0].inptu: unknown field (want one of name, id, namespace, input)"
	if err == nil || err.Error() != want {
		t.Errorf("err\n got %v\nwant %s", err, want)
	}
}

func TestLoadScripts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "agents.yaml")
	if err := os.WriteFile(p, []byte("scripts:\n  - name: a\n    turns: [{text: x}]\n  - name: b\n    turns: [{text: y}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	scs, err := LoadScripts(p)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(scs.Names(), ","); got != "a,b" {
		t.Errorf("names %s", got)
	}
	if _, err := LoadScripts(filepath.Join(dir, "missing.yaml")); !errors.Is(err, ErrScript) || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

// anthTurn is an Anthropic request of a Claude-Code-like conversation:
// history alternates assistant tool_use and user tool_result messages.
func anthTurn(system string, results ...string) string {
	msgs := []string{`{"role":"user","content":"start"}`}
	for i, r := range results {
		isErr := strings.HasPrefix(r, "ERR:")
		r = strings.TrimPrefix(r, "ERR:")
		msgs = append(msgs,
			fmt.Sprintf(`{"role":"assistant","content":[{"type":"tool_use","id":"t%d","name":"Bash","input":{}}]}`, i),
			fmt.Sprintf(`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t%d","is_error":%t,"content":[{"type":"text","text":%q}]}]}`, i, isErr, r))
	}
	return fmt.Sprintf(`{"model":"claude-x","max_tokens":500,"system":%q,"tools":[{"name":"Bash"}],"messages":[%s]}`, system, strings.Join(msgs, ","))
}

const branchScript = `
turns:
  - id: test
    tool_calls: [{name: Bash, input: {command: "go test ./..."}}]
  - text: "fallthrough"
    branches:
      - when: {is_error: true, contains: FAIL}
        text: "fixing"
        tool_calls: [{name: Edit, input: {file_path: a.go}}]
        goto: test
      - when: {regex: "^ok\\s"}
        text: "tests pass"
        goto: end
final: "finished"
`

func replyText(t *testing.T, s *Server, body string, hdr ...string) (text string, tools []string) {
	t.Helper()
	w := do(t, s, "POST", "/v1/messages", body, hdr...)
	if w.Code != 200 {
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
	m := decode(t, w.Body.String())
	for _, b := range path(m, "content").([]any) {
		switch path(b, "type") {
		case "text":
			text = path(b, "text").(string)
		case "tool_use":
			tools = append(tools, path(b, "name").(string))
		}
	}
	return text, tools
}

func TestScriptBranches(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		results   []string
		wantText  string
		wantTools string
	}{
		{"first turn", nil, "", "Bash"},
		{"tests fail: fix and loop", []string{"ERR:--- FAIL: TestX"}, "fixing", "Edit"},
		{"after the fix: test again", []string{"ERR:--- FAIL: TestX", "edited"}, "", "Bash"},
		{"tests pass: end", []string{"ERR:--- FAIL: TestX", "edited", "ok  \tpkg 0.1s"}, "tests pass", ""},
		{"after the end: final text", []string{"ERR:--- FAIL: TestX", "edited", "ok  \tpkg 0.1s", "ignored"}, "finished", ""},
		{"no branch matches: the turn's own answer", []string{"something else"}, "fallthrough", ""},
		{"FAIL without is_error does not match", []string{"FAIL"}, "fallthrough", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newServer(t, Config{Scripts: scripted(t, branchScript)})
			body := anthTurn("sys", tt.results...)
			text, tools := replyText(t, s, body, "x-claude-code-session-id", "s1")
			if text != tt.wantText || strings.Join(tools, ",") != tt.wantTools {
				t.Errorf("got %q %v, want %q %q", text, tools, tt.wantText, tt.wantTools)
			}
			// A retry of the same request gets the same answer.
			text2, tools2 := replyText(t, s, body, "x-claude-code-session-id", "s1")
			if text2 != text || strings.Join(tools2, ",") != strings.Join(tools, ",") {
				t.Errorf("retry got %q %v", text2, tools2)
			}
		})
	}
}

func TestScriptSideRequests(t *testing.T) {
	t.Parallel()
	s := newServer(t, Config{Scripts: scripted(t, writeScript)})
	// A request without tools (a title or quota probe) gets default text.
	text, tools := replyText(t, s, anthSmall, "x-claude-code-session-id", "s1")
	if len(tools) != 0 || text != s.words.text(defaultTokensMean) {
		t.Errorf("side request got %q %v", text, tools)
	}
	text, tools = replyText(t, s, anthTurn("Working directory: /tmp/w"), "x-claude-code-session-id", "s1")
	if text != "Writing it." || len(tools) != 1 {
		t.Errorf("conversation request got %q %v", text, tools)
	}
	text, _ = replyText(t, s, anthSmall, "x-claude-code-session-id", "s1")
	if text != s.words.text(defaultTokensMean) {
		t.Errorf("side request inside the session got %q", text)
	}
}

func TestScriptMatchAndRotation(t *testing.T) {
	t.Parallel()
	src := `
session_key: session
scripts:
  - name: reviewer
    match: {system_regex: "(?i)review"}
    turns: [{text: "LGTM"}]
  - name: keyed
    match: {api_key: special, headers: {X-Apiary-Agent: "^w[0-9]+$"}}
    turns: [{text: "keyed"}]
  - name: writer-a
    match: {user: "start", model: "^claude"}
    turns: [{text: "A"}]
  - name: writer-b
    match: {user: "start", model: "^claude"}
    turns: [{text: "B"}]
`
	s := newServer(t, Config{Scripts: scripted(t, src)})
	cases := []struct {
		session, system string
		hdr             []string
		want            string
	}{
		{"r1", "Please review this", nil, "LGTM"},
		{"k1", "x", []string{"x-api-key", "special", "x-apiary-agent", "w7"}, "keyed"},
		{"w1", "x", nil, "A"},
		{"w2", "x", nil, "B"},
		{"w3", "x", nil, "A"},
		{"w1", "x", nil, "A"}, // sticky
		{"k2", "x", []string{"x-api-key", "special", "x-apiary-agent", "nope"}, "B"},
	}
	for _, c := range cases {
		hdr := append([]string{"x-claude-code-session-id", c.session}, c.hdr...)
		if got, _ := replyText(t, s, anthTurn(c.system), hdr...); got != c.want {
			t.Errorf("session %s: got %q, want %q", c.session, got, c.want)
		}
	}
}

func TestScriptCounterProgress(t *testing.T) {
	t.Parallel()
	src := "session_key: key\nprogress: counter\nturns: [{text: one}, {text: two}]\nfinal: three\n"
	s := newServer(t, Config{Scripts: scripted(t, src)})
	body := strings.Replace(anthSmall, `"messages"`, `"tools":[{"name":"x"}],"messages"`, 1)
	var got []string
	for range 4 {
		text, _ := replyText(t, s, body, "x-api-key", "k")
		got = append(got, text)
	}
	if strings.Join(got, ",") != "one,two,three,three" {
		t.Errorf("counter progress: %v", got)
	}
	// Another key has its own session.
	if text, _ := replyText(t, s, body, "x-api-key", "other"); text != "one" {
		t.Errorf("other key got %q", text)
	}
}

func TestScriptRoundRobinConversations(t *testing.T) {
	t.Parallel()
	src := "session_key: round-robin\nscripts:\n  - {name: a, turns: [{text: A}]}\n  - {name: b, turns: [{text: B}]}\n"
	s := newServer(t, Config{Scripts: scripted(t, src)})
	first := func(sys string) string {
		text, _ := replyText(t, s, anthTurn(sys))
		return text
	}
	if a, b, a2 := first("task 1"), first("task 2"), first("task 1"); a != "A" || b != "B" || a2 != "A" {
		t.Errorf("conversations got %s %s %s, want A B A", a, b, a2)
	}
}

func TestWorkingDir(t *testing.T) {
	t.Parallel()
	tests := []struct{ text, want string }{
		{"# Environment\nYou have been invoked in the following environment: \n - Primary working directory: /tmp/ccwd\n - Is a git repository: false\n", "/tmp/ccwd"},
		{"<env>\nWorking directory: /home/u/proj  \nIs directory a git repo: Yes\n</env>", "/home/u/proj"},
		{"nothing here", "."},
	}
	for _, tt := range tests {
		c := newConvo()
		c.addSystem("sys")
		c.message("user")
		c.text(tt.text)
		if got := c.workingDir(); got != tt.want {
			t.Errorf("workingDir(%q) = %q, want %q", tt.text, got, tt.want)
		}
	}
}

func TestSessionsResetOnNewScripts(t *testing.T) {
	t.Parallel()
	s := newServer(t, Config{Scripts: scripted(t, "progress: counter\nturns: [{text: one}, {text: two}]\n")})
	body := strings.Replace(anthSmall, `"messages"`, `"tools":[{"name":"x"}],"messages"`, 1)
	replyText(t, s, body)
	cfg := s.Config()
	cfg.Scripts = scripted(t, "progress: counter\nturns: [{text: new}]\n")
	if err := s.SetConfig(cfg); err != nil {
		t.Fatal(err)
	}
	if text, _ := replyText(t, s, body); text != "new" {
		t.Errorf("after new scripts got %q", text)
	}
}

// A subagent shares its parent's session header but has its own
// conversation: it gets a session (and script) of its own.
func TestScriptSubagentSession(t *testing.T) {
	t.Parallel()
	src := "scripts:\n  - {name: main, match: {user: start}, turns: [{text: MAIN}]}\n  - {name: sub, match: {user: explore}, turns: [{text: SUB}]}\n"
	s := newServer(t, Config{Scripts: scripted(t, src)})
	sub := strings.Replace(anthTurn("sys"), `"content":"start"`, `"content":"explore the repo"`, 1)
	for _, c := range []struct{ body, want string }{{anthTurn("sys"), "MAIN"}, {sub, "SUB"}, {anthTurn("sys", "r"), "Done."}} {
		if got, _ := replyText(t, s, c.body, "x-claude-code-session-id", "parent"); got != c.want {
			t.Errorf("got %q, want %q", got, c.want)
		}
	}
}
