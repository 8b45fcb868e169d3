package review

import "testing"

const sumGo = "package util\n\n// Sum adds.\nfunc Sum(xs []int) int {\n\ttotal := 0\n\tfor _, x := range xs {\n\t\ttotal += x\n\t}\n\treturn total\n}\n"

// TestExtractFuncs: Go, Python and JavaScript functions are found with
// their names and lines; two bodies that differ only in comments and
// layout hash alike; Similarity is difflib's ratio.
func TestExtractFuncs(t *testing.T) {
	t.Parallel()
	fs := ExtractFuncs("util/sum.go", []byte(sumGo))
	if len(fs) != 1 || fs[0].Name != "Sum" || fs[0].Line != 4 || fs[0].Lang != "go" || len(fs[0].Hash) != 64 {
		t.Fatalf("ExtractFuncs = %+v", fs)
	}
	again := ExtractFuncs("util/d.go", []byte("package util\n\nfunc SumAll(xs []int) int {\n\t// the same body, other comments\n\ttotal := 0\n\tfor _, x := range xs { total += x }\n\treturn total\n}\n"))
	if len(again) != 1 || again[0].Hash != fs[0].Hash {
		t.Errorf("a reformatted copy hashes differently: %+v vs %+v", again, fs)
	}
	py := ExtractFuncs("u.py", []byte("def add(a, b):\n    # comment\n    return a + b\n\ndef sub(a, b):\n    return a - b\n"))
	js := ExtractFuncs("u.js", []byte("function add(a, b) {\n  return a + b; // sum\n}\n"))
	if len(py) != 2 || py[0].Name != "add" || len(js) != 1 || js[0].Name != "add" {
		t.Fatalf("python %+v, javascript %+v", py, js)
	}
	if s := Similarity([]string{"a", "b", "c", "d"}, []string{"a", "x", "c", "d"}); s != 0.75 {
		t.Fatalf("Similarity = %v, want 0.75", s)
	}
}

// FuzzExtractFuncs: any input parses without panicking, and every function
// found has a name, a line within the file and a SHA-256 hex hash.
func FuzzExtractFuncs(f *testing.F) {
	for _, s := range []string{sumGo, "def f(x):\n  return x\n", "function g() { if (a) { b } }", "func (", "package p\nfunc (r *T) M() {}"} {
		f.Add("a.go", s)
		f.Add("a.py", s)
		f.Add("a.ts", s)
	}
	f.Fuzz(func(t *testing.T, name, src string) {
		for _, fn := range ExtractFuncs(name, []byte(src)) {
			if fn.Name == "" || fn.Line < 1 || len(fn.Hash) != 64 {
				t.Fatalf("bad func %+v", fn)
			}
		}
	})
}

// TestSignatures: each function found carries its declaration without its
// body and the first line of its documentation.
func TestSignatures(t *testing.T) {
	t.Parallel()
	goSrc := "package util\n\n// Sum adds the numbers.\n// It returns 0 for none.\nfunc Sum(xs []int) (total int) {\n\tfor _, x := range xs {\n\t\ttotal += x\n\t}\n\treturn\n}\n\nfunc (s *Set[T]) Add(v T,\n\tw ...T) {\n\ts.m[v] = true\n}\n"
	py := "def add(a,\n        b=1):\n    \"\"\"Add a and b.\n\n    More.\"\"\"\n    return a + b\n\ndef bare(x):\n    return x\n"
	js := "/**\n * Scale a vector.\n */\nfunction scale(v, k) {\n  return v.map(x => x * k);\n}\n\n// Sum the list.\nconst sum = (xs) => {\n  return xs.reduce((a, b) => a + b, 0);\n};\n"
	for _, tc := range []struct {
		file, src string
		want      [][3]string // name, signature, doc
	}{
		{"u.go", goSrc, [][3]string{{"Sum", "func Sum(xs []int) (total int)", "Sum adds the numbers."}, {"Set.Add", "func (s *Set[T]) Add(v T, w ...T)", ""}}},
		{"u.py", py, [][3]string{{"add", "def add(a, b=1)", "Add a and b."}, {"bare", "def bare(x)", ""}}},
		{"u.js", js, [][3]string{{"scale", "function scale(v, k)", "Scale a vector."}, {"sum", "const sum = (xs) =>", "Sum the list."}}},
	} {
		fs := ExtractFuncs(tc.file, []byte(tc.src))
		if len(fs) != len(tc.want) {
			t.Fatalf("%s: %+v", tc.file, fs)
		}
		for i, w := range tc.want {
			if got := [3]string{fs[i].Name, fs[i].Signature, fs[i].Doc}; got != w {
				t.Errorf("%s: got %q, want %q", tc.file, got, w)
			}
		}
	}
}

// TestLangOf: the language names follow gate.SourceLang.
func TestLangOf(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ file, want string }{
		{"a/b.go", "go"}, {"a/b_test.go", "go"}, {"x.py", "py"},
		{"a.js", "js"}, {"a.jsx", "js"}, {"a.mjs", "js"}, {"a.cjs", "js"},
		{"a.ts", "js"}, {"a.tsx", "js"}, {"a.mts", "js"}, {"a.cts", "js"},
		{"README.md", ""}, {"go.mod", ""}, {"src/lib.rs", ""}, {"Makefile", ""},
	} {
		if got := LangOf(tt.file); got != tt.want {
			t.Errorf("LangOf(%q) = %q, want %q", tt.file, got, tt.want)
		}
	}
}

// TestUtilityFile: test files by gate's rules, vendored code and fixtures
// hold no utilities; nor do files of languages ExtractFuncs does not read.
func TestUtilityFile(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		file string
		want bool
	}{
		{"util/sum.go", true},
		{"util/test_helpers.go", true}, // test_* is Python's marker, not Go's
		{"util/sum.spec.go", true},
		{"pkg/helpers.py", true},
		{"web/sum.ts", true},
		{"web/sum.mts", true},
		{"web/latest/sum.js", true},
		{"util/sum_test.go", false},
		{"pkg/test_sum.py", false},
		{"pkg/sum_test.py", false},
		{"pkg/conftest.py", false},
		{"pkg/tests/helpers.py", false},
		{"web/sum.test.ts", false},
		{"web/sum.spec.js", false},
		{"web/__tests__/sum.js", false},
		{"test/sum.js", false},
		{"vendor/x/y.go", false},
		{"a/vendor/x/y.go", false},
		{"web/node_modules/lib/index.js", false},
		{"pkg/testdata/x.go", false},
		{"pkg/testdata/x_test.go", false}, // no test to the go command, but a fixture
		{"README.md", false},
		{"src/lib.rs", false},
	} {
		if got := UtilityFile(tt.file); got != tt.want {
			t.Errorf("UtilityFile(%q) = %v, want %v", tt.file, got, tt.want)
		}
	}
}
