package cli

import (
	"context"
	"flag"
	"os"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/apiary-dev/apiary/internal/bench"
)

// benchCommand groups the benchmarks; each is a subcommand (add new ones to
// subs).
func benchCommand() *command {
	return &command{
		Name:    "bench",
		Summary: "run apiary's benchmarks",
		Help: `bench runs apiary's long benchmarks on loopback and prints their numbers;
docs/benchmarks.md records them with the commands that produced them.`,
		Examples: []string{
			"apiary bench gateway --scenario micro-10",
			"apiary bench overhead --duration 5s",
		},
		Subs: []*command{
			benchLLMFakeCommand(),
			benchGatewayCommand(),
			benchSwarmCommand(),
			benchOverheadCommand(),
		},
	}
}

func benchLLMFakeCommand() *command {
	return &command{
		Name:    "llmfake",
		Summary: "measure llmfake's throughput on loopback",
		Help: `llmfake starts llmfake in-process on 127.0.0.1 and drives it with an in-process
closed-loop HTTP load generator (keep-alive connections, one request at a time
per worker): first small non-streaming Anthropic requests, then streaming ones.
It prints a progress line every second on stderr and, per phase, requests/s,
p50/p99 latency (from sending a request to reading its whole body) and
requests per CPU-second of the whole process (server and load generator), which
stays meaningful when other processes share the cores.`,
		Examples: []string{
			"apiary bench llmfake --duration 2s --concurrency 32",
			"apiary bench llmfake --phases stream --json",
		},
		Setup: func(fs *flag.FlagSet) runFunc {
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
				for _, phase := range strings.Split(*phases, ",") {
					if p := strings.TrimSpace(phase); p != "small" && p != "stream" {
						return usagef("unknown phase %q (want small or stream)", phase)
					}
				}
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
				results, err := bench.RunLLMFake(ctx, bench.LLMFakeOptions{Phases: strings.Split(*phases, ","), Concurrency: *conc,
					Duration: *dur, OutputTokens: *outTokens, Progress: e.Stderr})
				if err != nil {
					return err
				}
				if *asJSON {
					return writeJSON(e.Stdout, results)
				}
				bench.WriteLLMFake(e.Stdout, results)
				return nil
			}
		},
	}
}
