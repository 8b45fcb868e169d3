package durable_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apiary-dev/apiary/internal/durable"
)

// The write benchmarks run on the real disk (b.TempDir), fsync included,
// and report p50/p99 latency next to ns/op. Compare with:
//
//	go test ./internal/durable -run '^$' -bench 'Write' -count 6 | go tool benchstat -
var sizes = []struct {
	name string
	n    int
}{{"4KiB", 4 << 10}, {"1MiB", 1 << 20}}

// latencies records per-operation durations for percentiles.
type latencies []time.Duration

func (l latencies) report(b *testing.B) {
	if len(l) == 0 {
		return
	}
	s := slices.Clone(l)
	slices.Sort(s)
	b.ReportMetric(float64(s[len(s)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(s[(len(s)*99)/100].Nanoseconds()), "p99-ns")
}

// BenchmarkSafeWrite is rw.safe_write (overwrite): temp file, fsync,
// read-back, rename, directory fsync, journal append + fsync.
func BenchmarkSafeWrite(b *testing.B) {
	for _, sz := range sizes {
		b.Run(sz.name, func(b *testing.B) {
			ws := b.TempDir()
			w, err := durable.Open(b.Context(), durable.Config{Roots: []string{ws}})
			must(b, err)
			defer w.Close()
			content := strings.Repeat("x", sz.n)
			var lat latencies
			b.SetBytes(int64(sz.n))
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				t0 := time.Now()
				if _, err := w.SafeWrite(b.Context(), durable.SafeWriteParams{Path: fmt.Sprintf("f%d.txt", i%16), Content: content, Mode: "overwrite"}); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
				i++
			}
			lat.report(b)
		})
	}
}

// BenchmarkOSWriteFile is the baseline: os.WriteFile, no fsync, in place.
func BenchmarkOSWriteFile(b *testing.B) {
	for _, sz := range sizes {
		b.Run(sz.name, func(b *testing.B) {
			dir := b.TempDir()
			data := []byte(strings.Repeat("x", sz.n))
			var lat latencies
			b.SetBytes(int64(sz.n))
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				t0 := time.Now()
				if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d.txt", i%16)), data, 0o644); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
				i++
			}
			lat.report(b)
		})
	}
}

// BenchmarkOSWriteFileSync is os.WriteFile plus one fsync of the file: the
// cheapest write that survives a crash at all (but can be torn).
func BenchmarkOSWriteFileSync(b *testing.B) {
	for _, sz := range sizes {
		b.Run(sz.name, func(b *testing.B) {
			dir := b.TempDir()
			data := []byte(strings.Repeat("x", sz.n))
			var lat latencies
			b.SetBytes(int64(sz.n))
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				t0 := time.Now()
				f, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf("f%d.txt", i%16)), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := f.Write(data); err != nil {
					b.Fatal(err)
				}
				if err := f.Sync(); err != nil {
					b.Fatal(err)
				}
				f.Close()
				lat = append(lat, time.Since(t0))
				i++
			}
			lat.report(b)
		})
	}
}

// riskDoc is about 142 KB of prose and code with a few secrets and PII in
// it, the size Resilient Write quotes for its classifier.
func riskDoc() string {
	var b strings.Builder
	for i := 0; b.Len() < 142_000; i++ {
		fmt.Fprintf(&b, "Section %d: the quick brown fox jumps over the lazy dog; see https://example.org/p/%d.\n", i, i)
		b.WriteString("func handler(w http.ResponseWriter, r *http.Request) { w.Write([]byte(\"ok\")) }\n")
		switch i % 97 {
		case 13:
			b.WriteString("contact: alice@example.com, ssn 123-45-6789\n")
		case 41:
			b.WriteString("token: gho_" + strings.Repeat("D", 36) + "\n")
		case 77:
			b.WriteString("Authorization: Bearer sk-ant-oat01-" + strings.Repeat("A", 42) + "\n")
		}
	}
	return b.String()
}

// BenchmarkRiskScore142KB is rw.risk_score on riskDoc (policy lookup
// included). Target: at most 3 ms per call.
func BenchmarkRiskScore142KB(b *testing.B) {
	ws := b.TempDir()
	w, err := durable.Open(b.Context(), durable.Config{Roots: []string{ws}})
	must(b, err)
	defer w.Close()
	doc := riskDoc()
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	var lat latencies
	for b.Loop() {
		t0 := time.Now()
		if _, err := w.RiskScore(b.Context(), durable.RiskScoreParams{Content: doc}); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	lat.report(b)
}
