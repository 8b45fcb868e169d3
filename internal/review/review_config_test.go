package review

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apiary-dev/apiary/internal/agent"
	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/envtest"
	"github.com/apiary-dev/apiary/internal/strictyaml"
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
		want      []string // every problem, in order, exactly
		class     error    // the strictyaml class of the first, if any
	}{
		{"not yaml", "analysers: [", []string{"c.yaml:1: did not find expected node content"}, strictyaml.ErrSyntax},
		{"empty", "# nothing\n", []string{"c.yaml:1: empty document"}, nil},
		{"not a mapping", "- a\n", []string{"c.yaml:1:1: the document must be a mapping"}, strictyaml.ErrType},
		{"null document", "~\n", []string{"c.yaml:1:1: the document must be a mapping"}, strictyaml.ErrType},
		{"unknown top field", "version: 1\nanalyzers: []\n",
			[]string{"c.yaml:2:1: analyzers: unknown field (want one of version, agents, analysers, decision, reviewers, apply)"}, strictyaml.ErrUnknownField},
		{"unknown fields everywhere", "analysers:\n  - name: a\n    builtin: secret-scan\n    wen: {}\ndecision:\n  api: allow\napply: {brnch: main}\n",
			[]string{
				"c.yaml:4:5: analysers[0].wen: unknown field (want one of name, builtin, agent, objective, when, subscribe, budget, optional, with)",
				"c.yaml:6:3: decision.api: unknown field (want one of block_severity, min_coverage_delta, max_bench_regression_pct, api_break, severity)",
				"c.yaml:7:9: apply.brnch: unknown field (want one of branch, checks, check_timeout_s)",
			}, strictyaml.ErrUnknownField},
		{"unknown profile field", "agents:\n  x: {kind: command, argv: [sh], modle: m}\n",
			[]string{"c.yaml:2:34: agents.x.modle: unknown field (want one of kind, bin, argv, model, args, env, tools, max_turns)"}, strictyaml.ErrUnknownField},
		{"duplicate key", "version: 1\nanalysers: []\nversion: 1\n", []string{`c.yaml:3:1: version: key "version" given twice (first at line 1)`}, strictyaml.ErrDuplicateKey},
		{"duplicate option", "analysers:\n  - name: b\n    builtin: go-bench\n    with:\n      count: 2\n      count: 3\n",
			[]string{`c.yaml:6:7: analysers[0].with.count: key "count" given twice (first at line 5)`}, strictyaml.ErrDuplicateKey},
		{"wrong types", "version: one\nanalysers:\n  - {name: a, builtin: go-test, optional: yes}\ndecision:\n  max_bench_regression_pct: lots\n  min_coverage_delta: [1]\n",
			[]string{
				"c.yaml:1:10: version: cannot unmarshal !!str `one` into int",
				"c.yaml:3:43: analysers[0].optional: must be true or false",
				"c.yaml:5:29: decision.max_bench_regression_pct: cannot unmarshal !!str `lots` into float64",
				"c.yaml:6:23: decision.min_coverage_delta: cannot unmarshal !!seq into float64",
			}, strictyaml.ErrType},
		{"analysers not a list", "analysers: {a: 1}\n", []string{"c.yaml:1:12: analysers: must be a list, not a mapping"}, strictyaml.ErrType},
		{"bad name and both kinds", "analysers:\n  - name: A_B\n    builtin: go-test\n    agent: claude\n",
			[]string{`c.yaml:2:5: analysers[0].name: want [a-z0-9-]{1,64}, got "A_B"`, "c.yaml:2:5: analysers[0]: set exactly one of builtin and agent"}, nil},
		{"duplicate analyser", "analysers:\n  - {name: a, builtin: go-test}\n  - {name: a, builtin: go-test}\n", []string{`c.yaml:3:6: analysers[1].name: duplicate analyser "a"`}, nil},
		{"reserved name", "analysers:\n  - {name: reviewer-1, builtin: go-test}\n", []string{`c.yaml:2:6: analysers[0].name: "reviewer-1" is reserved for the review's own tasks`}, nil},
		{"unknown builtin", "analysers:\n  - {name: a, builtin: lint}\n",
			[]string{`c.yaml:2:15: analysers[0].builtin: unknown built-in "lint" (want one of secret-scan, forbidden-patterns, go-test, go-bench, api-diff, decisions)`}, nil},
		{"unknown options", "analysers:\n  - name: a\n    builtin: go-bench\n    with: {count: 3, runs: 2}\n  - name: b\n    builtin: secret-scan\n    with:\n      max_bytes: 10\n",
			[]string{
				"c.yaml:4:22: analysers[0].with.runs: unknown field (want one of packages, pattern, benchtime, count, alpha, timeout_s)",
				"c.yaml:8:7: analysers[1].with.max_bytes: unknown field (want one of max_file_bytes, severity)",
			}, strictyaml.ErrUnknownField},
		{"options of the wrong type", "analysers:\n  - {name: a, builtin: go-bench, with: {count: many, alpha: [1]}}\n  - {name: b, builtin: go-test, with: [x]}\n",
			[]string{
				"c.yaml:2:48: analysers[0].with.count: cannot unmarshal !!str `many` into int",
				"c.yaml:2:61: analysers[0].with.alpha: cannot unmarshal !!seq into float64",
				"c.yaml:3:39: analysers[1].with: must be a mapping, not a list",
			}, strictyaml.ErrType},
		{"bad option values", "analysers:\n  - name: a\n    builtin: forbidden-patterns\n    with: {patterns: [skip-markers, nope]}\n  - name: s\n    builtin: secret-scan\n    with: {severity: {pii: dire}}\n",
			[]string{
				`c.yaml:4:37: analysers[0].with.patterns[1]: unknown forbidden pattern "nope" (want one of ` + strings.Join(envelope.BuiltinPatterns(), ", ") + ")",
				`c.yaml:7:23: analysers[1].with.severity.pii: malformed finding: severity "dire" (want info, low, medium, high or critical)`,
			}, nil},
		{"unknown agent", "analysers:\n  - {name: a, agent: gpt9}\n", []string{`c.yaml:2:15: analysers[0].agent: unknown agent profile "gpt9"`}, nil},
		{"builtin subscribes", "analysers:\n  - {name: a, builtin: go-test, subscribe: [secret]}\n",
			[]string{"c.yaml:2:33: analysers[0].subscribe: a built-in analyser cannot react to findings; subscribe an agent"}, nil},
		{"bad when and subscriptions", "analysers:\n  - name: a\n    agent: claude\n    when: {paths: ['*.go', '[']}\n    subscribe: [secret, 'analyser:X', Bad]\n",
			[]string{
				`c.yaml:4:28: analysers[0].when.paths[1]: bad pattern "["`,
				`c.yaml:5:25: analysers[0].subscribe[1]: bad analyser name in "analyser:X"`,
				`c.yaml:5:39: analysers[0].subscribe[2]: bad finding kind "Bad"`,
			}, nil},
		{"bad thresholds", "decision:\n  block_severity: urgent\n  api_break: sometimes\n  severity: {secret: low, sealed: meh}\n",
			[]string{
				`c.yaml:2:3: decision.block_severity: malformed finding: severity "urgent" (want info, low, medium, high or critical)`,
				`c.yaml:3:3: decision.api_break: want block, version-bump or allow, got "sometimes"`,
				`c.yaml:4:27: decision.severity.sealed: malformed finding: severity "meh" (want info, low, medium, high or critical)`,
			}, nil},
		{"one reviewer", "reviewers:\n  agents: [claude]\n", []string{"c.yaml:2:3: reviewers.agents: an adversarial review needs at least two reviewers, got 1"}, nil},
		{"bad reviewers", "reviewers:\n  agents: [claude, gpt9]\n  escalate: nobody\n",
			[]string{`c.yaml:2:20: reviewers.agents[1]: unknown agent profile "gpt9"`, `c.yaml:3:3: reviewers.escalate: want "human" or an agent profile, got "nobody"`}, nil},
		{"bad profile", "agents:\n  x: {kind: robot}\n",
			[]string{`c.yaml:2:3: agents.x: agent: bad profile: x: unknown kind "robot" (one of ` + strings.Join(agent.Kinds, ", ") + ")"}, nil},
		{"version", "version: 2\n", []string{"c.yaml:1:1: version: unsupported version 2 (want 1)"}, nil},
		{"json", "{\"version\": 1, \"version\": 2}", []string{`c.yaml:1:16: version: key "version" given twice (first at line 1)`}, strictyaml.ErrDuplicateKey},
		{"too big", "# " + strings.Repeat("x", maxConfigBytes), []string{fmt.Sprintf("c.yaml:1: file is %d bytes, limit %d", maxConfigBytes+2, maxConfigBytes)}, strictyaml.ErrLimit},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseConfig("c.yaml", []byte(tt.src))
			if !errors.Is(err, ErrConfig) {
				t.Fatalf("err = %v, want ErrConfig", err)
			}
			if got := strings.Split(err.Error(), "\n"); !slices.Equal(got, tt.want) {
				t.Errorf("errors\n\t%s\nwant\n\t%s", strings.Join(got, "\n\t"), strings.Join(tt.want, "\n\t"))
			}
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("%v holds no *ConfigError", err)
			}
			if ce.Line == 0 || ce.File != "c.yaml" {
				t.Errorf("first problem %+v is not located", ce)
			}
			if tt.class != nil && !errors.Is(ce, tt.class) || tt.class == nil && ce.Err != nil {
				t.Errorf("first problem's class is %v, want %v", ce.Err, tt.class)
			}
		})
	}
}

// TestReviewConfigJSON reads a configuration written as JSON, options of
// a built-in included.
func TestReviewConfigJSON(t *testing.T) {
	t.Parallel()
	src := `{"version": 1, "analysers": [{"name": "b", "builtin": "go-bench", "with": {"count": 4, "pattern": "^BenchmarkX$"}}],
 "decision": {"block_severity": "critical", "max_bench_regression_pct": -1}}`
	c, err := ParseConfig("c.json", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := c.Analysers[0].opts.(*goBenchOpts); !ok || o.Count != 4 || o.Pattern != "^BenchmarkX$" {
		t.Errorf("options %+v", c.Analysers[0].opts)
	}
	if c.Decision.BlockSeverity != SevCritical || *c.Decision.MaxBenchRegressionPct != -1 || c.Decision.APIBreak != APIBreakVersionBump {
		t.Errorf("decision %+v", c.Decision)
	}
	_, err = ParseConfig("c.json", []byte(`{"analysers": [{"name": "b", "builtin": "go-bench", "with": {"count": "4"}}]}`))
	if want := "c.json:1:71: analysers[0].with.count: cannot unmarshal !!str `4` into int"; err == nil || err.Error() != want {
		t.Errorf("err = %v, want %s", err, want)
	}
}

func FuzzParseReviewConfig(f *testing.F) {
	f.Add([]byte("version: 1\nanalysers:\n  - {name: s, builtin: secret-scan}\n  - {name: t, builtin: go-test, when: {paths: ['*.go']}}\n"))
	f.Add([]byte("agents: {a: {kind: command, argv: [sh]}}\nreviewers: {agents: [a, claude], escalate: a}\ndecision: {min_coverage_delta: -1}\n"))
	f.Add([]byte("analysers:\n  - name: b\n    builtin: go-bench\n    with: {count: 2}\n"))
	f.Add([]byte(`{"analysers": [{"name": "f", "builtin": "forbidden-patterns", "with": {"patterns": ["skip-markers"]}}]}`))
	f.Add([]byte("analysers:\n  - name: s\n    builtin: secret-scan\n    with: {severity: {pii: low}, severity: {}}\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ParseConfig("f.yaml", b)
		if err != nil {
			if !errors.Is(err, ErrConfig) {
				t.Fatalf("untyped error %v", err)
			}
			// Every problem is a *ConfigError placed on a line of the file.
			parts := []error{err}
			if j, ok := err.(interface{ Unwrap() []error }); ok {
				if _, single := err.(*ConfigError); !single {
					parts = j.Unwrap() // errors.Join
				}
			}
			for _, p := range parts {
				var ce *ConfigError
				if !errors.As(p, &ce) || ce.File != "f.yaml" || ce.Line < 1 {
					t.Fatalf("problem %v (%T) is not a located *ConfigError", p, p)
				}
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

func TestValidGlob(t *testing.T) {
	t.Parallel()
	for pat, want := range map[string]bool{
		"*.go": true, "src/**/*.go": true, "src/": true, "[!a]": true, "*.{go,mod}": true, "x}": true, "{": true,
		"": false, "[": false, "[]": false, "a\\": false, "src/[a-": false,
	} {
		if got := ValidGlob(pat); got != want {
			t.Errorf("ValidGlob(%q) = %v, want %v", pat, got, want)
		}
	}
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
		{"go.mod", "sub/go.mod/x", false},
		{"src/*.go", "src/a.go", true},
		{"src/*.go", "src/x/a.go", false},
		{"src/*.go", "lib/src/a.go", false}, // a pattern with "/" is anchored at the root
		{"src/**/*.go", "src/a.go", true},
		{"src/**/*.go", "src/x/y/a.go", true},
		{"src/**/*.go", "lib/src/a.go", false},
		{"**/*.go", "a.go", true},
		{"**/*.go", "a/b/c.go", true},
		{"src/**", "src", true},
		{"src/**", "src/x/y", true},
		{"src/", "src/x/y", true},
		{"src/", "src/x", true},
		{"src/", "srcx/y", false},
		{"src/", "lib/src/x", false},
		{"internal/*/", "internal/gate/lang.go", true},
		{"internal/*/", "internal", false},
		{"**", "anything/at/all", true},
		{"docs/decisions/*.md", "docs/decisions/D-1.md", true},
		{"internal/swarm/worker*.go", "internal/swarm/worker_claim.go", true},
		{"internal/swarm/worker*.go", "internal/swarm/merge.go", false},
		{"?.go", "a.go", true},
		{"?.go", "ab.go", false},
		{"[ab].go", "b.go", true},
		{"[^ab].go", "c.go", true},
		{"[^ab].go", "a.go", false},
		// "**" that is not a whole element is "*": it stays in one element.
		{"src/**.go", "src/a.go", true},
		{"src/**.go", "src/x/a.go", false},
		// Malformed patterns match nothing.
		{"[", "[", false},
		{"a[", "a[", false},
		{"\\", "\\", false},
		// Where doublestar differs from path.Match, the old matcher:
		// "[!…]" negates a class (path.Match took "!" literally)...
		{"[!a].go", "b.go", true},
		{"[!a].go", "!.go", true},
		{"[!a].go", "a.go", false},
		// ...but braces stay literal characters, as they were.
		{"*.{go,mod}", "a.go", false},
		{"*.{go,mod}", "a.{go,mod}", true},
		{"{a,b}/x.go", "a/x.go", false},
		{"{a,b}/x.go", "{a,b}/x.go", true},
		{"x}.go", "x}.go", true},
		{"\\{a}.go", "{a}.go", true},
		{"[{].go", "{.go", true},
		// An escaped metacharacter is itself.
		{"\\*.go", "*.go", true},
		{"\\*.go", "a.go", false},
	}
	for _, tt := range tests {
		if got := MatchGlob(tt.pattern, tt.path); got != tt.want {
			t.Errorf("MatchGlob(%q, %q) = %v, want %v", tt.pattern, tt.path, got, tt.want)
		}
	}
	// Pathological patterns return (the old matcher was quadratic by
	// design; doublestar backtracks to one "*" and one "**" at a time):
	// many "**" against a deep path, and "*" runs within an element.
	long := strings.Repeat("a/", 2000) + "b"
	for _, pat := range []string{
		strings.Repeat("**/", 300) + "c",
		strings.Repeat("**/a/", 200) + "c",
		strings.Repeat("**/*a*/", 100) + "c",
		"**/" + strings.Repeat("*a", 200) + "c",
		strings.Repeat("{a,a}", 40) + "c", // literal braces: no alternatives to multiply
	} {
		if MatchGlob(pat, long) || MatchGlob(pat, strings.Repeat("a", 4000)) {
			t.Errorf("MatchGlob(%.20q…) matched", pat)
		}
	}
	if !MatchGlob(strings.Repeat("**/", 300)+"b", long) {
		t.Error("many \"**\" do not match the deep path they should")
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
	if got := strings.Join(names, " "); got != "secrets=secret-scan forbidden=forbidden-patterns tests=go-test bench=go-bench api=api-diff decisions=decisions" {
		t.Errorf("default analysers %s", got)
	}
	if c.Reviewers != nil || c.Decision.APIBreak != APIBreakVersionBump {
		t.Errorf("default config %+v", c)
	}
}
