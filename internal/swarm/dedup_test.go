package swarm

import (
	"testing"

	"github.com/apiary-dev/apiary/internal/review"
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
		{"exact, reformatted", "util/d.go", "package util\n\nfunc SumAll(xs []int) int {\n\t// the same body, other comments\n\ttotal := 0\n\tfor _, x := range xs { total += x }\n\treturn total\n}\n", "d", DupExact},
		{"near", "util/n.go", "package util\n\nfunc Diff(xs []int) int {\n\ttotal := 0\n\tfor _, x := range xs {\n\t\ttotal -= x\n\t}\n\treturn total\n}\n", "n", DupNear},
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
