package plan

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/apiary-dev/apiary/internal/strictyaml"
)

// base is a valid plan; the table below breaks it one way at a time. Line
// numbers in the table refer to the broken document.
const base = `version: 1
agents:
  sh: {kind: command, argv: [sh, -c, "true"]}
tasks:
  - id: spec
    objective: write the spec
    agent: sh
    write_scope: [docs/]
  - id: parse
    objective: add a tokenizer
    agent: sh
    deps: [spec]
    write_scope: ["src/parse/"]
    sealed: ["tests/golden/"]
`

// TestValidationErrors checks each class of error: the sentinel, the field
// path, the line and a telling message.
func TestValidationErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		old, new  string // replace old with new in base ("" appends new)
		kind      error
		path      string
		line      int
		msgSubstr string
	}{
		{"yaml syntax", "    agent: sh\n    deps", "    agent: [sh\n    deps", ErrSyntax, "", 11, ""},
		{"tab indentation", "    write_scope: [docs/]", "\twrite_scope: [docs/]", ErrSyntax, "", 8, ""},
		{"duplicate key", "    agent: sh\n    write_scope: [docs/]", "    agent: sh\n    agent: sh\n    write_scope: [docs/]", ErrSyntax, "tasks[0].agent", 8, "given twice"},
		{"missing objective", "    objective: write the spec\n", "", ErrSchema, "tasks[0]", 5, `missing required field "objective"`},
		{"unknown field", "    agent: sh\n    deps", "    agent: sh\n    dpes: [x]\n    deps", ErrSchema, "tasks[1].dpes", 12, `unknown field "dpes"`},
		{"wrong type", "    deps: [spec]", "    deps: spec", ErrSchema, "tasks[1].deps", 12, "want array, got string"},
		{"bad version", "version: 1", "version: 2", ErrSchema, "version", 1, "must be 1"},
		{"bad dep kind", "deps: [spec]", "deps: [{task: spec, kind: soft}]", ErrSchema, "tasks[1].deps[0].kind", 12, "must be one of"},
		{"unknown agent kind", "kind: command", "kind: cursor", ErrSchema, "agents.sh.kind", 3, "must be one of"},
		{"bad id uppercase", "id: parse", "id: Parse", ErrBadID, "tasks[1].id", 9, `"Parse" does not match`},
		{"bad id too long", "id: parse", "id: " + strings.Repeat("p", 65), ErrBadID, "tasks[1].id", 9, "does not match"},
		{"bad dep id", "deps: [spec]", "deps: [Spec_1]", ErrBadID, "tasks[1].deps[0]", 12, "does not match"},
		{"duplicate id", "id: parse", "id: spec", ErrDuplicateID, "tasks[1].id", 9, "already used by tasks[0] (line 5)"},
		{"unknown dep", "deps: [spec]", "deps: [spec, lexer]", ErrUnknownDep, "tasks[1].deps[1]", 12, `unknown task "lexer"`},
		{"unknown agent", "    agent: sh\n    deps", "    agent: cc\n    deps", ErrUnknownAgent, "tasks[1].agent", 11, `unknown agent "cc"`},
		{"self cycle", "deps: [spec]", "deps: [parse]", ErrCycle, "tasks[1].deps[0]", 12, "parse → parse"},
		{"cycle", "    write_scope: [docs/]\n", "    write_scope: [docs/]\n    deps: [parse]\n", ErrCycle, "tasks[0].deps[0]", 9, "spec → parse → spec"},
		{"scope dot-dot", `["src/parse/"]`, `["src/../../etc/"]`, ErrScopeEscape, "tasks[1].write_scope[0]", 13, "escapes the repository"},
		{"scope absolute", `["src/parse/"]`, `["/etc"]`, ErrScopeEscape, "tasks[1].write_scope[0]", 13, "absolute"},
		{"scope git", `["src/parse/"]`, `[".git/hooks"]`, ErrScopeEscape, "tasks[1].write_scope[0]", 13, "inside .git"},
		{"sealed escapes", `["tests/golden/"]`, `["../x"]`, ErrScopeEscape, "tasks[1].sealed[0]", 14, "escapes"},
		{"command without argv", "sh: {kind: command, argv: [sh, -c, \"true\"]}", "sh: {kind: command}", ErrInvalid, "agents.sh", 3, "needs argv"},
		{"quorum", "", "    quorum: {n: 2, k: 3}\n", ErrInvalid, "tasks[1].quorum.k", 15, "exceeds n"},
		{"group unknown task", "", "groups:\n  - {name: g, strategy: one_for_all, tasks: [spec, nope]}\n", ErrUnknownDep, "groups[0].tasks[1]", 16, `unknown task "nope"`},
		{"group strategy", "", "groups:\n  - {name: g, strategy: rest_for_one, tasks: [spec]}\n", ErrSchema, "groups[0].strategy", 16, "must be one of"},
		{"empty", base, "", ErrSyntax, "", 1, "empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			src := base + tt.new
			if tt.old != "" {
				if !strings.Contains(base, tt.old) {
					t.Fatalf("base lacks %q", tt.old)
				}
				src = strings.Replace(base, tt.old, tt.new, 1)
			}
			_, err := Parse("plan.yaml", []byte(src))
			if !errors.Is(err, tt.kind) {
				t.Fatalf("err = %v, want %v", err, tt.kind)
			}
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("no *FieldError in %v", err)
			}
			line := fe.Line
			if tt.kind == ErrSyntax && line == tt.line-1 {
				// yaml.v3 reports some parser errors at the line before the
				// offending construct.
				line = tt.line
			}
			if fe.Path != tt.path || line != tt.line {
				t.Errorf("at %s line %d, want %s line %d (%v)", fe.Path, fe.Line, tt.path, tt.line, fe)
			}
			if !strings.Contains(fe.Msg, tt.msgSubstr) {
				t.Errorf("message %q lacks %q", fe.Msg, tt.msgSubstr)
			}
			if !strings.HasPrefix(err.Error(), "plan.yaml:") {
				t.Errorf("error %q does not name the file", err)
			}
		})
	}
}

// TestAllErrorsReported: one parse reports every semantic problem, in line
// order.
func TestAllErrorsReported(t *testing.T) {
	t.Parallel()
	src := strings.Replace(base, "agent: sh\n    deps", "agent: nobody\n    deps", 1)
	src = strings.Replace(src, "deps: [spec]", "deps: [ghost]", 1)
	src = strings.Replace(src, `["src/parse/"]`, `["/abs"]`, 1)
	_, err := Parse("p.yaml", []byte(src))
	var errs Errors
	if !errors.As(err, &errs) || len(errs) != 3 {
		t.Fatalf("err = %v, want 3 errors", err)
	}
	for i, want := range []error{ErrUnknownAgent, ErrUnknownDep, ErrScopeEscape} {
		if !errors.Is(errs[i], want) {
			t.Errorf("errs[%d] = %v, want %v", i, errs[i], want)
		}
	}
	if got := strings.Count(err.Error(), "\n"); got != 2 {
		t.Errorf("Error() has %d newlines, want one line per error", got)
	}
}

func TestCycleListsEveryCycle(t *testing.T) {
	t.Parallel()
	src := `version: 1
tasks:
  - {id: a, objective: x, agent: claude, write_scope: [], deps: [b]}
  - {id: b, objective: x, agent: claude, write_scope: [], deps: [c]}
  - {id: c, objective: x, agent: claude, write_scope: [], deps: [a, d]}
  - {id: d, objective: x, agent: claude, write_scope: []}
  - {id: e, objective: x, agent: claude, write_scope: [], deps: [f]}
  - {id: f, objective: x, agent: claude, write_scope: [], deps: [e, a]}
`
	_, err := Parse("p.yaml", []byte(src))
	var errs Errors
	if !errors.As(err, &errs) || len(errs) != 2 {
		t.Fatalf("err = %v, want two cycles", err)
	}
	if !strings.Contains(errs[0].Msg, "a → b → c → a") || errs[0].Line != 3 {
		t.Errorf("first cycle: %v", errs[0])
	}
	if !strings.Contains(errs[1].Msg, "e → f → e") || errs[1].Line != 7 {
		t.Errorf("second cycle: %v", errs[1])
	}
}

func TestYAMLFeatures(t *testing.T) {
	t.Parallel()
	src := `version: 1
agents:
  base: &base {kind: command, argv: [make], env: {A: "1"}}
  lint:
    <<: *base
    argv: [make, lint]
tasks:
  - &t {id: one, objective: x, agent: lint, write_scope: [.], estimate_s: 1_000}
  - {<<: *t, id: two, estimate_s: 0x10}
`
	p := mustParse(t, src)
	if a := p.Agents["lint"]; a.Kind != "command" || a.Argv[1] != "lint" || a.Env["A"] != "1" {
		t.Errorf("merged agent %+v", a)
	}
	if p.Task("one").EstimateS != 1000 || p.Task("two").EstimateS != 16 || p.Task("two").Agent != "lint" {
		t.Errorf("tasks %+v %+v", p.Task("one"), p.Task("two"))
	}
	for _, bad := range []string{
		"version: 1\n---\nversion: 1\n", // two documents
		"version: .inf\ntasks: []\n",    // not finite
		"version: !custom 1\n",          // unknown tag
		"[1, 2]\n",                      // not an object
	} {
		if _, err := Parse("p.yaml", []byte(bad)); err == nil {
			t.Errorf("Parse(%q) succeeded", bad)
		}
	}
}

func TestCleanPath(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		".": ".", "./": ".", "src": "src", "src/": "src/", "./src//a/../b/": "src/b/", "a/..": ".", ".github/x": ".github/x", "..x": "..x",
	} {
		if got, err := CleanPath(in); err != nil || got != want {
			t.Errorf("CleanPath(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"..", "../", "a/../..", "/", "/x", "C:\\x", ".git", ".GIT/config", "a\x00b"} {
		if got, err := CleanPath(in); err == nil {
			t.Errorf("CleanPath(%q) = %q, want an error", in, got)
		}
	}
}

// TestAliasBomb: a document whose aliases expand exponentially is refused
// quickly instead of exhausting memory.
func TestAliasBomb(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i <= 9; i++ {
		fmt.Fprintf(&b, "a%d: &a%d [*a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d]\n", i, i, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1)
	}
	_, err := Parse("bomb.yaml", []byte(b.String()))
	if !errors.Is(err, ErrSyntax) || !strings.Contains(err.Error(), "aliases expand to more than") {
		t.Errorf("err = %v", err)
	}
	// A byte-order mark before JSON is accepted.
	if _, err := Parse("bom.json", []byte("\ufeff{\"version\": 1, \"tasks\": [{\"id\": \"a\", \"objective\": \"x\", \"agent\": \"claude\", \"write_scope\": []}]}")); err != nil {
		t.Errorf("JSON with a BOM: %v", err)
	}
}

// TestSchemaAndSemanticErrorsInOnePass: schema violations do not hide the
// checks after them (duplicate ids, unknown agents and deps, paths out of
// the repository), and those checks stay quiet about values the schema
// already rejected. YAML and JSON report the same.
func TestSchemaAndSemanticErrorsInOnePass(t *testing.T) {
	t.Parallel()
	yamlSrc := `version: 1
agents:
  sh: {kind: command, argv: [sh]}
  odd: {kind: shell}
tasks:
  - id: a
    objective: x
    agent: sh
    write_scope: [../outside]
  - id: a
    objective: y
    agent: nobody
    write_scope: [src/]
  - id: Bad_ID
    agent: Nobody
    write_scope: [src/, ""]
    bogus: 1
    estimate_s: -1
  - id: c
    objective: z
    agent: sh
    write_scope: [docs/, /etc]
    deps: [ghost, {task: a, kind: soft}, {kind: data}]
    quorum: {k: 3}
`
	type wantErr struct {
		kind error
		line int
		path string
		msg  string
	}
	want := []wantErr{
		{ErrSchema, 4, "agents.odd.kind", "must be one of"},
		{ErrScopeEscape, 9, "tasks[0].write_scope[0]", `path "../outside" escapes the repository`},
		{ErrDuplicateID, 10, "tasks[1].id", `task id "a" already used by tasks[0] (line `},
		{ErrUnknownAgent, 12, "tasks[1].agent", `unknown agent "nobody"`},
		{ErrSchema, 14, "tasks[2]", `missing required field "objective"`},
		{ErrBadID, 14, "tasks[2].id", `"Bad_ID" does not match`},
		{ErrSchema, 15, "tasks[2].agent", "does not match"},
		{ErrSchema, 16, "tasks[2].write_scope[1]", "must not be empty"},
		{ErrSchema, 17, "tasks[2].bogus", `unknown field "bogus"`},
		{ErrSchema, 18, "tasks[2].estimate_s", "must be ≥ 0, got -1"},
		{ErrScopeEscape, 22, "tasks[3].write_scope[1]", "is absolute"},
		{ErrUnknownDep, 23, "tasks[3].deps[0]", `unknown task "ghost"`},
		{ErrSchema, 23, "tasks[3].deps[1].kind", "must be one of"},
		{ErrSchema, 23, "tasks[3].deps[2]", `missing required field "task"`},
		{ErrSchema, 24, "tasks[3].quorum", `missing required field "n"`},
	}
	// check compares in order of line (YAML) or of path (JSON, whose
	// encoder sorted the keys).
	check := func(t *testing.T, err error, byLine bool) {
		var errs Errors
		if !errors.As(err, &errs) {
			t.Fatalf("err = %v", err)
		}
		if len(errs) != len(want) {
			t.Errorf("%d errors, want %d:\n%v", len(errs), len(want), err)
		}
		want := slices.Clone(want)
		if !byLine {
			slices.SortStableFunc(errs, func(a, b *FieldError) int { return strings.Compare(a.Path, b.Path) })
			slices.SortStableFunc(want, func(a, b wantErr) int { return strings.Compare(a.path, b.path) })
		}
		for i := range min(len(errs), len(want)) {
			e, w := errs[i], want[i]
			if !errors.Is(e, w.kind) || e.Path != w.path || !strings.Contains(e.Msg, w.msg) || (byLine && e.Line != w.line) {
				t.Errorf("errs[%d] = %v (%v), want %s line %d: %s (%v)", i, e, e.Err, w.path, w.line, w.msg, w.kind)
			}
		}
	}
	t.Run("yaml", func(t *testing.T) {
		t.Parallel()
		_, err := Parse("plan.yaml", []byte(yamlSrc))
		check(t, err, true)
	})
	t.Run("json", func(t *testing.T) {
		t.Parallel()
		var tree any
		if err := yamlToJSON(yamlSrc, &tree); err != nil {
			t.Fatal(err)
		}
		_, err := Parse("plan.json", tree.([]byte))
		check(t, err, false)
	})
}

// yamlToJSON re-encodes a YAML document as indented JSON, via strictyaml.
func yamlToJSON(src string, out *any) error {
	doc, err := strictyaml.Parse("in.yaml", []byte(src), strictyaml.Options{})
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(doc.Value(), "", "  ")
	*out = b
	return err
}
