package gate

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/git/gittest"
)

// bypassBase is the base version of the test file every case edits.
const bypassBase = `package calc

import (
	"os"
	"runtime"
	"testing"
)

var update = flagBool()

func TestParse(t *testing.T) {
	got := Parse("1")
	if got != 1 {
		t.Errorf("Parse(1) = %d", got)
	}
	if Parse("2") != 2 {
		t.Fatal("Parse(2)")
	}
}

func TestOther(t *testing.T) {
	if testing.Short() {
		t.Skip("slow")
	}
	if os.Getenv("HOME") == "" || runtime.GOOS == "" {
		t.Error("env")
	}
}
`

// sides parses base and head versions of calc_test.go (plus extra head
// files) as the gate does.
func sides(t *testing.T, base string, head map[string]string) (*goSide, *goSide) {
	t.Helper()
	b, ok := parseGoSide(map[string][]byte{"calc/calc_test.go": []byte(base)})
	if !ok {
		t.Fatal("base does not parse")
	}
	hs := map[string][]byte{"calc/calc_test.go": nil}
	for p, src := range head {
		hs[p] = []byte(src)
	}
	h, ok := parseGoSide(hs)
	if !ok {
		t.Fatalf("head does not parse:\n%s", head["calc/calc_test.go"])
	}
	return b, h
}

// parseBody replaces TestParse's body (the lines between its braces).
func parseBody(body string) string {
	start := strings.Index(bypassBase, "func TestParse(t *testing.T) {\n") + len("func TestParse(t *testing.T) {\n")
	end := strings.Index(bypassBase, "\n}\n\nfunc TestOther")
	return bypassBase[:start] + body + bypassBase[end:]
}

const parseChecks = `	got := Parse("1")
	if got != 1 {
		t.Errorf("Parse(1) = %d", got)
	}
	if Parse("2") != 2 {
		t.Fatal("Parse(2)")
	}`

// TestTestBypass: every construct of the rule list in bypass.go, failing
// and passing. A failing case names the construct's kind and the line it
// is on at the head.
func TestTestBypass(t *testing.T) {
	t.Parallel()
	type want struct {
		line int
		kind string
	}
	tests := []struct {
		name string
		head string // the new calc/calc_test.go
		want []want // nil: the change passes
	}{
		// Failing.
		{"unconditional return", parseBody("\treturn\n" + parseChecks), []want{{12, "unconditional early return keeps 2"}}},
		{"return in the middle", parseBody("\tgot := Parse(\"1\")\n\tif got != 1 {\n\t\tt.Errorf(\"Parse(1) = %d\", got)\n\t}\n\treturn\n\tif Parse(\"2\") != 2 {\n\t\tt.Fatal(\"Parse(2)\")\n\t}"),
			[]want{{16, "unconditional early return keeps 1"}}},
		{"if true", parseBody("\tif true {\n\t\treturn\n\t}\n" + parseChecks), []want{{12, "early return under a constant condition"}}},
		{"if 1 == 1", parseBody("\tif 1 == 1 {\n\t\treturn\n\t}\n" + parseChecks), []want{{12, "early return under a constant condition"}}},
		{"if !false || x", parseBody("\tif !false || os.Args == nil {\n\t\treturn\n\t}\n" + parseChecks), []want{{12, "early return under a constant condition"}}},
		{"if !testing.Short()", parseBody("\tif !testing.Short() {\n\t\treturn\n\t}\n" + parseChecks), []want{{12, "early return conditioned on the environment keeps 2"}}},
		{"if os.Getenv", parseBody("\tif os.Getenv(\"CI\") == \"\" {\n\t\treturn\n\t}\n" + parseChecks), []want{{12, "conditioned on the environment"}}},
		{"env through a variable", parseBody("\tci := os.Getenv(\"CI\") != \"\"\n\tif !ci {\n\t\tt.Log(\"not on CI\")\n\t\treturn\n\t}\n" + parseChecks), []want{{13, "conditioned on the environment"}}},
		{"if runtime.GOOS", parseBody("\tif runtime.GOOS != \"plan9\" {\n\t\treturn\n\t}\n" + parseChecks), []want{{12, "conditioned on the environment"}}},
		{"else branch returns", parseBody("\tif testing.Verbose() {\n\t\tt.Log(\"verbose\")\n\t} else {\n\t\treturn\n\t}\n" + parseChecks), []want{{12, "conditioned on the environment"}}},
		{"env continue in a table", parseBody("\tfor _, in := range []string{\"1\", \"2\"} {\n\t\tif os.Getenv(\"FULL\") == \"\" {\n\t\t\tcontinue\n\t\t}\n\t\tif Parse(in) == 0 {\n\t\t\tt.Errorf(\"Parse(%s)\", in)\n\t\t}\n\t}\n" + parseChecks),
			[]want{{13, "conditioned on the environment keeps 1"}}},
		{"env return in a subtest", parseBody("\tt.Run(\"one\", func(t *testing.T) {\n\t\tif testing.Short() {\n\t\t\treturn\n\t\t}\n\t\tif Parse(\"1\") != 1 {\n\t\t\tt.Error(\"Parse(1)\")\n\t\t}\n\t})\n" + parseChecks),
			[]want{{13, "conditioned on the environment keeps 1"}}},
		{"t.Skip", parseBody("\tt.Skip(\"later\")\n" + parseChecks), []want{{12, "a new t.Skip path: t.Skip(\"later\")"}}},
		{"skip on short", parseBody("\tif testing.Short() {\n\t\tt.Skip(\"slow\")\n\t}\n" + parseChecks), []want{{13, "a new t.Skip path: if testing.Short() { t.Skip(\"slow\") }"}}},
		{"if false", parseBody("\tgot := Parse(\"1\")\n\tif false {\n\t\tif got != 1 {\n\t\t\tt.Errorf(\"Parse(1) = %d\", got)\n\t\t}\n\t}"), []want{{13, "assertions in a branch that never runs keeps 1"}}},
		{"else of if true", parseBody("\tif true {\n\t\tt.Log(\"x\")\n\t} else {\n\t\tt.Fatal(\"never\")\n\t}\n" + parseChecks), []want{{14, "branch that never runs"}}},
		{"for range 0", parseBody("\tfor range 0 {\n" + parseChecks + "\n\t}"), []want{{12, "assertions in a loop that never runs keeps 2"}}},
		{"for false", parseBody("\tfor false {\n" + parseChecks + "\n\t}"), []want{{12, "loop that never runs"}}},
		{"range over an empty table", parseBody("\tfor _, in := range []string{} {\n\t\tif Parse(in) != 1 {\n\t\t\tt.Error(in)\n\t\t}\n\t}"), []want{{12, "loop that never runs"}}},
		{"closure never called", parseBody("\tcheck := func() {\n" + parseChecks + "\n\t}\n\t_ = check"), []want{{12, "assertions in a closure that is never called keeps 2"}}},
		{"runtime.Goexit", parseBody("\truntime.Goexit()\n" + parseChecks), []want{{12, "assertions after a call that ends the test keeps 2"}}},
		{"os.Exit", parseBody("\tos.Exit(0)\n" + parseChecks), []want{{12, "after a call that ends the test"}}},
		{"a new test with a bypass", bypassBase + "\nfunc TestNew(t *testing.T) {\n\tif true {\n\t\treturn\n\t}\n\tt.Error(\"x\")\n}\n", []want{{31, "constant condition"}}},
		{"two constructs", parseBody("\tif testing.Short() {\n\t\treturn\n\t}\n\tif true {\n\t\treturn\n\t}\n" + parseChecks), []want{{12, "environment"}, {15, "constant"}}},

		// Passing.
		{"return after the last assertion", parseBody(parseChecks + "\n\treturn"), nil},
		{"data-conditioned return", parseBody("\tgot := Parse(\"1\")\n\tif got == 0 {\n\t\tt.Log(\"zero\")\n\t\treturn\n\t}\n\tif got != 1 {\n\t\tt.Errorf(\"Parse(1) = %d\", got)\n\t}"), nil},
		{"error check", parseBody("\tn, err := ParseErr(\"1\")\n\tif err != nil {\n\t\tt.Fatal(err)\n\t}\n\tif n != 1 {\n\t\tt.Error(n)\n\t}"), nil},
		{"table continue on the case's own data", parseBody("\tfor _, tc := range []struct {\n\t\tin   string\n\t\tskip bool\n\t}{{\"1\", false}, {\"x\", true}} {\n\t\tif tc.skip {\n\t\t\tcontinue\n\t\t}\n\t\tif Parse(tc.in) != 1 {\n\t\t\tt.Error(tc.in)\n\t\t}\n\t}"), nil},
		{"table return after assertions", parseBody("\tfor _, in := range []string{\"1\"} {\n\t\tif Parse(in) != 1 {\n\t\t\tt.Error(in)\n\t\t\treturn\n\t\t}\n\t}"), nil},
		{"golden update flag", parseBody("\tif *update {\n\t\twriteGolden()\n\t\treturn\n\t}\n" + parseChecks), nil},
		{"closure called", parseBody("\tcheck := func(in string, want int) {\n\t\tif Parse(in) != want {\n\t\t\tt.Errorf(\"Parse(%s)\", in)\n\t\t}\n\t}\n\tcheck(\"1\", 1)\n\tcheck(\"2\", 2)"), nil},
		{"closure passed to t.Run", parseBody("\tcheck := func(t *testing.T) {\n\t\tif Parse(\"1\") != 1 {\n\t\t\tt.Error(\"Parse(1)\")\n\t\t}\n\t}\n\tt.Run(\"one\", check)"), nil},
		{"fuzz target returns on short input", parseBody(parseChecks) + "\nfunc FuzzParse(f *testing.F) {\n\tf.Fuzz(func(t *testing.T, s string) {\n\t\tif len(s) == 0 {\n\t\t\treturn\n\t\t}\n\t\tif Parse(s) < 0 {\n\t\t\tt.Error(s)\n\t\t}\n\t})\n}\n", nil},
		{"the base had the skip", strings.Replace(bypassBase, "\t\tt.Error(\"env\")", "\t\tt.Errorf(\"env %s\", runtime.GOOS)", 1), nil},
		{"an untouched test keeps its constructs", strings.Replace(bypassBase, "\"Parse(2)\"", "\"Parse(2) != 2\"", 1), nil},
		{"t.Fatal fails the test: no bypass", parseBody("\tt.Fatal(\"not yet\")\n" + parseChecks), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b, h := sides(t, bypassBase, map[string]string{"calc/calc_test.go": tt.head})
			got := testBypass(b, h)
			if len(got) != len(tt.want) {
				t.Fatalf("%d failures, want %d:\n%s", len(got), len(tt.want), failures(got))
			}
			for i, w := range tt.want {
				f := got[i]
				if f.Gate != GateForbidden || f.Pattern != envelope.PatternTestBypass || f.File != "calc/calc_test.go" || f.Line != w.line || !strings.Contains(f.Detail, w.kind) {
					t.Errorf("failure %d: %v, want line %d with %q", i, f, w.line, w.kind)
				}
			}
		})
	}
}

func failures(fs []Failure) string {
	var b strings.Builder
	for _, f := range fs {
		fmt.Fprintf(&b, "  %v\n", f)
	}
	return b.String()
}

// TestExecutedAssertions: disabled-assertions counts the checks a Go test
// runs, so a refactor that keeps them running passes and one that runs
// fewer fails — wherever the checks moved.
func TestExecutedAssertions(t *testing.T) {
	t.Parallel()
	const inline = `package calc

import "testing"

func TestParse(t *testing.T) {
	if Parse("1") != 1 {
		t.Error("Parse(1)")
	}
	if Parse("2") != 2 {
		t.Error("Parse(2)")
	}
	if Parse("3") != 3 {
		t.Error("Parse(3)")
	}
}
`
	table := func(cases string) string {
		return "package calc\n\nimport \"testing\"\n\nfunc TestParse(t *testing.T) {\n\ttests := []struct {\n\t\tin   string\n\t\twant int\n\t}{" + cases +
			"}\n\tfor _, tt := range tests {\n\t\tt.Run(tt.in, func(t *testing.T) {\n\t\t\tif got := Parse(tt.in); got != tt.want {\n\t\t\t\tt.Errorf(\"Parse(%s) = %d\", tt.in, got)\n\t\t\t}\n\t\t})\n\t}\n}\n"
	}
	const helper = "package calc\n\nimport \"testing\"\n\nfunc TestParse(t *testing.T) {\n\tcheckParse(t, \"1\", 1)\n\tcheckParse(t, \"2\", 2)\n\tcheckParse(t, \"3\", 3)\n}\n"
	const helperFile = "package calc\n\nimport \"testing\"\n\nfunc checkParse(t *testing.T, in string, want int) {\n\tt.Helper()\n\tif got := Parse(in); got != want {\n\t\tt.Errorf(\"Parse(%s) = %d, want %d\", in, got, want)\n\t}\n}\n"
	const closure = "package calc\n\nimport \"testing\"\n\nfunc TestParse(t *testing.T) {\n\tcheck := func(in string, want int) {\n\t\tif Parse(in) != want {\n\t\t\tt.Errorf(\"Parse(%s)\", in)\n\t\t}\n\t}\n\tfor _, in := range []string{\"1\", \"2\", \"3\"} {\n\t\tcheck(in, int(in[0]-'0'))\n\t}\n}\n"
	tests := []struct {
		name  string
		head  map[string]string
		fails []int // lines of the disabled-assertions failures
	}{
		{"inline checks into a table", map[string]string{"calc/calc_test.go": table(`{"1", 1}, {"2", 2}, {"3", 3}`)}, nil},
		{"inline checks into a helper in a new file", map[string]string{"calc/calc_test.go": helper, "calc/helpers_test.go": helperFile}, nil},
		{"inline checks into a closure over a table", map[string]string{"calc/calc_test.go": closure}, nil},
		{"the test moved to another file", map[string]string{"calc/parse_test.go": inline}, nil},
		{"more checks", map[string]string{"calc/calc_test.go": table(`{"1", 1}, {"2", 2}, {"3", 3}, {"4", 4}`)}, nil},
		{"a table that lost a case", map[string]string{"calc/calc_test.go": table(`{"1", 1}, {"2", 2}`)}, []int{5}},
		{"a helper called less", map[string]string{"calc/calc_test.go": strings.Replace(helper, "\tcheckParse(t, \"3\", 3)\n", "", 1), "calc/helpers_test.go": helperFile}, []int{5}},
		{"a removed check", map[string]string{"calc/calc_test.go": strings.Replace(inline, "\tif Parse(\"3\") != 3 {\n\t\tt.Error(\"Parse(3)\")\n\t}\n", "", 1)}, []int{13}},
		{"a check made unreachable", map[string]string{"calc/calc_test.go": strings.Replace(inline, "\tif Parse(\"3\")", "\treturn\n\tif Parse(\"3\")", 1)}, []int{13}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b, h := sides(t, inline, tt.head)
			files := []*testFile{{path: "calc/calc_test.go", lang: LangGo}}
			var lines []int
			for _, f := range goDisabledAssertions(files, b, h) {
				if f.Pattern != envelope.PatternDisabledAssertions {
					t.Errorf("pattern %s", f.Pattern)
				}
				lines = append(lines, f.Line)
			}
			if !slices.Equal(lines, tt.fails) {
				t.Errorf("failures at %v, want %v", lines, tt.fails)
			}
		})
	}
}

// TestTestBypassGate runs the pattern through gate.Run on a real
// repository, as the runtime does: on by default, its skip not reported
// twice beside skip-markers, and off when the envelope leaves it out.
func TestTestBypassGate(t *testing.T) {
	t.Parallel()
	r, b := repoWith(t, map[string]string{"calc/calc_test.go": bypassBase})
	c := gittest.Commit(t, r, map[string]string{"calc/calc_test.go": parseBody("\tif os.Getenv(\"CI\") == \"\" {\n\t\treturn\n\t}\n\tt.Skip(\"x\")\n" + parseChecks)}, nil)
	rep, err := Run(t.Context(), Spec{WriteScope: []string{"."}}, Candidate{Repo: r, Base: b, Commit: c})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range rep.Failures {
		got = append(got, fmt.Sprintf("%s:%d", f.Pattern, f.Line))
	}
	if want := []string{"skip-markers:15", "test-bypass:12"}; !slices.Equal(got, want) {
		t.Errorf("failures %v, want %v\n%s", got, want, failures(rep.Failures))
	}
	rep, err = Run(t.Context(), Spec{WriteScope: []string{"."}, Forbidden: []string{envelope.PatternTestBypass}}, Candidate{Repo: r, Base: b, Commit: c})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Failures) != 2 || !strings.Contains(rep.Failures[1].Detail, "a new t.Skip path") {
		t.Errorf("test-bypass alone: %s", failures(rep.Failures))
	}
}

// FuzzTestBypass: the model never panics on any Go test file that parses.
func FuzzTestBypass(f *testing.F) {
	f.Add(bypassBase, parseBody("\tif true {\n\t\treturn\n\t}\n"+parseChecks))
	f.Add(bypassBase, "package x\nfunc TestX(t *testing.T) { for { check := func() { t.Error() }; t.Run(\"a\", check) } }\n")
	f.Add("package x\nfunc h(t *testing.T) { h(t) }\n", "package x\nfunc TestY(t *testing.T) { h(t); defer func() { t.Fatal() }() }\nfunc h(t *testing.T) { h(t); t.Error() }\n")
	f.Fuzz(func(t *testing.T, base, head string) {
		b, ok1 := parseGoSide(map[string][]byte{"a_test.go": []byte(base)})
		h, ok2 := parseGoSide(map[string][]byte{"a_test.go": []byte(head)})
		if !ok1 || !ok2 {
			return
		}
		testBypass(b, h)
		goDisabledAssertions([]*testFile{{path: "a_test.go", lang: LangGo}}, b, h)
	})
}
