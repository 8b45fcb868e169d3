package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// FuzzDecodeLine: any line is either a message or an error reply that is
// itself a JSON-RPC 2.0 error with a spec code (-32700 only for text that is
// not JSON); a delivered tools/call's arguments survive the split intact.
func FuzzDecodeLine(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`, `[]`, `{}`, `null`, `{"jsonrpc":"2.0","id":1.5,"method":"x"}`,
		`{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"rw.stat","arguments":{"path":"x\u00e9"},"_meta":{"progressToken":1}}}`,
		`{"jsonrpc":"2.0","id":2,"result":{}}`, `{"jsonrpc":"2.0","id":"x","method":7}`, "{\"a\":\"\xff\"}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		msg, bad := decodeLine(line)
		if bad != nil {
			var reply struct {
				JSONRPC string          `json:"jsonrpc"`
				ID      json.RawMessage `json:"id"`
				Error   struct {
					Code int64 `json:"code"`
				} `json:"error"`
			}
			if err := json.Unmarshal(bad.encode(), &reply); err != nil || reply.JSONRPC != "2.0" || len(reply.ID) == 0 {
				t.Fatalf("bad reply %s", bad.encode())
			}
			switch reply.Error.Code {
			case jsonrpc.CodeParseError:
				if json.Valid(line) {
					t.Fatalf("valid JSON %q answered as a parse error", line)
				}
			case jsonrpc.CodeInvalidRequest:
			default:
				t.Fatalf("code %d for %q", reply.Error.Code, line)
			}
			return
		}
		if !json.Valid(line) {
			t.Fatalf("invalid JSON %q accepted", line)
		}
		if c, ok := msg.(call); ok {
			params, tok, err := predecodeCall(c.members)
			if err != nil {
				return
			}
			var p struct {
				Arguments json.RawMessage `json:"arguments"`
				Meta      map[string]any  `json:"_meta"`
			}
			if err := json.Unmarshal(params, &p); err != nil {
				t.Fatalf("rewritten params %s: %v", params, err)
			}
			if tok == "" {
				return
			}
			got, _, end, ok := takeCall(context.Background(), p.Meta)
			if !ok {
				t.Fatalf("token %s not found", tok)
			}
			end()
			var orig struct {
				Params struct {
					Arguments map[string]json.RawMessage `json:"arguments"`
				} `json:"params"`
			}
			json.Unmarshal(line, &orig)
			for k, v := range orig.Params.Arguments {
				var a, b any
				json.Unmarshal(v, &a)
				json.Unmarshal(got[k], &b)
				ja, _ := json.Marshal(a)
				jb, _ := json.Marshal(b)
				if string(ja) != string(jb) {
					t.Fatalf("argument %s: %s became %s", k, v, got[k])
				}
			}
		}
	})
}

// FuzzUnquote: unquote decodes every JSON string literal exactly as
// encoding/json does (invalid UTF-8 and lone surrogates to U+FFFD).
func FuzzUnquote(f *testing.F) {
	for _, s := range []string{`""`, `"a\"b\\c"`, `"\u00e9\ud83d\ude00"`, `"\ud800x"`, "\"\xff\"", `"\n\t\/"`, `"\udc00\ud800"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var want string
		if json.Unmarshal([]byte(s), &want) != nil {
			return
		}
		got, ok := unquote(bytes.TrimSpace([]byte(s))) // as split out: no blanks around
		if bytes.TrimSpace([]byte(s))[0] != '"' {
			return
		}
		if !ok || got != want {
			t.Fatalf("unquote(%q) = %q, %v; encoding/json says %q", s, got, ok, want)
		}
	})
}
