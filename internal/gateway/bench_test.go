//go:build unix

package gateway

import (
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apiary-dev/apiary/internal/llmapi"
	"github.com/apiary-dev/apiary/internal/llmfake"
)

// BenchmarkProxy measures one sequential request over keep-alive
// connections, direct to llmfake, through a bare httputil.ReverseProxy and
// through the gateway, in one run: gateway less bareproxy is what the
// gateway's own work costs, bareproxy less direct what any proxy hop costs
// (see apiary bench overhead for the open-loop measurement).
func BenchmarkProxy(b *testing.B) {
	_, up := fake(b, llmfake.Config{Format: llmfake.FormatAnthropic})
	g := start(b, Config{Upstreams: []Upstream{{Name: "a", URL: up, Provider: llmapi.Anthropic, MaxConcurrency: 64}}})
	// A bare httputil.ReverseProxy: the floor any proxy hop costs.
	u, _ := url.Parse(up)
	bare := httputil.NewSingleHostReverseProxy(u)
	bare.FlushInterval = -1
	bl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	bsrv := &http.Server{Handler: bare}
	go func() { _ = bsrv.Serve(bl) }()
	b.Cleanup(func() { bsrv.Close() })
	bareURL := "http://" + bl.Addr().String()
	for _, stream := range []bool{false, true} {
		body := `{"model":"claude-sonnet-4-5","max_tokens":64,"messages":[{"role":"user","content":"Say something short."}]}`
		name := "json"
		if stream {
			body = strings.Replace(body, `"max_tokens":64,`, `"max_tokens":64,"stream":true,`, 1)
			name = "sse"
		}
		for _, tgt := range []struct{ name, url string }{{"direct", up}, {"bareproxy", bareURL}, {"gateway", g.URL}} {
			b.Run(name+"/"+tgt.name, func(b *testing.B) {
				tr := &http.Transport{MaxIdleConnsPerHost: 4}
				defer tr.CloseIdleConnections()
				c := &http.Client{Transport: tr}
				b.ReportAllocs()
				cpu0 := processCPU()
				for b.Loop() {
					req, _ := http.NewRequest(http.MethodPost, tgt.url+"/v1/messages", strings.NewReader(body))
					req.Header.Set("X-Api-Key", "k")
					resp, err := c.Do(req)
					if err != nil {
						b.Fatal(err)
					}
					if _, err := io.Copy(io.Discard, resp.Body); err != nil {
						b.Fatal(err)
					}
					resp.Body.Close()
					if resp.StatusCode != 200 {
						b.Fatalf("status %d", resp.StatusCode)
					}
				}
				// CPU per request of the whole process (client, gateway and
				// llmfake): unlike ns/op it does not depend on what else
				// runs on the machine.
				b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
			})
		}
	}
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
