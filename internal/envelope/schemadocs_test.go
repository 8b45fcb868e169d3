package envelope

import (
	"fmt"
	"strings"
	"testing"
)

// schemaDoc is a realistic document for one of our schemas and the
// violations it holds, as "JSON pointer keyword" strings.
type schemaDoc struct {
	schema, name string
	json         string
	want         []string
}

const (
	benchTaskID  = "018bcfe5-6800-7000-8000-000000000001"
	benchTrace   = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	benchSHA     = "0123456789abcdef0123456789abcdef01234567"
	benchCommit  = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	benchRunID   = "20260101-120000-ab12"
	benchPrompts = "Add a tokenizer in src/parse that splits the input into identifiers, numbers and punctuation; keep the public API."
)

func envelopeDoc(edit func(m map[string]string) map[string]string) string {
	f := map[string]string{
		"task_id":    `"` + benchTaskID + `"`,
		"parent_id":  `"018bcfe5-6800-7000-8000-000000000002"`,
		"run_id":     `"` + benchRunID + `"`,
		"name":       `"parse"`,
		"trace":      `{"traceparent": "` + benchTrace + `"}`,
		"objective":  `"` + benchPrompts + `"`,
		"inputs":     `{"workspace": "git:` + benchSHA + `", "paths": ["src/parse/", "README.md", "docs/grammar.md"]}`,
		"authority":  `{"tools": ["Read", "Write", "Edit", "Bash"], "write_scope": ["src/parse/", "tests/parse/"], "network": "gateway", "capability": "v1.eyJ0IjoiMDE4YmNmZTUifQ.c2ln"}`,
		"budget":     `{"input_tokens": 200000, "output_tokens": 16384, "tool_calls": 200, "usd": 2, "wall_clock_s": 900}`,
		"completion": `{"checks": ["go test ./src/parse/...", "go vet ./src/parse/..."], "check_timeout_s": 600, "forbidden": ["deleted-tests", "disabled-assertions", "skip-markers", "emptied-tests"], "sealed": ["tests/golden/"]}`,
		"deps":       `[{"task": "spec", "kind": "data"}, {"task": "lexer-design", "kind": "control"}]`,
		"agent":      `{"profile": "cc", "kind": "claude"}`,
		"lease_s":    `30`,
		"depth":      `1`,
		"tags":       `["go", "parser"]`,
	}
	if edit != nil {
		f = edit(f)
	}
	return object(f)
}

func object(f map[string]string) string {
	var parts []string
	for _, k := range []string{"task_id", "parent_id", "run_id", "name", "trace", "objective", "inputs", "authority", "budget", "completion", "deps", "agent", "lease_s", "depth", "tags", "status", "reason", "base", "commit", "changed_paths", "artifacts", "usage", "checks", "gate", "gate_failures", "integrated", "summary", "fencing_token", "attempt", "priority", "cost"} {
		if v, ok := f[k]; ok {
			parts = append(parts, fmt.Sprintf("%q: %s", k, v))
		}
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func receiptDoc(edit func(m map[string]string) map[string]string) string {
	f := map[string]string{
		"task_id":       `"` + benchTaskID + `"`,
		"run_id":        `"` + benchRunID + `"`,
		"name":          `"parse"`,
		"attempt":       `2`,
		"status":        `"failed"`,
		"reason":        `"gate rejected the candidate"`,
		"base":          `"` + benchSHA + `"`,
		"commit":        `"` + benchCommit + `"`,
		"changed_paths": `["src/parse/lex.go", "src/parse/lex_test.go", "src/parse/token.go"]`,
		"artifacts":     `["attempt-2.log", "checks/0.log", "checks/1.log"]`,
		"usage":         `{"input_tokens": 48210, "output_tokens": 6120, "usd": 0.42, "tool_calls": 37, "wall_s": 212.5}`,
		"checks":        `[{"command": "go test ./src/parse/...", "exit": 1, "duration": 3.25, "log": "checks/0.log"}, {"command": "go vet ./src/parse/...", "exit": 0, "duration": 1.5, "log": "checks/1.log"}]`,
		"gate":          `{"gate": "forbidden", "pattern": "deleted-tests", "file": "src/parse/lex_test.go", "line": 12, "detail": "TestLexNumbers deleted"}`,
		"gate_failures": `[{"gate": "forbidden", "pattern": "deleted-tests", "file": "src/parse/lex_test.go", "line": 12, "detail": "TestLexNumbers deleted"}, {"gate": "check", "detail": "go test ./src/parse/... exited 1"}]`,
		"integrated":    `null`,
		"summary":       `"Tokenizer added; one test removed by mistake."`,
		"fencing_token": `7`,
	}
	if edit != nil {
		f = edit(f)
	}
	return object(f)
}

// planDoc is a plan of n tasks in layers of four, each depending on two
// tasks of the layer before, with agents, budgets and a group.
func planDoc(n int, broken bool) string {
	var tasks []string
	for i := range n {
		deps := ""
		if i >= 4 {
			deps = fmt.Sprintf(`, "deps": ["t%d", {"task": "t%d", "kind": "control"}]`, i-4, i-3)
		}
		tasks = append(tasks, fmt.Sprintf(`{"id": "t%d", "objective": "Implement part %d of the parser and its tests", "agent": "%s", "write_scope": ["src/p%d/", "tests/p%d/"], "checks": ["go test ./src/p%d/..."], "estimate_s": %d, "budget": {"usd": 1.5, "input_tokens": 200000}%s}`,
			i, i, []string{"sh", "claude", "codex"}[i%3], i, i, i, 60+i, deps))
	}
	if broken {
		tasks[1] = `{"id": "Bad_ID", "objective": "", "agent": "sh", "write_scope": ["src/"], "estimate_s": -5}`
		tasks[2] = `{"id": "t2", "agent": "sh", "write_scope": "src/", "deps": [{"task": "t0", "kind": "soft"}], "quorum": {"n": 3}}`
		tasks[5] = `{"id": "t5", "objective": "x", "agent": "sh", "write_scope": [], "forbidden": ["skip-markers", "skip-markers"], "lease_s": 0, "tags": [""]}`
	}
	agents := `{"sh": {"kind": "command", "argv": ["sh", "-c", "./do-task.sh"], "env": {"GOFLAGS": "-mod=mod"}}, "reviewer": {"kind": "claude", "model": "claude-sonnet-4-5"}}`
	if broken {
		agents = `{"sh": {"kind": "shell", "argv": []}, "Bad Name": {"kind": "claude"}}`
	}
	extra := ""
	if broken {
		extra = `, "priority": 1`
	}
	return fmt.Sprintf(`{"version": 1, "integration_branch": "main", "max_parallel": 4, "sealed": ["LICENSE"], "agents": %s, "groups": [{"name": "parser", "strategy": "one_for_all", "tasks": ["t0", "t1"]}], "tasks": [%s]%s}`,
		agents, strings.Join(tasks, ", "), extra)
}

func schemaDocs() []schemaDoc {
	return []schemaDoc{
		{schema: SchemaEnvelope, name: "valid", json: envelopeDoc(nil)},
		{schema: SchemaEnvelope, name: "errors", json: envelopeDoc(func(m map[string]string) map[string]string {
			m["task_id"] = `"not-a-uuid"`
			m["objective"] = `""`
			m["inputs"] = `{"workspace": "main", "paths": ["/etc/passwd"]}`
			m["authority"] = `{"write_scope": ["src/parse/"], "network": "internet"}`
			m["budget"] = `{"usd": -1, "tool_calls": 1.5}`
			m["completion"] = `{"forbidden": ["skip-markers", "skip-markers"]}`
			m["deps"] = `[{"task": "spec", "kind": "soft"}]`
			m["tags"] = `[""]`
			m["priority"] = `1`
			delete(m, "agent")
			return m
		}), want: []string{
			" required", "/authority/network enum", "/budget/tool_calls type", "/budget/usd minimum",
			"/completion/forbidden uniqueItems", "/deps/0/kind enum", "/inputs/paths/0 pattern", "/inputs/workspace pattern",
			"/objective minLength", "/priority additionalProperties", "/tags/0 minLength", "/task_id pattern",
		}},
		{schema: SchemaReceipt, name: "valid", json: receiptDoc(nil)},
		{schema: SchemaReceipt, name: "errors", json: receiptDoc(func(m map[string]string) map[string]string {
			m["status"] = `"done"`
			m["attempt"] = `0`
			m["usage"] = `{"input_tokens": -1, "output_tokens": 5, "usd": 0.1}`
			m["checks"] = `[{"command": "", "exit": 1.5, "duration": 1}]`
			m["gate"] = `{"gate": "lint", "detail": "x"}`
			m["integrated"] = `"rebase"`
			m["cost"] = `3`
			return m
		}), want: []string{
			"/attempt minimum", "/checks/0/command minLength", "/checks/0/exit type", "/cost additionalProperties",
			"/gate/gate enum", "/integrated enum", "/status enum", "/usage required", "/usage/input_tokens minimum",
		}},
		{schema: SchemaPlan, name: "valid", json: planDoc(40, false)},
		{schema: SchemaPlan, name: "errors", json: planDoc(40, true), want: []string{
			"/agents/Bad Name pattern", "/agents/sh/argv minItems", "/agents/sh/kind enum", "/priority additionalProperties",
			"/tasks/1/estimate_s minimum", "/tasks/1/id pattern", "/tasks/1/objective minLength",
			"/tasks/2 required", "/tasks/2/deps/0/kind enum", "/tasks/2/quorum required", "/tasks/2/write_scope type",
			"/tasks/5/forbidden uniqueItems", "/tasks/5/lease_s exclusiveMinimum", "/tasks/5/tags/0 minLength",
		}},
	}
}

// violationKeys renders violations as "JSON pointer keyword", one per
// distinct pair.
func violationKeys(vs []Violation) []string {
	var out []string
	for _, v := range vs {
		p := ""
		for _, e := range v.Path {
			p += "/" + fmt.Sprint(e)
		}
		k := p + " " + v.Keyword
		if len(out) == 0 || out[len(out)-1] != k {
			out = append(out, k)
		}
	}
	return out
}

func parsedDocs(t testing.TB) []struct {
	schemaDoc
	tree any
} {
	var out []struct {
		schemaDoc
		tree any
	}
	for _, d := range schemaDocs() {
		tree, err := ParseJSON([]byte(d.json))
		if err != nil {
			t.Fatalf("%s/%s: %v\n%s", d.schema, d.name, err, d.json)
		}
		out = append(out, struct {
			schemaDoc
			tree any
		}{d, tree})
	}
	return out
}
