package llmfake

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
)

// What Codex and Gemini CLI send, as the measured CLIs send it.

func scriptsOf(t testing.TB, src string) *Scripts {
	t.Helper()
	scs, err := ParseScripts("t.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return scs
}

// codexInput is the shape of a Codex request's input: developer
// instructions, its <environment_context> as a user message of its own, a
// configuration_update item, then the prompt.
func codexInput(prompt string, extra ...string) string {
	items := []string{
		`{"type":"message","role":"developer","content":[{"type":"input_text","text":"You are a coding agent running in the Codex CLI."}]}`,
		`{"type":"message","role":"user","content":[{"type":"input_text","text":"<environment_context>\n  <cwd>/work/tree one</cwd>\n  <shell>bash</shell>\n</environment_context>"}]}`,
		`{"type":"configuration_update","content":[{"type":"input_text","text":"model switched"}]}`,
		`{"type":"message","role":"user","content":[{"type":"input_text","text":` + mustQuote(prompt) + `}]}`,
	}
	return "[" + strings.Join(append(items, extra...), ",") + "]"
}

func mustQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestResponsesCodexShapes: a prompt in Codex's second user message is
// matched; {{cwd}} comes from <cwd>; tools inside an additional_tools item
// count as tools; a string input is a custom_tool_call; a Claude-style MCP
// name resolves to the namespace the request declares.
func TestResponsesCodexShapes(t *testing.T) {
	t.Parallel()
	s := newServer(t, Config{Scripts: scriptsOf(t, `
session_key: key
scripts:
  - name: code
    match: {user: "run the code"}
    turns:
      - tool_calls:
          - {name: exec, input: "await tools.exec_command({cmd: 'ls {{cwd}}'})"}
      - tool_calls:
          - {name: mcp__apiary__rw_safe_write, input: {path: "{{cwd}}/a.txt", content: "x"}}
          - {name: exec_command, input: {cmd: "true"}}
      - text: "did not see the result"
        branches:
          - when: {contains: "written"}
            text: "saw it"
`)})
	codeMode := `{"type":"additional_tools","tools":[{"type":"namespace","name":"functions","tools":[{"type":"custom","name":"exec","format":{"type":"grammar","syntax":"lark","definition":"start: /.+/"}}]}]}`
	body := `{"model":"gpt-6","stream":false,"input":` + codexInput("please run the code", codeMode) + `}`
	w := do(t, s, "POST", "/v1/responses", body, "Authorization", "Bearer k")
	if w.Code != 200 {
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
	out := path(decode(t, w.Body.String()), "output").([]any)
	call := out[len(out)-1].(map[string]any)
	if call["type"] != "custom_tool_call" || call["name"] != "exec" || call["input"] != "await tools.exec_command({cmd: 'ls /work/tree one'})" {
		t.Fatalf("want a custom_tool_call of exec with the cwd filled in, got %v", call)
	}

	// Turn 2: the custom call and its output are history; the MCP tool is
	// declared in a namespace at the top level.
	hist := `{"type":"custom_tool_call","call_id":"c1","name":"exec","input":"x"},{"type":"custom_tool_call_output","call_id":"c1","output":"a.txt"}`
	body = `{"model":"gpt-6","stream":true,"tools":[{"type":"function","name":"exec_command","parameters":{}},` +
		`{"type":"namespace","name":"mcp__apiary","tools":[{"type":"function","name":"rw_safe_write","parameters":{}}]}],"input":` +
		codexInput("please run the code", hist) + `}`
	w = do(t, s, "POST", "/v1/responses", body, "Authorization", "Bearer k")
	var done []map[string]any
	for _, ev := range events(t, w.Body.String()) {
		if ev.Type == "response.output_item.done" {
			done = append(done, path(decode(t, ev.Data), "item").(map[string]any))
		}
	}
	if len(done) != 2 {
		t.Fatalf("want 2 function calls, got %v", done)
	}
	if done[0]["namespace"] != "mcp__apiary" || done[0]["name"] != "rw_safe_write" || !strings.Contains(done[0]["arguments"].(string), `"/work/tree one/a.txt"`) {
		t.Errorf("MCP call %v: want namespace mcp__apiary, name rw_safe_write", done[0])
	}
	if _, has := done[1]["namespace"]; has || done[1]["name"] != "exec_command" {
		t.Errorf("flat call %v: want no namespace", done[1])
	}

	// Turn 3 branches on the function_call_output.
	hist += `,{"type":"function_call","call_id":"c2","namespace":"mcp__apiary","name":"rw_safe_write","arguments":"{}"},` +
		`{"type":"function_call_output","call_id":"c2","output":[{"type":"input_text","text":"{\"ok\":true,\"written\":1}"}]}`
	body = `{"model":"gpt-6","tools":[{"type":"function","name":"exec_command"}],"input":` + codexInput("please run the code", hist) + `}`
	w = do(t, s, "POST", "/v1/responses", body, "Authorization", "Bearer k")
	if got := path(decode(t, w.Body.String()), "output", 0, "content", 0, "text"); got != "saw it" {
		t.Errorf("turn 3 = %v, want the branch on the tool output", got)
	}
}

// TestAdditionalToolsOnly: a request whose only tools are in an
// additional_tools item follows the script (side requests without tools do
// not), and a configuration_update item is nobody's message.
func TestAdditionalToolsOnly(t *testing.T) {
	t.Parallel()
	s := newServer(t, Config{Scripts: scriptsOf(t, "session_key: key\nturns:\n  - text: scripted\n")})
	tools := `{"type":"additional_tools","tools":[{"type":"function","name":"exec_command"}]}`
	for _, tc := range []struct {
		extra, want string
	}{{tools, "scripted"}, {"", ""}} {
		var extra []string
		if tc.extra != "" {
			extra = append(extra, tc.extra)
		}
		c, err := parseResponses([]byte(`{"model":"m","input":`+codexInput("hi", extra...)+`}`), "")
		if err != nil {
			t.Fatal(err)
		}
		if c.hasTools != (tc.want != "") || c.firstUser != "<environment_context>\n  <cwd>/work/tree one</cwd>\n  <shell>bash</shell>\n</environment_context>" {
			t.Errorf("hasTools %v firstUser %q", c.hasTools, c.firstUser)
		}
		if len(c.users) != 2 || c.users[1] != "hi" {
			t.Errorf("user messages %q: want the context and the prompt only", c.users)
		}
		w := do(t, s, "POST", "/v1/responses", `{"model":"m","input":`+codexInput("hi", extra...)+`}`, "Authorization", "Bearer k2")
		got := path(decode(t, w.Body.String()), "output", 0, "content", 0, "text")
		if (tc.want != "") != (got == tc.want) {
			t.Errorf("reply %q with extra %q", got, tc.extra)
		}
	}
}

// TestWorkingDirForms: {{cwd}} from each client's way of stating it.
func TestWorkingDirForms(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ text, want string }{
		{"<env>\n - Primary working directory: /a/claude\n</env>", "/a/claude"},
		{"Here is some useful information.\nWorking directory: /a/open code\nIs a git repo: no", "/a/open code"},
		{"<environment_context>\n  <cwd>/a/codex</cwd>\n</environment_context>", "/a/codex"},
		{"- **Workspace Directories:**\n  - /a/gemini\n- **Directory Structure:**", "/a/gemini"},
		{"Workspace Directories:\n - /a/gemini2\n", "/a/gemini2"},
		{"no directory here", "."},
	} {
		c := newConvo()
		c.message("user")
		c.text(tc.text)
		if got := c.workingDir(); got != tc.want {
			t.Errorf("workingDir(%q) = %q, want %q", tc.text, got, tc.want)
		}
	}
}

// TestUserMatchAnyMessage: user: and user_regex: see every user message,
// each on its own.
func TestUserMatchAnyMessage(t *testing.T) {
	t.Parallel()
	c := newConvo()
	for _, m := range [][2]string{{"user", "<environment_context/>"}, {"assistant", "ok"}, {"user", "write the greeting please"}} {
		c.message(m[0])
		c.text(m[1])
	}
	for _, tc := range []struct {
		m    match
		want bool
	}{
		{match{user: "write the greeting"}, true},
		{match{user: "environment_context"}, true},
		{match{user: "ok"}, false},                                   // the assistant's
		{match{user: "greeting", userRe: mustRe(t, "^<env")}, false}, // both on one message
		{match{userRe: mustRe(t, "please$")}, true},
	} {
		if got := tc.m.ok(c, "", nil); got != tc.want {
			t.Errorf("match %+v = %v, want %v", tc.m, got, tc.want)
		}
	}
}

// TestGeminiJSONMode: Gemini CLI's router asks for JSON for a schema and
// must get it, in both streaming and plain replies.
func TestGeminiJSONMode(t *testing.T) {
	t.Parallel()
	s := newServer(t, Config{})
	schema := `{"type":"OBJECT","properties":{"complexity_reasoning":{"type":"STRING"},"complexity_score":{"type":"INTEGER","minimum":1,"maximum":100},` +
		`"tags":{"type":"ARRAY","items":{"type":"STRING","enum":["a","b"]},"minItems":2},"ok":{"type":["boolean","null"]}},"required":["complexity_reasoning","complexity_score"]}`
	body := `{"contents":[{"role":"user","parts":[{"text":"route this"}]}],"generationConfig":{"responseMimeType":"application/json","responseJsonSchema":` + schema + `}}`
	w := do(t, s, "POST", "/v1beta/models/gemini-3.5-flash-lite:generateContent", body, "X-Goog-Api-Key", "k")
	text, _ := path(decode(t, w.Body.String()), "candidates", 0, "content", "parts", 0, "text").(string)
	var v struct {
		Reasoning string   `json:"complexity_reasoning"`
		Score     *int     `json:"complexity_score"`
		Tags      []string `json:"tags"`
		OK        *bool    `json:"ok"`
	}
	if err := json.Unmarshal([]byte(text), &v); err != nil {
		t.Fatalf("reply %q is not JSON: %v", text, err)
	}
	if v.Reasoning == "" || v.Score == nil || *v.Score < 1 || *v.Score > 100 || len(v.Tags) != 2 || v.Tags[0] != "a" || v.OK == nil {
		t.Errorf("reply %s does not fit the schema", text)
	}
	usage := num(path(decode(t, w.Body.String()), "usageMetadata", "candidatesTokenCount"))
	if usage != tokensOf(len(text)) {
		t.Errorf("output tokens %d for %d bytes", usage, len(text))
	}
	// Without a schema, JSON mode still answers JSON.
	body = `{"contents":[{"role":"user","parts":[{"text":"x"}]}],"generationConfig":{"responseMimeType":"application/json"}}`
	w = do(t, s, "POST", "/v1beta/models/m:streamGenerateContent?alt=sse", body, "X-Goog-Api-Key", "k")
	var all string
	for _, ev := range events(t, w.Body.String()) {
		p, _ := path(decode(t, ev.Data), "candidates", 0, "content", "parts", 0, "text").(string)
		all += p
	}
	if !json.Valid([]byte(all)) {
		t.Errorf("streamed JSON-mode reply %q is not JSON", all)
	}
}

// FuzzSchemaExample: any schema yields valid JSON, without panicking.
func FuzzSchemaExample(f *testing.F) {
	for _, s := range []string{`{"type":"OBJECT","properties":{"a":{"type":"INTEGER"}}}`, `{"anyOf":[{"type":"string"}]}`,
		`{"type":"array","items":{"type":"array","items":{}},"minItems":1e9}`, `{"enum":[]}`, `[]`, `null`, `{"type":["null"]}`,
		`{"type":"string","minLength":-5}`, `{"properties":{"x":{"properties":{"y":{"items":{}}}}}}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, schema string) {
		out := schemaExample(json.RawMessage(schema))
		if !json.Valid(out) {
			t.Fatalf("schema %q gave invalid JSON %q", schema, out)
		}
	})
}

func mustRe(t testing.TB, s string) *regexp.Regexp {
	t.Helper()
	re, err := regexp.Compile(s)
	if err != nil {
		t.Fatal(err)
	}
	return re
}
