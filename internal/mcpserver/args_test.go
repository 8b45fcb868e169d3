package mcpserver

import (
	"encoding/json"
	"testing"

	"github.com/apiary-dev/apiary/internal/durable"
)

// FuzzParseArgs: arbitrary argument JSON is either accepted with values of
// the declared types or refused with a policy_violation/encoding envelope;
// it never panics.
func FuzzParseArgs(f *testing.F) {
	for _, s := range []string{`{"path":"a","content":"b"}`, `null`, `[]`, `{"path":1}`, `{"x":true}`, `{"path":"a","content":"b","classify":"no"}`, ``, `{"n":1e3}`} {
		f.Add(s)
	}
	params := writeTools(nil)[0].params
	f.Fuzz(func(t *testing.T, raw string) {
		a, e := parseArgs(params, json.RawMessage(raw))
		if e != nil {
			if e.Kind != durable.KindPolicyViolation || e.Reason != durable.ReasonEncoding {
				t.Fatalf("%q: %v", raw, e)
			}
			return
		}
		for _, p := range params {
			if v, ok := a[p.name]; ok && !hasType(v, p.typ) {
				t.Fatalf("%q: %s has the wrong type", raw, p.name)
			}
		}
	})
}
