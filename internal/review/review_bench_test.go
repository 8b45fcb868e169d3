package review

import (
	"fmt"
	"testing"
)

// BenchmarkReviewSelection measures selecting analysers for a change of
// 1,000 paths against ten when: rules.
func BenchmarkReviewSelection(b *testing.B) {
	paths := make([]string, 1000)
	for i := range paths {
		paths[i] = fmt.Sprintf("internal/pkg%d/sub/file%d.txt", i%50, i)
	}
	paths[999] = "internal/pkg9/sub/x.go"
	ws := make([]When, 10)
	for i := range ws {
		ws[i] = When{Paths: []string{fmt.Sprintf("docs/**/*.md%d", i), "*.go"}}
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, w := range ws {
			if !w.selected(paths, nil) {
				b.Fatal("not selected")
			}
		}
	}
}

// BenchmarkEvaluateRules measures the decision rules over 10,000 findings.
func BenchmarkEvaluateRules(b *testing.B) {
	fs := make([]Finding, 10000)
	for i := range fs {
		fs[i] = Finding{ID: fmt.Sprintf("a/%d", i), Kind: "note", Severity: SevLow, Evidence: "e"}
		if i%100 == 0 {
			fs[i] = Finding{ID: fmt.Sprintf("b/%d", i), Kind: KindBenchmark, Severity: SevInfo, Evidence: "e",
				Metric: &Metric{Name: MetricSecPerOp, Delta: float64(i % 7), Significant: true}}
		}
	}
	r := DefaultConfig().Decision
	b.ReportAllocs()
	for b.Loop() {
		if d, _ := EvaluateRules(r, fs); d != Merge {
			b.Fatal(d)
		}
	}
}
