package review

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/apiary-dev/apiary/internal/attempt"
	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/envtest"
	"github.com/apiary-dev/apiary/internal/git/gittest"
	"github.com/apiary-dev/apiary/internal/llmfake"
)

// The fixture: a small Go module with a decision record, tests and a
// benchmark. Three prepared changes branch off main.
const (
	e2eMod  = "module ex.com/shop\n\ngo 1.22\n"
	e2eCalc = `package calc

// Sum adds up xs.
// decision: D-1
func Sum(xs []int) int {
	s := 0
	for _, x := range xs {
		s += x
	}
	return s
}

// Add adds two numbers.
func Add(a, b int) int { return a + b }
`
	e2eCalcTest = `package calc

import "testing"

func TestAdd(t *testing.T) {
	if Add(2, 3) != 5 {
		t.Fatal("Add(2, 3) != 5")
	}
}

func TestSum(t *testing.T) {
	if Sum([]int{1, 2, 3}) != 6 {
		t.Fatal("Sum")
	}
}

var xs = make([]int, 1000)

func BenchmarkSum(b *testing.B) {
	for b.Loop() {
		Sum(xs)
	}
}
`
	e2eDecision = "# D-1: Sums are plain loops\n\nStatus: accepted\n\n## Decision\n\nNo generics here.\n"
	e2eMul      = "package calc\n\n// Mul multiplies two numbers.\nfunc Mul(a, b int) int { return a * b }\n"
	e2eMulTest  = "package calc\n\nimport \"testing\"\n\nfunc TestMul(t *testing.T) {\n\tif Mul(2, 3) != 6 {\n\t\tt.Fatal(\"Mul\")\n\t}\n}\n"
)

// e2eConfig: the deterministic analysers, one Claude Code analyser
// scripted through llmfake, and a command agent that reacts to secrets.
// The benchmark comparison runs only on changes to calc.go.
const e2eConfig = `
agents:
  llm: {kind: claude, model: claude-sonnet-4-5}
  writer: {kind: command, argv: [sh, -c, 'n=$(grep -c "\"kind\": \"secret\"" "$APIARY_SUBSCRIBED"); printf "{\"findings\":[{\"kind\":\"test-suggestion\",\"severity\":\"info\",\"evidence\":\"add a test that fails on %s committed secret(s)\"}]}" "$n" > "$APIARY_FINDINGS"']}
analysers:
  - {name: secrets, builtin: secret-scan}
  - {name: forbidden, builtin: forbidden-patterns}
  - {name: tests, builtin: go-test, when: {paths: ["*.go"]}}
  - {name: bench, builtin: go-bench, when: {paths: [calc/calc.go]}, with: {benchtime: 300x, count: 5}}
  - {name: api, builtin: api-diff}
  - {name: decisions, builtin: decisions}
  - name: llm-review
    agent: llm
    objective: Look for injection and unsafe input handling in the changed code.
    budget: {usd: 1, wall_clock_s: 180}
  - {name: test-writer, agent: writer, subscribe: [secret]}
decision:
  min_coverage_delta: -20
  max_bench_regression_pct: 10
`

// e2eScripts: the analyser reads the code, then reports one note; the two
// reviewers disagree.
const e2eScripts = `
session_key: session
scripts:
  - name: analyser
    match: {api_key: review-llm-review}
    turns:
      - text: "Reading the code."
        tool_calls:
          - {name: Read, input: {file_path: "{{cwd}}/calc/calc.go"}}
    final: '{"findings": [{"kind": "note", "severity": "info", "file": "calc/calc.go", "line": 5, "evidence": "Sum takes no external input: no injection risk"}]}'
  - name: alice
    match: {api_key: review-reviewer-1}
    turns:
      - text: "Reading the new function."
        tool_calls:
          - {name: Read, input: {file_path: "{{cwd}}/calc/mul.go"}}
    final: '{"verdict": "approve", "summary": "Mul is small, correct and tested."}'
  - name: bob
    match: {api_key: review-reviewer-2}
    turns:
      - text: "Reading the new function."
        tool_calls:
          - {name: Read, input: {file_path: "{{cwd}}/calc/mul.go"}}
    final: '{"verdict": "block", "summary": "Mul can overflow.", "objections": [{"severity": "medium", "file": "calc/mul.go", "line": 4, "evidence": "Mul overflows silently on large inputs"}]}'
`

// scriptedAccess gives every review task the key review-<task>, which
// selects its script in llmfake.
type scriptedAccess struct{ url string }

func (s scriptedAccess) Grant(_ context.Context, ref attempt.TaskRef, _ envelope.Budget) (attempt.Access, error) {
	return attempt.Access{BaseURL: s.url, APIKey: "review-" + ref.Task}, nil
}

func (scriptedAccess) Usage(context.Context, string) (attempt.Usage, error) {
	return attempt.Usage{}, nil
}

// TestReviewEndToEnd is the gatekeeper on a real repository: a clean change
// merges (and is applied through the runtime), a change that adds a secret
// and deletes a test is blocked citing both, a benchmark regression is
// blocked, and two scripted Claude Code reviewers who disagree escalate to
// a human. Every analyser is a real process: go test, the benchmark
// binaries, Claude Code against llmfake, a command agent.
func TestReviewEndToEnd(t *testing.T) {
	t.Parallel()
	claude := envtest.Claude(t)
	envtest.Command(t, "go")
	scripts, err := llmfake.ParseScripts("review.yaml", []byte(e2eScripts))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := llmfake.New(llmfake.Config{Scripts: scripts}, llmfake.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := llmfake.Serve(l, srv)
	t.Cleanup(func() { hs.Close() })

	repo := gittest.NewRepo(t, map[string]string{"go.mod": e2eMod, "calc/calc.go": e2eCalc, "calc/calc_test.go": e2eCalcTest,
		"docs/decisions/D-1-sums.md": e2eDecision})
	start := gittest.Git(t, repo.Dir(), "rev-parse", "main")
	key := "sk-" + "proj-" + strings.Repeat("Qz9Lw2", 8) // assembled: no secret in this file
	branch(t, repo, "clean", "main", map[string]string{"calc/mul.go": e2eMul, "calc/mul_test.go": e2eMulTest})
	branch(t, repo, "leaky", "main", map[string]string{
		"calc/config.go":    "package calc\n\n// APIKey is used by the client.\nconst APIKey = \"" + key + "\"\n",
		"calc/calc_test.go": strings.Replace(e2eCalcTest, "func TestAdd(t *testing.T) {\n\tif Add(2, 3) != 5 {\n\t\tt.Fatal(\"Add(2, 3) != 5\")\n\t}\n}\n\n", "", 1),
	})
	branch(t, repo, "slow", "main", map[string]string{"calc/calc.go": strings.Replace(e2eCalc,
		"\tfor _, x := range xs {\n\t\ts += x\n\t}", "\tfor range 30 {\n\t\ts = 0\n\t\tfor _, x := range xs {\n\t\t\ts += x\n\t\t}\n\t}", 1)})

	st := localBoard(t)
	opt := Options{Repo: repo, Board: st, Secrets: newScanner(t), Models: scriptedAccess{hs.URL}, AgentBin: map[string]string{"claude": claude}}
	cfg := mustConfig(t, e2eConfig)
	// The reviewer stage runs after the gates; the cheap ones suffice here
	// (the full set is exercised above), so the test stays lean.
	withReviewers := mustConfig(t, `
agents:
  alice: {kind: claude, model: claude-sonnet-4-5}
  bob: {kind: claude, model: claude-opus-4-1}
analysers:
  - {name: secrets, builtin: secret-scan}
  - {name: forbidden, builtin: forbidden-patterns}
  - {name: decisions, builtin: decisions}
reviewers: {agents: [alice, bob], escalate: human}
`)

	t.Run("clean change merges and is applied", func(t *testing.T) {
		t.Parallel()
		rep := review(t, opt, Request{Base: "main", Head: "clean", Config: cfg, Apply: true})
		if rep.Decision != Merge {
			t.Fatalf("decision %s: %v\n%s", rep.Decision, rep.Reasons, markdown(t, rep))
		}
		checkAnalysers(t, rep, map[string]string{"secrets": "ok", "forbidden": "ok", "tests": "ok", "api": "ok", "decisions": "ok",
			"llm-review": "ok", "bench": "skipped", "test-writer": "skipped"})
		note := rep.Finding("llm-review/1")
		if note == nil || note.Kind != "note" || note.Where() != "calc/calc.go:5" {
			t.Errorf("the scripted Claude Code analyser's finding: %+v", note)
		}
		if !hasFinding(rep, KindAPIAddition, "calc/mul.go:4") {
			t.Errorf("no api-addition for Mul: %+v", rep.Findings)
		}
		if a := rep.Applied; a == nil || a.Status != "succeeded" || a.Integrated != attempt.FastForward || a.Commit == "" {
			t.Fatalf("applied %+v", a)
		}
		if got := gittest.Show(t, repo, "main", "calc/mul.go"); got != e2eMul {
			t.Errorf("main:calc/mul.go = %q", got)
		}
	})

	t.Run("secret and deleted test are blocked", func(t *testing.T) {
		t.Parallel()
		rep := review(t, opt, Request{Base: start, Head: "leaky", Config: cfg})
		if rep.Decision != Block {
			t.Fatalf("decision %s", rep.Decision)
		}
		var secret, deleted *Finding
		for i := range rep.Findings {
			switch f := &rep.Findings[i]; {
			case f.Kind == KindSecret && f.Where() == "calc/config.go:4" && f.Severity == SevCritical:
				secret = f
			case f.Kind == envelope.PatternDeletedTests && f.File == "calc/calc_test.go" && strings.Contains(f.Evidence, "TestAdd"):
				deleted = f
			}
		}
		if secret == nil || deleted == nil {
			t.Fatalf("secret %+v, deleted test %+v in\n%s", secret, deleted, markdown(t, rep))
		}
		sev := rep.Rule(RuleSeverity)
		if sev == nil || sev.Passed || !slices.Contains(sev.Findings, secret.ID) || !slices.Contains(sev.Findings, deleted.ID) {
			t.Fatalf("the severity rule does not cite both: %+v", sev)
		}
		md := markdown(t, rep)
		for _, want := range []string{secret.ID, deleted.ID, "calc/config.go:4", "calc/calc_test.go:"} {
			if !strings.Contains(md, want) {
				t.Errorf("the report does not cite %q:\n%s", want, md)
			}
		}
		if strings.Contains(md, key[:12]) {
			t.Error("the report leaks the secret")
		}
		// The subscriber reacted to the secret, in round 2.
		tw := rep.Finding("test-writer/1")
		if tw == nil || !slices.Equal(tw.Cites, []string{secret.ID}) || !strings.Contains(tw.Evidence, "1 committed secret") {
			t.Errorf("test-writer's reaction: %+v", tw)
		}
	})

	t.Run("benchmark regression is blocked", func(t *testing.T) {
		t.Parallel()
		rep := review(t, opt, Request{Base: start, Head: "slow", Config: cfg})
		if rep.Decision != Block {
			t.Fatalf("decision %s", rep.Decision)
		}
		br := rep.Rule(RuleBenchmarks)
		if br == nil || br.Passed || len(br.Findings) != 1 {
			t.Fatalf("benchmarks rule %+v\n%s", br, markdown(t, rep))
		}
		f := rep.Finding(br.Findings[0])
		if f == nil || f.Metric == nil || !f.Metric.Significant || f.Metric.Delta <= 10 || f.Where() != "calc/calc_test.go:19" {
			t.Fatalf("benchmark finding %+v", f)
		}
		if r := rep.Rule(RuleSeverity); r == nil || !r.Passed {
			t.Errorf("only the benchmark should block: %+v", rep.Rules)
		}
		// calc.go refers to D-1: the report lists the decision it touches.
		if len(rep.Decisions) != 1 || rep.Decisions[0].ID != "D-1" || !strings.Contains(rep.Decisions[0].Evidence, "calc/calc.go:4") {
			t.Errorf("decisions touched: %+v", rep.Decisions)
		}
		t.Logf("%s", f.Evidence)
	})

	t.Run("reviewers disagree and escalate", func(t *testing.T) {
		t.Parallel()
		rep := review(t, opt, Request{Base: start, Head: "clean", Config: withReviewers})
		if rep.Decision != Block {
			t.Fatalf("decision %s", rep.Decision)
		}
		s := rep.Reviewers
		if s == nil || s.Outcome != ReviewersEscalated || len(s.Reviews) != 2 || len(s.Warnings) != 0 {
			t.Fatalf("reviewer stage %+v", s)
		}
		if a, b := s.Reviews[0], s.Reviews[1]; a.Verdict != VerdictApprove || b.Verdict != VerdictBlock || b.Model != "claude-opus-4-1" || len(b.Objections) != 1 {
			t.Fatalf("reviews %+v", s.Reviews)
		}
		if o := rep.Finding(s.Reviews[1].Objections[0]); o == nil || o.Kind != KindObjection || o.Where() != "calc/mul.go:4" {
			t.Errorf("objection %+v", o)
		}
		kv, err := st.Get(t.Context(), "reviews/"+rep.ReviewID+"/escalation")
		var esc Escalation
		if err != nil || json.Unmarshal(kv.Value, &esc) != nil || esc.To != EscalateHuman || esc.Resolution != "pending" {
			t.Fatalf("escalation on the board: %s (%v)", kv.Value, err)
		}
		// Every other rule passed: the reviewers alone withheld the merge.
		for _, r := range rep.Rules {
			if r.Passed == (r.Rule == RuleReviewers) {
				t.Errorf("rule %+v", r)
			}
		}
		if md := markdown(t, rep); !strings.Contains(md, "Escalated to human") {
			t.Errorf("the report does not record the escalation:\n%s", md)
		}
	})
}

func markdown(t *testing.T, rep *Report) string {
	t.Helper()
	var b bytes.Buffer
	if err := rep.WriteMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func checkAnalysers(t *testing.T, rep *Report, want map[string]string) {
	t.Helper()
	got := map[string]string{}
	for _, a := range rep.Analysers {
		got[a.Name] = a.Status
		if a.Status == "failed" {
			t.Errorf("analyser %s failed: %s", a.Name, a.Reason)
			if b, err := os.ReadFile(rep.Dir + "/tasks/" + a.Name + "/agent.log"); err == nil {
				t.Logf("log:\n%s", b)
			}
		}
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("analyser %s: %q, want %q", k, got[k], v)
		}
	}
}

func hasFinding(rep *Report, kind, where string) bool {
	return slices.ContainsFunc(rep.Findings, func(f Finding) bool { return f.Kind == kind && f.Where() == where })
}
