package cli

import (
	"context"
	"flag"
	"time"

	"github.com/apiary-dev/apiary/internal/bench"
)

func benchOverheadCommand() *command {
	return &command{
		Name:    "overhead",
		Summary: "measure the latency, CPU and memory the gateway adds, against the same load direct",
		Help: `overhead starts llmfake (no latency, no limits), a gateway in front of it and,
as the floor any proxy hop costs, a bare httputil.ReverseProxy in front of it,
in-process on loopback, and sends the same open-loop load (requests started at a
fixed rate whatever the answers do) to the three, alternating one-second blocks
so all paths see the same machine. It reports each path's latency percentiles and
CPU per request, and the difference: the gateway's added latency (p50, p99) and
CPU, non-streaming and streaming, over direct and over the bare proxy. Then it holds --streams concurrent streams open
through each path and reports the gateway's extra heap per in-flight stream.

Latency is measured from sending a request to reading its whole body. CPU is the
process's user+system time per request, servers and load generator together,
so the difference between the paths is the gateway's own cost.`,
		Examples: []string{
			"apiary bench overhead --duration 5s --rate 500",
			"apiary bench overhead --streams 0 --json",
		},
		Setup: func(fs *flag.FlagSet) runFunc {
			rate := fs.Int("rate", 1000, "requests per `SECOND` on each path")
			secs := fs.Duration("duration", 10*time.Second, "`TIME` per path and mode")
			streams := fs.Int("streams", 1000, "`N` concurrent streams for the memory measurement (0: skip)")
			asJSON := fs.Bool("json", false, "print JSON")
			return func(ctx context.Context, e *env, args []string) error {
				if err := noArgs(args); err != nil {
					return err
				}
				if *rate < 1 || *secs < time.Second {
					return usagef("--rate must be ≥ 1 and --duration ≥ 1s")
				}
				res, err := bench.RunOverhead(ctx, *rate, *secs, *streams, e.Stderr)
				if err != nil {
					return err
				}
				if *asJSON {
					return writeJSON(e.Stdout, res)
				}
				bench.WriteOverhead(e.Stdout, res)
				return nil
			}
		},
	}
}
