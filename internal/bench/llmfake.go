package bench

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/apiary-dev/apiary/internal/llmfake"
)

// LLMFakeOptions configure RunLLMFake.
type LLMFakeOptions struct {
	// Phases run in order: "small" (non-streaming requests) or "stream".
	Phases       []string
	Concurrency  int           // concurrent workers (and connections)
	Duration     time.Duration // of each phase
	OutputTokens float64       // mean output tokens per reply
	// Progress, if set, gets a line per phase every second.
	Progress io.Writer
}

// LLMFakeResult is one phase of RunLLMFake.
type LLMFakeResult struct {
	Phase  string `json:"phase"`
	Stream bool   `json:"stream"`
	llmfake.LoadResult
	// CPU is the process's user+system CPU time during the phase (server
	// and load generator together); ReqPerCPUSec is requests per second of
	// it, a throughput figure that holds even when other processes share
	// the cores.
	CPU          time.Duration `json:"cpu_ns"`
	ReqPerCPUSec float64       `json:"req_per_cpu_s"`
}

// RunLLMFake measures llmfake's throughput on loopback: it starts llmfake
// in-process and drives each phase with a closed-loop load generator
// (keep-alive connections, one request at a time per worker). An
// interrupted context ends it after the phase under way.
func RunLLMFake(ctx context.Context, o LLMFakeOptions) ([]LLMFakeResult, error) {
	for _, phase := range o.Phases {
		if p := strings.TrimSpace(phase); p != "small" && p != "stream" {
			return nil, fmt.Errorf("unknown phase %q (want small or stream)", phase)
		}
	}
	srv, err := llmfake.New(llmfake.Config{Output: llmfake.Output{TokensMean: o.OutputTokens}}, llmfake.Options{Seed: 1})
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	hs := llmfake.Serve(l, srv)
	defer hs.Close()
	progress := o.Progress
	if progress == nil {
		progress = io.Discard
	}
	var results []LLMFakeResult
	for _, phase := range o.Phases {
		stream := strings.TrimSpace(phase) == "stream"
		body := fmt.Sprintf(`{"model":"claude-sonnet-4-5","max_tokens":1024,"stream":%t,"messages":[{"role":"user","content":"Say hello to the benchmark."}]}`, stream)
		load := &llmfake.Load{
			URL: hs.URL + "/v1/messages", Body: []byte(body), Concurrency: o.Concurrency, Duration: o.Duration,
			Header: http.Header{"X-Api-Key": {"bench"}, "Anthropic-Version": {"2023-06-01"}},
			Progress: func(p llmfake.LoadProgress) {
				fmt.Fprintf(progress, "%s: %4.1fs %8d requests %8.0f req/s %d errors\n", phase, p.Elapsed.Seconds(),
					p.Requests, float64(p.Requests)/p.Elapsed.Seconds(), p.Errors)
			},
		}
		cpu0 := ProcessCPU()
		res, err := load.Run(ctx)
		if err != nil {
			return nil, err
		}
		r := LLMFakeResult{Phase: phase, Stream: stream, LoadResult: res, CPU: ProcessCPU() - cpu0}
		if r.CPU > 0 {
			r.ReqPerCPUSec = float64(res.Requests) / r.CPU.Seconds()
		}
		results = append(results, r)
		if ctx.Err() != nil {
			break
		}
	}
	return results, nil
}

// WriteLLMFake prints a table of RunLLMFake's phases.
func WriteLLMFake(w io.Writer, results []LLMFakeResult) {
	fmt.Fprintf(w, "%-8s %10s %10s %10s %10s %12s %8s\n", "phase", "requests", "req/s", "p50", "p99", "req/cpu-s", "errors")
	for _, r := range results {
		fmt.Fprintf(w, "%-8s %10d %10.0f %10s %10s %12.0f %8d\n", r.Phase, r.Requests, r.RPS,
			r.P50.Round(time.Microsecond), r.P99.Round(time.Microsecond), r.ReqPerCPUSec, r.Errors)
		if r.FirstError != "" {
			fmt.Fprintf(w, "  first error: %s\n", r.FirstError)
		}
	}
}
