package mcpserver_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/apiary-dev/apiary/internal/durable"
	"github.com/apiary-dev/apiary/internal/mcpserver"
)

// BenchmarkMCPSafeWrite is rw.safe_write through the SDK (client, JSON-RPC
// over in-memory transports, server, durable) on the real disk, fsync
// included; compare with durable's BenchmarkSafeWrite and
// BenchmarkOSWriteFile.
func BenchmarkMCPSafeWrite(b *testing.B) {
	for _, sz := range []struct {
		name string
		n    int
	}{{"4KiB", 4 << 10}, {"1MiB", 1 << 20}} {
		b.Run(sz.name, func(b *testing.B) {
			w, err := durable.Open(b.Context(), durable.Config{Roots: []string{b.TempDir()}})
			if err != nil {
				b.Fatal(err)
			}
			defer w.Close()
			st, ct := mcp.NewInMemoryTransports()
			ss, err := mcpserver.New(w, mcpserver.Options{}).Connect(b.Context(), st, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer ss.Close()
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(b.Context(), ct, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer cs.Close()
			content := strings.Repeat("x", sz.n)
			var lat []time.Duration
			b.SetBytes(int64(sz.n))
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				t0 := time.Now()
				res, err := cs.CallTool(b.Context(), &mcp.CallToolParams{Name: "rw.safe_write", Arguments: map[string]any{
					"path": fmt.Sprintf("f%d.txt", i%16), "content": content, "mode": "overwrite"}})
				if err != nil || res.IsError {
					b.Fatal(err, res)
				}
				lat = append(lat, time.Since(t0))
				i++
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
			b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds()), "p99-ns")
		})
	}
}
