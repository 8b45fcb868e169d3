package envelope

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

const sha1 = "0123456789abcdef0123456789abcdef01234567"

func testID(t testing.TB, ms int64, seed uint64) string {
	t.Helper()
	id, err := NewTaskID(time.UnixMilli(ms), rand.NewChaCha8([32]byte{byte(seed)}))
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func validEnvelope(t testing.TB) *Envelope {
	return &Envelope{
		TaskID:     testID(t, 1_700_000_000_000, 1),
		ParentID:   testID(t, 1_700_000_000_000, 2),
		RunID:      "run-1",
		Name:       "parse",
		Trace:      &Trace{Traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"},
		Objective:  "Add a tokenizer in src/parse",
		Inputs:     Inputs{Workspace: "git:" + sha1, Paths: []string{"src/parse/", "README.md"}},
		Authority:  Authority{Tools: []string{"Read", "Write"}, WriteScope: []string{"src/parse/"}, Network: NetworkGateway},
		Budget:     Budget{InputTokens: 200000, OutputTokens: 16384, USD: 2, WallClockS: 900},
		Completion: Completion{Checks: []string{"go test ./src/parse/..."}, Forbidden: BuiltinPatterns(), Sealed: []string{"tests/golden/"}},
		Deps:       []Dep{{Task: "spec", Kind: DepData}},
		Agent:      AgentRef{Profile: "cc", Kind: "claude"},
		LeaseS:     30,
		Tags:       []string{"go"},
	}
}

func TestEnvelopeRoundTrip(t *testing.T) {
	t.Parallel()
	e := validEnvelope(t)
	b, err := EncodeEnvelope(e)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeEnvelope(b)
	if err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	if !reflect.DeepEqual(got, e) {
		t.Errorf("round trip changed the envelope:\n got %+v\nwant %+v", got, e)
	}
	again, err := EncodeEnvelope(got)
	if err != nil || !bytes.Equal(again, b) {
		t.Errorf("re-encoding differs (%v):\n%s\n%s", err, again, b)
	}
	// Minimal envelope: nil slices are encoded as [] so the schema accepts them.
	min := &Envelope{TaskID: e.TaskID, Objective: "x", Inputs: Inputs{Workspace: "git:" + sha1}, Agent: AgentRef{Profile: "sh"}}
	b, err = EncodeEnvelope(min)
	if err != nil {
		t.Fatalf("minimal envelope: %v", err)
	}
	// nil Forbidden is the default, all built-ins, written out explicitly;
	// an empty list stays empty (none).
	if got, _ := DecodeEnvelope(b); len(got.Completion.Forbidden) != len(BuiltinPatterns()) {
		t.Errorf("nil forbidden decoded as %v", got.Completion.Forbidden)
	}
	min.Completion.Forbidden = []string{}
	b, _ = EncodeEnvelope(min)
	if got, _ := DecodeEnvelope(b); got.Completion.Forbidden == nil || len(got.Completion.Forbidden) != 0 {
		t.Errorf("empty forbidden decoded as %#v from %s", got.Completion.Forbidden, b)
	}
}

// TestEnvelopeInvalid checks that each kind of bad envelope is rejected on
// the way out and on the way back, with the field path named.
func TestEnvelopeInvalid(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		mutate func(*Envelope)
		path   string
		kw     string
	}{
		{"task id not uuid7", func(e *Envelope) { e.TaskID = "not-a-uuid" }, "task_id", "pattern"},
		{"task id uuid4", func(e *Envelope) { e.TaskID = "0f8fad5b-d9cb-469f-a165-70867728950e" }, "task_id", "pattern"},
		{"empty objective", func(e *Envelope) { e.Objective = "" }, "objective", "minLength"},
		{"workspace not a commit", func(e *Envelope) { e.Inputs.Workspace = "/home/me/repo" }, "inputs.workspace", "pattern"},
		{"scope escapes", func(e *Envelope) { e.Authority.WriteScope = []string{"src/../../etc"} }, "authority.write_scope[0]", "pattern"},
		{"absolute scope", func(e *Envelope) { e.Authority.WriteScope = []string{"/etc/passwd"} }, "authority.write_scope[0]", "pattern"},
		{"sealed dot-dot", func(e *Envelope) { e.Completion.Sealed = []string{".."} }, "completion.sealed[0]", "pattern"},
		{"unknown pattern", func(e *Envelope) { e.Completion.Forbidden = []string{"no-fun"} }, "completion.forbidden[0]", "enum"},
		{"bad dep kind", func(e *Envelope) { e.Deps[0].Kind = "weak" }, "deps[0].kind", "enum"},
		{"bad network", func(e *Envelope) { e.Authority.Network = "lan" }, "authority.network", "enum"},
		{"negative budget", func(e *Envelope) { e.Budget.USD = -1 }, "budget.usd", "minimum"},
		{"bad traceparent", func(e *Envelope) { e.Trace.Traceparent = "00-xyz" }, "trace.traceparent", "pattern"},
		{"bad profile", func(e *Envelope) { e.Agent.Profile = "Bad Name" }, "agent.profile", "pattern"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := validEnvelope(t)
			tt.mutate(e)
			_, err := EncodeEnvelope(e)
			assertViolation(t, err, tt.path, tt.kw)

			// The same document coming back (written by an agent) is rejected too.
			raw, _ := json.Marshal(e)
			_, err = DecodeEnvelope(raw)
			assertViolation(t, err, tt.path, tt.kw)
		})
	}
}

func assertViolation(t *testing.T, err error, path, kw string) {
	t.Helper()
	var ve *ValidationError
	if !errors.As(err, &ve) || !errors.Is(err, ErrInvalid) {
		t.Fatalf("err = %v, want a *ValidationError wrapping ErrInvalid", err)
	}
	for _, v := range ve.Violations {
		if FormatPath(v.Path) == path && v.Keyword == kw {
			return
		}
	}
	t.Fatalf("no %s violation at %s in %v", kw, path, ve)
}

func TestDecodeRejects(t *testing.T) {
	t.Parallel()
	good, err := EncodeEnvelope(validEnvelope(t))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		doc  string
		want error
		path string
	}{
		{"empty", "", ErrSyntax, ""},
		{"trailing data", string(good) + "{}", ErrSyntax, ""},
		{"duplicate key", `{"task_id":"a","task_id":"b"}`, ErrSyntax, ""},
		{"not an object", `[1,2]`, ErrInvalid, ""},
		{"unknown field", strings.Replace(string(good), `{"agent"`, `{"surprise":1,"agent"`, 1), ErrInvalid, "surprise"},
		{"missing field", strings.Replace(string(good), `"objective":"Add a tokenizer in src/parse",`, "", 1), ErrInvalid, ""},
		{"invalid utf8", "{\"objective\":\"\xff\"}", ErrSyntax, ""},
		{"too deep", strings.Repeat("[", 100) + strings.Repeat("]", 100), ErrSyntax, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := DecodeEnvelope([]byte(tt.doc))
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if tt.path != "" {
				assertViolation(t, err, tt.path, "additionalProperties")
			}
		})
	}
}

func TestReceiptRoundTrip(t *testing.T) {
	t.Parallel()
	ff := "fast-forward"
	r := &Receipt{
		TaskID: testID(t, 1_700_000_000_001, 3), RunID: "r1", Name: "parse", Attempt: 1,
		Status: StatusFailed, Reason: "gate rejected the candidate", Base: sha1, Commit: strings.Repeat("a", 40),
		ChangedPaths: []string{"src/parse/lex.go"},
		Usage:        Usage{InputTokens: 10, OutputTokens: 5, USD: 0.25, WallS: 12.5},
		Checks:       []CheckResult{{Command: "go test ./...", Exit: 1, Duration: 3.25, Log: "checks/0.log"}},
		Gate:         &GateReason{Gate: "forbidden", Pattern: PatternDeletedTests, File: "a_test.go", Line: 12, Detail: "TestX deleted"},
		Integrated:   &ff,
		Summary:      "did it",
		FencingToken: 7,
	}
	b, err := EncodeReceipt(r)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeReceipt(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, r) {
		t.Errorf("round trip:\n got %+v\nwant %+v", got, r)
	}
	// A receipt with no gate failure encodes "gate":null and empty lists.
	ok := &Receipt{TaskID: r.TaskID, Status: StatusSucceeded}
	b, err = EncodeReceipt(ok)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(`"gate":null`)) || !bytes.Contains(b, []byte(`"changed_paths":[]`)) {
		t.Errorf("encoding %s lacks gate:null or changed_paths:[]", b)
	}
	// Bounded summary; bad status; bad gate name.
	for _, m := range []struct {
		mutate func(*Receipt)
		path   string
		kw     string
	}{
		{func(r *Receipt) { r.Summary = strings.Repeat("x", MaxSummary+1) }, "summary", "maxLength"},
		{func(r *Receipt) { r.Status = "done" }, "status", "enum"},
		{func(r *Receipt) { r.Gate.Gate = "vibes" }, "gate.gate", "enum"},
		{func(r *Receipt) { r.Commit = "HEAD" }, "commit", "pattern"},
	} {
		c := *r
		g := *r.Gate
		c.Gate = &g
		m.mutate(&c)
		_, err := EncodeReceipt(&c)
		assertViolation(t, err, m.path, m.kw)
	}
	if s := TruncateSummary(strings.Repeat("é", MaxSummary+10)); len([]rune(s)) != MaxSummary {
		t.Errorf("TruncateSummary kept %d characters", len([]rune(s)))
	}
}

// TestPublishedSchemasMatch keeps docs/schema/*.json identical to the
// embedded copies.
func TestPublishedSchemasMatch(t *testing.T) {
	t.Parallel()
	for _, n := range SchemaNames() {
		emb, err := SchemaSource(n)
		if err != nil {
			t.Fatal(err)
		}
		pub, err := os.ReadFile(filepath.Join("..", "..", "docs", "schema", n+".json"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(emb, pub) {
			t.Errorf("docs/schema/%s.json differs from internal/envelope/schema/%s.json; copy it", n, n)
		}
		if _, err := LookupSchema(n); err != nil {
			t.Errorf("schema %s: %v", n, err)
		}
	}
}
