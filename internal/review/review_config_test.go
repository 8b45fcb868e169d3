package review

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apiary-dev/apiary/internal/envtest"
)

func TestExampleReviewConfig(t *testing.T) {
	t.Parallel()
	p := filepath.Join(envtest.ModuleRoot(t), "examples", "review.yaml")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	c, err := ParseConfig(p, b)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Analysers) != 8 || c.Reviewers == nil || len(c.Reviewers.Agents) != 2 || c.Reviewers.Escalate != EscalateHuman ||
		c.Decision.BlockSeverity != SevHigh || *c.Decision.MinCoverageDelta != -1 || *c.Decision.MaxBenchRegressionPct != 10 ||
		c.Decision.APIBreak != APIBreakVersionBump || c.Apply.Branch != "main" || c.Agents["opus"].Name != "opus" {
		t.Errorf("example parsed as %+v", c)
	}
	if o, ok := c.Analysers[3].opts.(*goBenchOpts); !ok || o.Count != 6 || o.Benchtime != "100ms" {
		t.Errorf("bench options %+v", c.Analysers[3].opts)
	}
	if got := c.Analysers[7].Subscribe; strings.Join(got, ",") != "secret,injection" {
		t.Errorf("subscribe %v", got)
	}
}

func TestReviewConfigErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, src string
		want      []string // substrings of the error, each with its line
	}{
		{"not yaml", "analysers: [", []string{"c.yaml:1:"}},
		{"not a mapping", "- a\n", []string{"c.yaml:1: the document must be a mapping"}},
		{"unknown top field", "version: 1\nanalyzers: []\n", []string{"c.yaml:2: analyzers: unknown field"}},
		{"unknown analyser field", "analysers:\n  - name: a\n    builtin: secret-scan\n    wen: {}\n", []string{"c.yaml:4: analysers[0].wen: unknown field"}},
		{"bad name and both kinds", "analysers:\n  - name: A_B\n    builtin: go-test\n    agent: claude\n",
			[]string{"c.yaml:2: analysers[0].name", "c.yaml:2: analysers[0]: set exactly one of builtin and agent"}},
		{"duplicate", "analysers:\n  - {name: a, builtin: go-test}\n  - {name: a, builtin: go-test}\n", []string{"c.yaml:3: analysers[1].name: duplicate"}},
		{"reserved name", "analysers:\n  - {name: reviewer-1, builtin: go-test}\n", []string{`c.yaml:2: analysers[0].name: "reviewer-1" is reserved`}},
		{"unknown builtin", "analysers:\n  - {name: a, builtin: lint}\n", []string{`c.yaml:2: analysers[0].builtin: unknown built-in "lint"`}},
		{"bad option", "analysers:\n  - name: a\n    builtin: go-bench\n    with: {count: 3, runs: 2}\n", []string{"c.yaml:4: analysers[0].with.runs: unknown field"}},
		{"bad pattern", "analysers:\n  - name: a\n    builtin: forbidden-patterns\n    with: {patterns: [nope]}\n", []string{`unknown forbidden pattern "nope"`}},
		{"unknown agent", "analysers:\n  - {name: a, agent: gpt9}\n", []string{`c.yaml:2: analysers[0].agent: unknown agent profile "gpt9"`}},
		{"builtin subscribes", "analysers:\n  - {name: a, builtin: go-test, subscribe: [secret]}\n", []string{"cannot react to findings"}},
		{"bad severity", "decision:\n  block_severity: urgent\n", []string{"c.yaml:2: decision.block_severity"}},
		{"bad api policy", "decision:\n  api_break: sometimes\n", []string{"c.yaml:2: decision.api_break"}},
		{"one reviewer", "reviewers:\n  agents: [claude]\n", []string{"c.yaml:2: reviewers.agents: an adversarial review needs at least two reviewers"}},
		{"bad escalation", "reviewers:\n  agents: [claude, codex]\n  escalate: nobody\n", []string{"c.yaml:3: reviewers.escalate"}},
		{"bad profile", "agents:\n  x: {kind: robot}\n", []string{"c.yaml:2: agents.x"}},
		{"version", "version: 2\n", []string{"c.yaml:1: version: unsupported version 2"}},
		{"wrong type", "analysers: {a: 1}\n", []string{"c.yaml:1:"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseConfig("c.yaml", []byte(tt.src))
			if !errors.Is(err, ErrConfig) {
				t.Fatalf("err = %v, want ErrReviewConfig", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func FuzzParseReviewConfig(f *testing.F) {
	f.Add([]byte("version: 1\nanalysers:\n  - {name: s, builtin: secret-scan}\n  - {name: t, builtin: go-test, when: {paths: ['*.go']}}\n"))
	f.Add([]byte("agents: {a: {kind: command, argv: [sh]}}\nreviewers: {agents: [a, claude], escalate: a}\ndecision: {min_coverage_delta: -1}\n"))
	f.Add([]byte("analysers:\n  - name: b\n    builtin: go-bench\n    with: {count: 2}\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ParseConfig("f.yaml", b)
		if err != nil {
			var ce *ConfigError
			if !errors.Is(err, ErrConfig) || !errors.As(err, &ce) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if c.Decision.BlockSeverity.Rank() < 0 || c.Decision.MaxBenchRegressionPct == nil {
			t.Fatalf("defaults not applied: %+v", c.Decision)
		}
		for _, a := range c.Analysers {
			if a.Builtin != "" && a.opts == nil {
				t.Fatalf("built-in %s without options", a.Name)
			}
		}
		if r := c.Reviewers; r != nil && (len(r.Agents) < 2 || r.Escalate == "") {
			t.Fatalf("reviewers %+v", r)
		}
	})
}

func TestMatchGlob(t *testing.T) {
	t.Parallel()
	tests := []struct {
		pattern, path string
		want          bool
	}{
		{"*.go", "main.go", true},
		{"*.go", "a/b/c.go", true},
		{"*.go", "a/b/c.go.txt", false},
		{"go.mod", "go.mod", true},
		{"go.mod", "sub/go.mod", true},
		{"src/*.go", "src/a.go", true},
		{"src/*.go", "src/x/a.go", false},
		{"src/**/*.go", "src/a.go", true},
		{"src/**/*.go", "src/x/y/a.go", true},
		{"src/", "src/x/y", true},
		{"src/", "srcx/y", false},
		{"**", "anything/at/all", true},
		{"docs/decisions/*.md", "docs/decisions/D-1.md", true},
		{"[", "[", false},
	}
	for _, tt := range tests {
		if got := MatchGlob(tt.pattern, tt.path); got != tt.want {
			t.Errorf("MatchGlob(%q, %q) = %v, want %v", tt.pattern, tt.path, got, tt.want)
		}
	}
	// "**" is linear, not exponential, in the path's length.
	long := strings.Repeat("a/", 200) + "b"
	if MatchGlob(strings.Repeat("**/", 30)+"c", long) {
		t.Error("long path matched")
	}
	w := When{Paths: []string{"*.go"}, Tags: []string{"perf"}}
	if w.selected([]string{"a.go"}, nil) || !w.selected([]string{"a.go"}, []string{"perf"}) || w.selected([]string{"a.md"}, []string{"perf"}) {
		t.Error("When.selected is wrong")
	}
	if !(When{}).selected(nil, nil) {
		t.Error("an empty When must select every change")
	}
}

func TestDefaultReviewConfig(t *testing.T) {
	t.Parallel()
	c := DefaultConfig()
	var names []string
	for _, a := range c.Analysers {
		names = append(names, a.Name+"="+a.Builtin)
	}
	if got := strings.Join(names, " "); got != "secrets=secret-scan forbidden=forbidden-patterns tests=go-test api=api-diff decisions=decisions" {
		t.Errorf("default analysers %s", got)
	}
	if c.Reviewers != nil || c.Decision.APIBreak != APIBreakVersionBump {
		t.Errorf("default config %+v", c)
	}
}
