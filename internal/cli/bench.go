package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/apiary-dev/apiary/internal/bench"
	"github.com/apiary-dev/apiary/internal/llmfake"
)

// benchCommand groups the benchmarks; each is a subcommand (add new ones to
// subs).
func benchCommand() *command {
	return &command{
		name:    "bench",
		summary: "run apiary's benchmarks",
		help: `bench runs apiary's long benchmarks on loopback and prints their numbers;
docs/benchmarks.md records them with the commands that produced them.`,
		subs: []*command{
			benchLLMFakeCommand(),
			benchGatewayCommand(),
			benchSwarmCommand(),
			benchOverheadCommand(),
		},
	}
}

// benchLLMFakeResult is one phase of `apiary bench llmfake`.
type benchLLMFakeResult struct {
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

func benchLLMFakeCommand() *command {
	return &command{
		name:    "llmfake",
		summary: "measure llmfake's throughput on loopback",
		help: `llmfake starts llmfake in-process on 127.0.0.1 and drives it with an in-process
closed-loop HTTP load generator (keep-alive connections, one request at a time
per worker): first small non-streaming Anthropic requests, then streaming ones.
It prints a progress line every second on stderr and, per phase, requests/s,
p50/p99 latency (from sending a request to reading its whole body) and
requests per CPU-second of the whole process (server and load generator), which
stays meaningful when other processes share the cores.`,
		setup: func(fs *flag.FlagSet) runFunc {
			dur := fs.Duration("duration", 5*time.Second, "how long (`DURATION`) each phase runs")
			conc := fs.Int("concurrency", 64, "`N` concurrent workers (and connections)")
			asJSON := fs.Bool("json", false, "print the results as JSON")
			phases := fs.String("phases", "small,stream", "comma-separated `PHASES` to run: small (non-streaming), stream")
			outTokens := fs.Float64("output-tokens", 20, "`N` output tokens per reply")
			cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole run (server and load generator) to `FILE`")
			return func(ctx context.Context, e *env, args []string) error {
				if err := noArgs(args); err != nil {
					return err
				}
				if *conc < 1 || *dur <= 0 {
					return usagef("--concurrency and --duration must be positive")
				}
				srv, err := llmfake.New(llmfake.Config{Output: llmfake.Output{TokensMean: *outTokens}}, llmfake.Options{Seed: 1})
				if err != nil {
					return err
				}
				l, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					return err
				}
				hs := llmfake.Serve(l, srv)
				defer hs.Close()
				if *cpuProfile != "" {
					f, err := os.Create(*cpuProfile)
					if err != nil {
						return err
					}
					defer f.Close()
					if err := pprof.StartCPUProfile(f); err != nil {
						return err
					}
					defer pprof.StopCPUProfile()
				}
				var results []benchLLMFakeResult
				for _, phase := range strings.Split(*phases, ",") {
					stream := false
					switch strings.TrimSpace(phase) {
					case "small":
					case "stream":
						stream = true
					default:
						return usagef("unknown phase %q (want small or stream)", phase)
					}
					body := fmt.Sprintf(`{"model":"claude-sonnet-4-5","max_tokens":1024,"stream":%t,"messages":[{"role":"user","content":"Say hello to the benchmark."}]}`, stream)
					load := &llmfake.Load{
						URL: hs.URL + "/v1/messages", Body: []byte(body), Concurrency: *conc, Duration: *dur,
						Header: http.Header{"X-Api-Key": {"bench"}, "Anthropic-Version": {"2023-06-01"}},
						Progress: func(p llmfake.LoadProgress) {
							fmt.Fprintf(e.stderr, "%s: %4.1fs %8d requests %8.0f req/s %d errors\n", phase, p.Elapsed.Seconds(),
								p.Requests, float64(p.Requests)/p.Elapsed.Seconds(), p.Errors)
						},
					}
					cpu0 := bench.ProcessCPU()
					res, err := load.Run(ctx)
					if err != nil {
						return err
					}
					r := benchLLMFakeResult{Phase: phase, Stream: stream, LoadResult: res, CPU: bench.ProcessCPU() - cpu0}
					if r.CPU > 0 {
						r.ReqPerCPUSec = float64(res.Requests) / r.CPU.Seconds()
					}
					results = append(results, r)
					if ctx.Err() != nil {
						break
					}
				}
				if *asJSON {
					enc := json.NewEncoder(e.stdout)
					enc.SetIndent("", "  ")
					return enc.Encode(results)
				}
				fmt.Fprintf(e.stdout, "%-8s %10s %10s %10s %10s %12s %8s\n", "phase", "requests", "req/s", "p50", "p99", "req/cpu-s", "errors")
				for _, r := range results {
					fmt.Fprintf(e.stdout, "%-8s %10d %10.0f %10s %10s %12.0f %8d\n", r.Phase, r.Requests, r.RPS,
						r.P50.Round(time.Microsecond), r.P99.Round(time.Microsecond), r.ReqPerCPUSec, r.Errors)
					if r.FirstError != "" {
						fmt.Fprintf(e.stdout, "  first error: %s\n", r.FirstError)
					}
				}
				return nil
			}
		},
	}
}
