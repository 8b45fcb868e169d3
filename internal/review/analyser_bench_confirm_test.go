package review

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// scriptedBench writes an executable that stands for a benchmark binary:
// run k (counted in a file beside it) prints BenchmarkX at times[k] ns/op.
func scriptedBench(t *testing.T, dir, side string, times []string) *benchPkg {
	t.Helper()
	counter := filepath.Join(dir, side+".count")
	script := "#!/bin/sh\nn=$(cat " + counter + " 2>/dev/null || echo 0)\necho $((n+1)) > " + counter + "\n" +
		"set -- " + strings.Join(times, " ") + "\nshift $n\necho \"BenchmarkX-2 1000 $1 ns/op\"\necho PASS\n"
	bin := filepath.Join(dir, side+".sh")
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return &benchPkg{importPath: "example.com/m/x", dir: dir, binary: bin}
}

func TestGoBenchConfirms(t *testing.T) {
	t.Parallel()
	slow := []string{"100", "101", "102", "100", "103", "101"}
	fast := []string{"50", "51", "50", "52", "50", "51"}
	cases := []struct {
		name       string
		base, head []string // 12 runs each: the first series, then the second
		want       bool     // significant
		delta      float64  // the reported slowdown, when significant
	}{
		// A 2× slowdown in both series is one.
		{"real", append(fast, fast...), append(slow, slow...), true, 98},
		// The second series contradicts the first: a jump of the
		// machine's speed during the first, not the change.
		{"burst", append(fast, fast...), append(slow, fast...), false, 0},
		// The smaller of the two slowdowns is reported.
		{"smaller", append(fast, fast...), append(slow, "75", "76", "75", "77", "75", "76"), true, 48.5},
		// A speedup is reported as it is, and not measured twice.
		{"faster", append(slow, slow...), append(fast, fast...), true, -50},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			sides := map[string]map[string]*benchPkg{
				"base": {"example.com/m/x": scriptedBench(t, dir, "base", tc.base)},
				"head": {"example.com/m/x": scriptedBench(t, dir, "head", tc.head)},
			}
			c := &Change{HeadDir: dir, Scratch: dir}
			fs, err := GoBench{}.measureConfirmed(t.Context(), c, sides, []string{"example.com/m/x"}, filepath.Join(dir, "log"))
			if err != nil {
				t.Fatal(err)
			}
			if len(fs) != 1 || fs[0].Metric == nil {
				t.Fatalf("findings = %+v, want one benchmark", fs)
			}
			m := fs[0].Metric
			if m.Significant != tc.want {
				t.Fatalf("significant = %v, want %v: %s", m.Significant, tc.want, fs[0].Evidence)
			}
			if tc.want && (m.Delta < tc.delta-2 || m.Delta > tc.delta+2) {
				t.Errorf("delta = %.1f%%, want about %.1f%%: %s", m.Delta, tc.delta, fs[0].Evidence)
			}
			// Only a suspected slowdown is measured a second time.
			runs, _ := os.ReadFile(filepath.Join(dir, "head.count"))
			wantRuns := "6"
			if tc.name != "faster" {
				wantRuns = "12"
			}
			if strings.TrimSpace(string(runs)) != wantRuns {
				t.Errorf("head ran %s times, want %s", strings.TrimSpace(string(runs)), wantRuns)
			}
		})
	}
}
