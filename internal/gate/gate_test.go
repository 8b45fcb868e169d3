package gate

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/git"
	"github.com/apiary-dev/apiary/internal/git/gittest"
)

// repoWith makes a repository holding files and returns it with the
// commit that added them.
// fixedTime is the tests' clock.
var fixedTime = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func repoWith(t *testing.T, files map[string]string) (*git.Repo, string) {
	t.Helper()
	r := gittest.NewRepo(t, nil)
	return r, gittest.Commit(t, r, files, nil)
}

const goTest = `package calc

import "testing"

func TestAdd(t *testing.T) {
	if Add(1, 2) != 3 {
		t.Fatalf("Add(1, 2) = %d", Add(1, 2))
	}
}

func TestSub(t *testing.T) {
	if Sub(3, 1) != 2 {
		t.Errorf("Sub(3, 1) = %d, want 2", Sub(3, 1))
	}
}
`

const pyTest = `import pytest

from calc import add, sub


def test_add():
    assert add(1, 2) == 3


def test_sub():
    assert sub(3, 1) == 2
`

const jsTest = `import { add, sub } from "./calc";

describe("calc", () => {
  it("adds", () => {
    expect(add(1, 2)).toBe(3);
  });

  test("subtracts", () => {
    expect(sub(3, 1)).toBe(2);
  });
});
`

// TestForbiddenPatterns crafts diffs in a real repository and checks which
// patterns each one trips — and that innocent changes trip none.
func TestForbiddenPatterns(t *testing.T) {
	t.Parallel()
	base := map[string]string{
		"calc/calc_test.go":    goTest,
		"tests/test_calc.py":   pyTest,
		"web/calc.test.ts":     jsTest,
		"calc/calc.go":         "package calc\n",
		"README.md":            "readme\n",
		"web/calc.ts":          "export const add = (a, b) => a + b;\n",
		"tests/conftest.py":    "import pytest\n",
		"calc/helpers_test.go": "package calc\n\nfunc helper() {}\n",
	}
	type hit struct {
		pattern, file string
		line          int
	}
	tests := []struct {
		name    string
		files   map[string]string
		renames map[string]string
		want    []hit // every hit expected, in order; nil = none
	}{
		// Go.
		{"go delete test", map[string]string{"calc/calc_test.go": goTest[:strings.Index(goTest, "func TestSub")]}, nil,
			[]hit{{"deleted-tests", "calc/calc_test.go", 11}, {"disabled-assertions", "calc/calc_test.go", 13}}},
		{"go remove assertion", map[string]string{"calc/calc_test.go": gittest.Replace(goTest, "\t\tt.Errorf(\"Sub(3, 1) = %d, want 2\", Sub(3, 1))\n", "")}, nil,
			[]hit{{"disabled-assertions", "calc/calc_test.go", 13}}},
		{"go comment out assertion", map[string]string{"calc/calc_test.go": gittest.Replace(goTest, "\t\tt.Fatalf(", "\t\t// t.Fatalf(")}, nil,
			[]hit{{"disabled-assertions", "calc/calc_test.go", 7}}},
		{"go block-comment a test", map[string]string{"calc/calc_test.go": gittest.Replace(gittest.Replace(goTest, "func TestSub", "/*\nfunc TestSub"), "2\", Sub(3, 1))\n\t}\n}\n", "2\", Sub(3, 1))\n\t}\n}\n*/\n")}, nil,
			[]hit{{"deleted-tests", "calc/calc_test.go", 11}, {"disabled-assertions", "calc/calc_test.go", 13}}},
		{"go skip", map[string]string{"calc/calc_test.go": gittest.Replace(goTest, "func TestSub(t *testing.T) {\n", "func TestSub(t *testing.T) {\n\tt.Skip(\"flaky\")\n")}, nil,
			[]hit{{"skip-markers", "calc/calc_test.go", 12}}},
		{"go build constraint", map[string]string{"calc/calc_test.go": "//go:build ignore\n\n" + goTest}, nil,
			[]hit{{"skip-markers", "calc/calc_test.go", 1}}},
		{"go emptied", map[string]string{"calc/calc_test.go": "package calc\n"}, nil,
			[]hit{{"deleted-tests", "calc/calc_test.go", 5}, {"deleted-tests", "calc/calc_test.go", 11}, {"disabled-assertions", "calc/calc_test.go", 7}, {"disabled-assertions", "calc/calc_test.go", 13}, {"emptied-tests", "calc/calc_test.go", 1}}},
		{"go delete test file", map[string]string{"calc/calc_test.go": ""}, nil,
			[]hit{{"deleted-tests", "calc/calc_test.go", 5}, {"deleted-tests", "calc/calc_test.go", 11}, {"disabled-assertions", "calc/calc_test.go", 7}, {"disabled-assertions", "calc/calc_test.go", 13}}},
		{"go rename test function", map[string]string{"calc/calc_test.go": gittest.Replace(goTest, "TestSub", "TestSubtract")}, nil, nil},
		{"go move test file", nil, map[string]string{"calc/calc_test.go": "calc/arith_test.go"}, nil},
		{"go add assertion", map[string]string{"calc/calc_test.go": gittest.Replace(goTest, "\tif Sub(3, 1)", "\tif Sub(2, 2) != 0 {\n\t\tt.Error(\"Sub(2, 2)\")\n\t}\n\tif Sub(3, 1)")}, nil, nil},
		{"go reword assertion", map[string]string{"calc/calc_test.go": gittest.Replace(goTest, "t.Fatalf(\"Add(1, 2) = %d\"", "t.Fatalf(\"Add(1, 2) = %d, want 3\"")}, nil, nil},
		{"go assertion in a string is no assertion", map[string]string{"calc/helpers_test.go": "package calc\n\nconst doc = `\nt.Fatal(x)\n`\n"}, nil, nil},
		// Python.
		{"py delete test", map[string]string{"tests/test_calc.py": pyTest[:strings.Index(pyTest, "\n\ndef test_sub")] + "\n"}, nil,
			[]hit{{"deleted-tests", "tests/test_calc.py", 10}, {"disabled-assertions", "tests/test_calc.py", 11}}},
		{"py remove assertion", map[string]string{"tests/test_calc.py": gittest.Replace(pyTest, "    assert add(1, 2) == 3\n", "    pass\n")}, nil,
			[]hit{{"disabled-assertions", "tests/test_calc.py", 7}}},
		{"py skip decorator", map[string]string{"tests/test_calc.py": gittest.Replace(pyTest, "def test_sub", "@pytest.mark.skip(reason=\"later\")\ndef test_sub")}, nil,
			[]hit{{"skip-markers", "tests/test_calc.py", 10}}},
		{"py skip in conftest", map[string]string{"tests/conftest.py": "import pytest\n\npytestmark = pytest.mark.skip\n"}, nil,
			[]hit{{"skip-markers", "tests/conftest.py", 3}}},
		{"py docstring hides a test", map[string]string{"tests/test_calc.py": gittest.Replace(pyTest, "def test_sub():\n    assert sub(3, 1) == 2\n", "\"\"\"\ndef test_sub():\n    assert sub(3, 1) == 2\n\"\"\"\n")}, nil,
			[]hit{{"deleted-tests", "tests/test_calc.py", 10}, {"disabled-assertions", "tests/test_calc.py", 10}}},
		{"py emptied", map[string]string{"tests/test_calc.py": "# nothing here\n"}, nil,
			[]hit{{"deleted-tests", "tests/test_calc.py", 6}, {"deleted-tests", "tests/test_calc.py", 10}, {"disabled-assertions", "tests/test_calc.py", 7}, {"disabled-assertions", "tests/test_calc.py", 11}, {"emptied-tests", "tests/test_calc.py", 1}}},
		{"py rename test", map[string]string{"tests/test_calc.py": gittest.Replace(pyTest, "def test_sub", "def test_subtract")}, nil, nil},
		{"py add assertion", map[string]string{"tests/test_calc.py": gittest.Replace(pyTest, "    assert sub(3, 1) == 2\n", "    assert sub(3, 1) == 2\n    assert sub(1, 1) == 0\n")}, nil, nil},
		// JS/TS.
		{"js delete test", map[string]string{"web/calc.test.ts": gittest.Replace(jsTest, "\n  test(\"subtracts\", () => {\n    expect(sub(3, 1)).toBe(2);\n  });\n", "")}, nil,
			[]hit{{"deleted-tests", "web/calc.test.ts", 8}, {"disabled-assertions", "web/calc.test.ts", 9}}},
		{"js remove expect", map[string]string{"web/calc.test.ts": gittest.Replace(jsTest, "    expect(add(1, 2)).toBe(3);\n", "")}, nil,
			[]hit{{"disabled-assertions", "web/calc.test.ts", 5}}},
		{"js it.skip", map[string]string{"web/calc.test.ts": gittest.Replace(jsTest, "it(\"adds\"", "it.skip(\"adds\"")}, nil,
			[]hit{{"skip-markers", "web/calc.test.ts", 4}}},
		{"js xit", map[string]string{"web/calc.test.ts": gittest.Replace(jsTest, "it(\"adds\"", "xit(\"adds\"")}, nil,
			[]hit{{"skip-markers", "web/calc.test.ts", 4}}},
		{"js only", map[string]string{"web/calc.test.ts": gittest.Replace(jsTest, "test(\"subtracts\"", "test.only(\"subtracts\"")}, nil,
			[]hit{{"skip-markers", "web/calc.test.ts", 8}}},
		{"js emptied", map[string]string{"web/calc.test.ts": "export {};\n"}, nil,
			[]hit{{"deleted-tests", "web/calc.test.ts", 4}, {"deleted-tests", "web/calc.test.ts", 8}, {"disabled-assertions", "web/calc.test.ts", 5}, {"disabled-assertions", "web/calc.test.ts", 9}, {"emptied-tests", "web/calc.test.ts", 1}}},
		{"js rename test", map[string]string{"web/calc.test.ts": gittest.Replace(jsTest, "it(\"adds\"", "it(\"adds two numbers\"")}, nil, nil},
		{"js add expect", map[string]string{"web/calc.test.ts": gittest.Replace(jsTest, "    expect(add(1, 2)).toBe(3);\n", "    expect(add(1, 2)).toBe(3);\n    expect(add(0, 0)).toBe(0);\n")}, nil, nil},
		// Not test files: nothing is read.
		{"source change", map[string]string{"calc/calc.go": "package calc\n\n// t.Skip() in a comment of a non-test file\n", "web/calc.ts": ""}, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			files := map[string]string{}
			for k, v := range base {
				files[k] = v
			}
			r, b := repoWith(t, files)
			c := gittest.Commit(t, r, tt.files, tt.renames)
			rep, err := Run(t.Context(), Spec{WriteScope: []string{"."}}, Candidate{Repo: r, Base: b, Commit: c})
			if err != nil {
				t.Fatal(err)
			}
			var got []hit
			for _, f := range rep.Failures {
				if f.Gate != GateForbidden || !errors.Is(f, ErrForbidden) || f.Detail == "" {
					t.Errorf("unexpected failure %+v", f)
				}
				got = append(got, hit{f.Pattern, f.File, f.Line})
			}
			slices.SortStableFunc(got, func(a, b hit) int { return strings.Compare(a.pattern, b.pattern) })
			if !slices.Equal(got, tt.want) {
				t.Errorf("hits %v, want %v\n%v", got, tt.want, rep.Err())
			}
		})
	}
}

// TestForbiddenSelection: only the enabled patterns are reported; [] turns
// the gate off; an unknown name is an error.
func TestForbiddenSelection(t *testing.T) {
	t.Parallel()
	r, b := repoWith(t, map[string]string{"a_test.go": goTest})
	c := gittest.Commit(t, r, map[string]string{"a_test.go": "package calc\n"}, nil)
	for _, tt := range []struct {
		forbidden []string
		want      int
	}{
		{nil, 5}, // every built-in: test-bypass finds nothing in an emptied file
		{[]string{}, 0},
		{[]string{envelope.PatternEmptiedTests}, 1},
		{[]string{envelope.PatternDeletedTests, envelope.PatternSkipMarkers}, 2},
	} {
		rep, err := Run(t.Context(), Spec{WriteScope: []string{"."}, Forbidden: tt.forbidden}, Candidate{Repo: r, Base: b, Commit: c})
		if err != nil || len(rep.Failures) != tt.want {
			t.Errorf("forbidden %v: %d failures (%v), want %d", tt.forbidden, len(rep.Failures), err, tt.want)
		}
	}
	if _, err := Run(t.Context(), Spec{Forbidden: []string{"no-fun"}}, Candidate{Repo: r, Base: b, Commit: c}); !errors.Is(err, ErrUnknownPattern) {
		t.Errorf("unknown pattern: %v", err)
	}
}

func TestScope(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		path, scope string
		want        bool
	}{
		{"src/parse/lex.go", "src/parse/", true},
		{"src/parse/lex.go", "src/parse", true},
		{"src/parse", "src/parse", true},
		{"src/parse", "src/parse/", false},
		{"src/parser.go", "src/parse", false},
		{"src/parser.go", "src/parse/", false},
		{"anything/at/all", ".", true},
		{"README.md", "README.md", true},
		{"README.md.bak", "README.md", false},
	} {
		if got := InScope(tt.path, tt.scope); got != tt.want {
			t.Errorf("InScope(%q, %q) = %v", tt.path, tt.scope, got)
		}
	}
	r, b := repoWith(t, map[string]string{"src/parse/lex.go": "a\n", "src/other.go": "b\n", "tests/golden/out.txt": "g\n"})
	c := gittest.Commit(t, r, map[string]string{"src/parse/lex.go": "A\n", "src/parse/new.go": "n\n", "src/other.go": "", "tests/golden/out.txt": "G\n"}, nil)
	rep, err := Run(t.Context(), Spec{WriteScope: []string{"src/parse/", "tests/"}, Sealed: []string{"tests/golden/"}}, Candidate{Repo: r, Base: b, Commit: c})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range rep.Failures {
		got = append(got, f.Gate+" "+f.File)
	}
	if want := []string{"scope src/other.go", "sealed tests/golden/out.txt"}; !slices.Equal(got, want) {
		t.Errorf("failures %v, want %v", got, want)
	}
	err = rep.Err()
	if !errors.Is(err, ErrScope) || !errors.Is(err, ErrSealed) || errors.Is(err, ErrCheck) {
		t.Errorf("Err() = %v", err)
	}
	if len(rep.Changes) != 4 {
		t.Errorf("changes %v", rep.Changes)
	}
	// Empty write scope: no change is allowed; a receipt can carry the reason.
	rep, _ = Run(t.Context(), Spec{WriteScope: []string{}}, Candidate{Repo: r, Base: b, Commit: c})
	if len(rep.Failures) != 4 || !strings.Contains(rep.Failures[0].Detail, "write scope is empty") {
		t.Errorf("empty scope: %v", rep.Failures)
	}
	reason := rep.Failures[0].Reason()
	id, _ := envelope.NewTaskID(fixedTime, strings.NewReader(strings.Repeat("x", 16)))
	if _, err := envelope.EncodeReceipt(&envelope.Receipt{TaskID: id, Status: envelope.StatusFailed, Gate: &reason}); err != nil {
		t.Errorf("gate reason does not fit a receipt: %v", err)
	}
}
