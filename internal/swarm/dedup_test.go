package swarm

import (
	"slices"
	"strings"
	"testing"

	"github.com/apiary-dev/apiary/internal/review"
	"github.com/apiary-dev/apiary/internal/swarm/layout"
)

const dupSum = "package util\n\n// Sum adds.\nfunc Sum(xs []int) int {\n\ttotal := 0\n\tfor _, x := range xs {\n\t\ttotal += x\n\t}\n\treturn total\n}\n"

// TestDuplicates: the same body under another name, other comments and
// formatting hashes alike (an exact duplicate); a body with one changed
// operator is a near duplicate over the threshold; an unrelated body is
// neither; a function is never its own duplicate; trivial bodies are
// ignored.
func TestDuplicates(t *testing.T) {
	t.Parallel()
	orig := review.ExtractFuncs("util/sum.go", []byte(dupSum))
	if len(orig) != 1 || orig[0].Name != "Sum" || orig[0].Line != 4 || orig[0].Lang != "go" || len(orig[0].Hash) != 64 {
		t.Fatalf("ExtractFuncs = %+v", orig)
	}
	x := newDupIndex()
	x.add(orig[0], "")
	tests := []struct {
		name, file, src, task string
		kind                  string // "" when no duplicate
	}{
		{"exact, reformatted", "util/d.go", "package util\n\nfunc SumAll(xs []int) int {\n\t// the same body, other comments\n\ttotal := 0\n\tfor _, x := range xs { total += x }\n\treturn total\n}\n", "d", layout.DupExact},
		{"near", "util/n.go", "package util\n\nfunc Diff(xs []int) int {\n\ttotal := 0\n\tfor _, x := range xs {\n\t\ttotal -= x\n\t}\n\treturn total\n}\n", "n", layout.DupNear},
		{"different", "util/o.go", "package util\n\nfunc Max(m map[string]int, k string) (int, bool) {\n\tif v, ok := m[k]; ok && v > 0 {\n\t\treturn v * 2, true\n\t}\n\treturn -1, false\n}\n", "o", ""},
		{"itself", "util/sum.go", dupSum, "", ""},
		{"trivial", "util/t.go", "package util\n\nfunc One() int { return 1 }\n", "t", ""},
	}
	for _, tt := range tests {
		fs := review.ExtractFuncs(tt.file, []byte(tt.src))
		if len(fs) != 1 {
			t.Fatalf("%s: ExtractFuncs = %+v", tt.name, fs)
		}
		d, ok := x.find(fs[0], tt.task, 0.85)
		if got := map[bool]string{true: d.Kind}[ok]; got != tt.kind {
			t.Errorf("%s: duplicate %+v (ok %v); want kind %q", tt.name, d, ok, tt.kind)
		}
		if ok && d.Of.Name != "Sum" {
			t.Errorf("%s: duplicate of %s, want Sum", tt.name, d.Of.Name)
		}
	}
}

// TestDupIndexRewrittenFile: when tasks rewrite a file, the index holds
// what the file holds now, whoever wrote what it held before — a function
// a task added and a later one deleted is no longer found, and the
// utility index lists a function where it is now; an exact hash first
// held by the file passes to another file's function that has it too.
func TestDupIndexRewrittenFile(t *testing.T) {
	t.Parallel()
	const (
		sumBody = "func Sum(xs []int) int {\n\ttotal := 0\n\tfor _, x := range xs {\n\t\ttotal += x\n\t}\n\treturn total\n}\n"
		total   = "func Total(xs []int) int {\n\ttotal := 0\n\tfor _, x := range xs {\n\t\ttotal += x\n\t}\n\treturn total\n}\n"
		scale   = "func Scale(xs []int, k int) {\n\tfor i := range xs {\n\t\txs[i] = xs[i] * k\n\t}\n\treturn\n}\n"
	)
	funcs := func(file, src string) []review.Func {
		fs := review.ExtractFuncs(file, []byte("package util\n\n"+src))
		if len(fs) == 0 {
			t.Fatalf("no functions in %q", src)
		}
		return fs
	}
	index := func(x *dupIndex, file, src, task string) {
		x.removeFile(file)
		for _, f := range funcs(file, src) {
			x.add(f, task)
		}
	}
	x := newDupIndex()
	index(x, "util/sum.go", "// Sum adds.\n"+sumBody, "")
	index(x, "util/sum.go", "// Scale multiplies.\n"+scale+"\n// Sum adds.\n"+sumBody, "a") // Sum moves down
	index(x, "util/sum.go", "// Sum adds.\n"+sumBody, "b")                                  // Scale goes
	want := []UtilFunc{{Name: "Sum", File: "util/sum.go", Line: 4, Lang: "go", Signature: "func Sum(xs []int) int", Doc: "Sum adds."}}
	if got := utilIndex(x.all, nil, maxUtils, maxUtilsBytes); !slices.Equal(got, want) {
		t.Errorf("utility index %+v; want %+v", got, want)
	}
	if d, ok := x.find(funcs("util/n.go", strings.Replace(scale, "Scale", "Mul", 1))[0], "n", 0.85); ok {
		t.Errorf("a copy of the deleted Scale is a duplicate of %+v", d.Of)
	}

	x = newDupIndex()
	index(x, "util/sum.go", sumBody, "")
	index(x, "util/total.go", total, "")
	index(x, "util/sum.go", scale, "a") // Sum goes; Total has its hash
	d, ok := x.find(funcs("util/n.go", strings.Replace(sumBody, "Sum", "Add", 1))[0], "n", 0.85)
	if !ok || d.Kind != layout.DupExact || d.Of.Name != "Total" {
		t.Errorf("duplicate %+v (ok %v); want an exact duplicate of Total", d, ok)
	}
}
