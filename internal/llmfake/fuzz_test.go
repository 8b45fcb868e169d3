package llmfake

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func FuzzParseScripts(f *testing.F) {
	f.Add(writeScript)
	f.Add(branchScript)
	f.Add("session_key: round-robin\nscripts:\n  - name: w\n    match: {user: x, any_request: true}\n    turns:\n      - text: \"{{cwd}}\"\n        branches: [{when: {is_error: true}, text: e, goto: end}]\n    final: f\n")
	f.Add("scripts:\n  - {name: a, match: {headers: {X: '['}}, turns: [{text: x, goto: y}]}\n")
	f.Add("turns: [{tool_calls: [{name: Bash, input: {a: [1, {b: null}], 3: x}}]}]\n")
	f.Add("progress: counter\nsession_key: key\nturns: [{text: a, branches: [{when: {regex: '(', is_error: yes}, text: b}]}]")
	f.Fuzz(func(t *testing.T, src string) {
		scs, err := ParseScripts("f.yaml", []byte(src))
		if err != nil {
			var se *ScriptError
			if !errors.As(err, &se) || !errors.Is(err, ErrScript) || !strings.HasPrefix(err.Error(), "f.yaml") {
				t.Fatalf("error %v (%T) is not a located ScriptError", err, err)
			}
			return
		}
		if len(scs.Names()) == 0 {
			t.Fatal("parsed a file without scripts")
		}
		for _, sc := range scs.list {
			for _, tn := range sc.turns {
				for _, r := range append([]*response{&tn.resp}, branchResponses(tn)...) {
					if r.next < 0 || r.next > len(sc.turns) {
						t.Fatalf("goto resolved to %d of %d turns", r.next, len(sc.turns))
					}
					for _, c := range r.calls {
						if _, err := json.Marshal(c.input); err != nil {
							t.Fatalf("tool input not JSON-encodable: %v", err)
						}
					}
				}
			}
		}
	})
}

func branchResponses(t turn) []*response {
	var out []*response
	for i := range t.branches {
		out = append(out, &t.branches[i].resp)
	}
	return out
}

// FuzzRequests sends arbitrary bodies to every model endpoint: the server
// must answer 200 or a 4xx in the provider's JSON shape, never panic.
func FuzzRequests(f *testing.F) {
	f.Add(0, anthSmall)
	f.Add(0, anthTurn("Working directory: /x", "ERR:FAIL", "ok"))
	f.Add(1, `{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"tool","content":[{"type":"text","text":"r"}]}]}`)
	f.Add(2, `{"model":"m","input":[{"type":"function_call","name":"f","arguments":"{}"},{"type":"function_call_output","output":"x"}],"stream":true}`)
	f.Add(3, `{"model":"m","input":[[1,2],[3]],"encoding_format":"base64","dimensions":3}`)
	f.Add(4, `{"contents":[{"role":"model","parts":[{"functionCall":{"name":"f","args":{}}}]},{"parts":[{"function_response":{"response":{}}}]}]}`)
	f.Add(5, `{"model":"l","messages":[{"role":"tool","content":"x"}],"options":{"num_predict":2}}`)
	f.Add(6, `{"model":"l","prompt":"p","system":"s","stream":false}`)
	f.Add(7, `{"model":"m","messages":[{"role":"user","content":[{"type":"tool_result","content":"x","is_error":true}]}]}`)
	targets := []string{"/v1/messages", "/v1/chat/completions", "/v1/responses", "/v1/embeddings",
		"/v1beta/models/g:streamGenerateContent?alt=sse", "/api/chat", "/api/generate", "/v1/messages/count_tokens"}
	s := newServer(f, Config{Scripts: scripted(f, branchScript)})
	f.Fuzz(func(t *testing.T, which int, body string) {
		if which < 0 {
			which = -which
		}
		target := targets[which%len(targets)]
		w := do(t, s, "POST", target, body, "x-claude-code-session-id", "fuzz")
		switch {
		case w.Code == 200:
		case w.Code == 400 || w.Code == 413:
			if !json.Valid(w.Body.Bytes()) {
				t.Fatalf("%s: %d body is not JSON: %q", target, w.Code, w.Body)
			}
		default:
			t.Fatalf("%s: status %d: %s", target, w.Code, w.Body)
		}
	})
}

// FuzzConfigPatch: any POST /_config leaves a valid configuration.
func FuzzConfigPatch(f *testing.F) {
	f.Add(`{"limits":{"rpm":5,"window":"bucket","window_length":"2s"}}`)
	f.Add(`{"faults":{"latency":"80ms","jitter":50,"error_rate":0.1,"error_statuses":[502]}}`)
	f.Add(`{"faults":{"reset_rate":0.7,"error_rate":0.7}}`)
	f.Add(`{"format":"ollama","time_scale":0.01,"output":{"tokens_mean":150,"tokens_std":50}}`)
	f.Add(`{"limits":{"window_length":"-1s"}}`)
	f.Fuzz(func(t *testing.T, patch string) {
		s := newServer(t, Config{})
		w := do(t, s, "POST", "/_config", patch)
		if w.Code != 200 && w.Code != 400 {
			t.Fatalf("status %d", w.Code)
		}
		cfg := s.Config()
		if err := cfg.Validate(); err != nil {
			t.Fatalf("server holds an invalid config after %q: %v", patch, err)
		}
		if w.Code == 200 {
			var back Config
			if err := json.Unmarshal(w.Body.Bytes(), &back); err != nil {
				t.Fatalf("config JSON does not round-trip: %v", err)
			}
		}
	})
}
