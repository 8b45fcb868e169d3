package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apiary-dev/apiary/internal/gateway"
	"github.com/apiary-dev/apiary/internal/llmapi"
	"github.com/apiary-dev/apiary/internal/llmfake"
)

// OverheadPhase is one path of `apiary bench overhead`.
type OverheadPhase struct {
	Path       string  `json:"path"` // direct, proxy or gateway
	Stream     bool    `json:"stream"`
	Requests   int64   `json:"requests"`
	Errors     int64   `json:"errors"`
	P50us      float64 `json:"p50_us"`
	P99us      float64 `json:"p99_us"`
	CPUPerReq  float64 `json:"cpu_us_per_req"`
	FirstError string  `json:"first_error,omitempty"`
}

// OverheadResult is the whole report.
type OverheadResult struct {
	Rate           int             `json:"rate_per_s"`
	Seconds        float64         `json:"seconds_per_phase"`
	Phases         []OverheadPhase `json:"phases"`
	AddedP50us     float64         `json:"added_p50_us"`
	AddedP99us     float64         `json:"added_p99_us"`
	AddedStreamP50 float64         `json:"added_stream_p50_us"`
	AddedStreamP99 float64         `json:"added_stream_p99_us"`
	AddedCPUPerReq float64         `json:"added_cpu_us_per_req"`
	// Beyond a bare httputil.ReverseProxy: the gateway's own work, without
	// the cost of any extra HTTP hop.
	OverProxyP50us     float64 `json:"over_proxy_p50_us"`
	OverProxyP99us     float64 `json:"over_proxy_p99_us"`
	OverProxyStreamP50 float64 `json:"over_proxy_stream_p50_us"`
	OverProxyStreamP99 float64 `json:"over_proxy_stream_p99_us"`
	OverProxyCPUPerReq float64 `json:"over_proxy_cpu_us_per_req"`
	Streams            int     `json:"concurrent_streams"`
	StreamErrors       int64   `json:"stream_errors"`
	HeapPerStreamKB    float64 `json:"gateway_heap_kib_per_stream"`
}

// RunOverhead measures what the gateway adds over direct and over a bare
// reverse proxy: rate requests per second for secs on each path, then the
// heap per stream with streams concurrent streams (0: skip).
func RunOverhead(ctx context.Context, rate int, secs time.Duration, streams int, progress io.Writer) (OverheadResult, error) {
	res := OverheadResult{Rate: rate, Seconds: secs.Seconds(), Streams: streams}
	fake, err := llmfake.New(llmfake.Config{Format: llmfake.FormatAnthropic, Output: llmfake.Output{TokensMean: 20, ChunkTokens: 5},
		Faults: llmfake.Faults{EventDelay: 0}}, llmfake.Options{Seed: 1})
	if err != nil {
		return res, err
	}
	fl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return res, err
	}
	fsrv := llmfake.Serve(fl, fake)
	defer fsrv.Close()
	g, err := gateway.New(ctx, gateway.Config{
		Upstreams: []gateway.Upstream{{Name: "anthropic", URL: fsrv.URL, Provider: llmapi.Anthropic, MaxConcurrency: 4096}},
		Logger:    slog.New(slog.DiscardHandler), MaxQueue: 65536,
	})
	if err != nil {
		return res, err
	}
	gl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return res, err
	}
	gsrv := &http.Server{Handler: g}
	go func() { _ = gsrv.Serve(gl) }()
	defer gsrv.Close()
	fu, err := url.Parse(fsrv.URL)
	if err != nil {
		return res, err
	}
	bare := httputil.NewSingleHostReverseProxy(fu)
	bare.FlushInterval = -1
	bl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return res, err
	}
	bsrv := &http.Server{Handler: bare}
	go func() { _ = bsrv.Serve(bl) }()
	defer bsrv.Close()
	paths := []string{"direct", "proxy", "gateway"}
	targets := map[string]string{"direct": fsrv.URL, "proxy": "http://" + bl.Addr().String(), "gateway": "http://" + gl.Addr().String()}

	tr := &http.Transport{MaxIdleConns: 4096, MaxIdleConnsPerHost: 2048, DisableCompression: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	for _, stream := range []bool{false, true} {
		body := `{"model":"claude-sonnet-4-5","max_tokens":64,"messages":[{"role":"user","content":"Say something short about the weather today."}]}`
		if stream {
			body = strings.Replace(body, `"max_tokens":64,`, `"max_tokens":64,"stream":true,`, 1)
		}
		phases := map[string]*overheadRec{"direct": {}, "proxy": {}, "gateway": {}}
		// Warm every path's connection pool.
		for _, p := range paths {
			openLoop(ctx, client, targets[p], body, rate, 500*time.Millisecond, &overheadRec{})
		}
		for i := 0; i < int(secs/time.Second); i++ {
			for _, p := range paths {
				if err := ctx.Err(); err != nil {
					return res, err
				}
				openLoop(ctx, client, targets[p], body, rate, time.Second, phases[p])
			}
			fmt.Fprintf(progress, "bench overhead: stream=%v %d/%d s\n", stream, i+1, int(secs/time.Second))
		}
		var ph [3]OverheadPhase
		for i, p := range paths {
			ph[i] = phases[p].phase(p, stream)
			res.Phases = append(res.Phases, ph[i])
		}
		d, b, g := ph[0], ph[1], ph[2]
		if stream {
			res.AddedStreamP50, res.AddedStreamP99 = g.P50us-d.P50us, g.P99us-d.P99us
			res.OverProxyStreamP50, res.OverProxyStreamP99 = g.P50us-b.P50us, g.P99us-b.P99us
		} else {
			res.AddedP50us, res.AddedP99us = g.P50us-d.P50us, g.P99us-d.P99us
			res.AddedCPUPerReq = g.CPUPerReq - d.CPUPerReq
			res.OverProxyP50us, res.OverProxyP99us = g.P50us-b.P50us, g.P99us-b.P99us
			res.OverProxyCPUPerReq = g.CPUPerReq - b.CPUPerReq
		}
	}
	if streams > 0 {
		fmt.Fprintf(progress, "bench overhead: %d concurrent streams per path\n", streams)
		slow := llmfake.Config{Format: llmfake.FormatAnthropic, Output: llmfake.Output{TokensMean: 40, ChunkTokens: 4},
			Faults: llmfake.Faults{EventDelay: 200 * time.Millisecond}}
		if err := fake.SetConfig(slow); err != nil {
			return res, err
		}
		body := `{"model":"claude-sonnet-4-5","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"Tell a slow story."}]}`
		direct, errsD := heapWithStreams(ctx, client, targets["direct"], body, streams)
		via, errsG := heapWithStreams(ctx, client, targets["gateway"], body, streams)
		res.StreamErrors = errsD + errsG
		res.HeapPerStreamKB = (float64(via) - float64(direct)) / float64(streams) / 1024
	}
	return res, nil
}

// overheadRec collects one path's latencies and CPU.
type overheadRec struct {
	mu       sync.Mutex
	lat      []time.Duration
	cpu      time.Duration
	errs     int64
	firstErr string
}

func (r *overheadRec) phase(path string, stream bool) OverheadPhase {
	p := OverheadPhase{Path: path, Stream: stream, Requests: int64(len(r.lat)), Errors: r.errs, FirstError: r.firstErr}
	if len(r.lat) == 0 {
		return p
	}
	slices.Sort(r.lat)
	q := func(f float64) float64 { return float64(r.lat[min(len(r.lat)-1, int(f*float64(len(r.lat))))]) / 1e3 }
	p.P50us, p.P99us = q(0.50), q(0.99)
	p.CPUPerReq = float64(r.cpu) / 1e3 / float64(len(r.lat))
	return p
}

// openLoop starts requests at rate per second for d, whatever the answers
// do, and records each one's latency and the process CPU used.
func openLoop(ctx context.Context, c *http.Client, url, body string, rate int, d time.Duration, rec *overheadRec) {
	cpu0 := ProcessCPU()
	interval := time.Second / time.Duration(rate)
	n := int(d / interval)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		if wait := time.Until(start.Add(time.Duration(i) * interval)); wait > 0 {
			time.Sleep(wait)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			t0 := time.Now()
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/messages", strings.NewReader(body))
			req.Header.Set("X-Api-Key", "bench-key")
			req.Header.Set("Anthropic-Version", "2023-06-01")
			req.Header.Set("Content-Type", "application/json")
			resp, err := c.Do(req)
			if err == nil {
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if err == nil && resp.StatusCode != 200 {
					err = fmt.Errorf("status %d", resp.StatusCode)
				}
			}
			lat := time.Since(t0)
			rec.mu.Lock()
			defer rec.mu.Unlock()
			if err != nil {
				rec.errs++
				if rec.firstErr == "" {
					rec.firstErr = err.Error()
				}
				return
			}
			rec.lat = append(rec.lat, lat)
		}()
	}
	wg.Wait()
	rec.mu.Lock()
	rec.cpu += ProcessCPU() - cpu0
	rec.mu.Unlock()
}

// heapWithStreams opens n streams to url and, once every one has received
// its first event, returns the live heap (after a GC) less the heap before.
func heapWithStreams(ctx context.Context, c *http.Client, url, body string, n int) (uint64, int64) {
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	before := ms.HeapAlloc
	var started sync.WaitGroup
	var done sync.WaitGroup
	var errs atomic.Int64
	release := make(chan struct{})
	for range n {
		started.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/messages", strings.NewReader(body))
			req.Header.Set("X-Api-Key", "bench-key")
			req.Header.Set("Anthropic-Version", "2023-06-01")
			resp, err := c.Do(req)
			if err != nil {
				errs.Add(1)
				started.Done()
				return
			}
			defer resp.Body.Close()
			buf := make([]byte, 1)
			if _, err := io.ReadFull(resp.Body, buf); err != nil {
				errs.Add(1)
			}
			started.Done()
			<-release
			if _, err := io.Copy(io.Discard, resp.Body); err != nil {
				errs.Add(1)
			}
		}()
	}
	started.Wait()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	during := ms.HeapAlloc
	close(release)
	done.Wait()
	if during < before {
		return 0, errs.Load()
	}
	return during - before, errs.Load()
}
