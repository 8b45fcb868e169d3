package cli

import (
	"context"
	"flag"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/apiary-dev/apiary/internal/bench"
)

func benchOverheadCommand() *command {
	return &command{
		name:    "overhead",
		summary: "measure the latency, CPU and memory the gateway adds, against the same load direct",
		help: `overhead starts llmfake (no latency, no limits), a gateway in front of it and,
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
		setup: func(fs *flag.FlagSet) runFunc {
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
				res, err := bench.RunOverhead(ctx, *rate, *secs, *streams, e.stderr)
				if err != nil {
					return err
				}
				if *asJSON {
					return writeJSON(e.stdout, res)
				}
				tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "PATH\tSTREAM\tREQUESTS\tERRORS\tP50 µs\tP99 µs\tCPU µs/req")
				for _, p := range res.Phases {
					fmt.Fprintf(tw, "%s\t%v\t%d\t%d\t%.0f\t%.0f\t%.1f\n", p.Path, p.Stream, p.Requests, p.Errors, p.P50us, p.P99us, p.CPUPerReq)
				}
				tw.Flush()
				fmt.Fprintf(e.stdout, "\nadded by the gateway at %d req/s: p50 %.0f µs, p99 %.0f µs (streaming: p50 %.0f µs, p99 %.0f µs), CPU %.1f µs/request\n",
					res.Rate, res.AddedP50us, res.AddedP99us, res.AddedStreamP50, res.AddedStreamP99, res.AddedCPUPerReq)
				fmt.Fprintf(e.stdout, "beyond a bare reverse proxy: p50 %.0f µs, p99 %.0f µs (streaming: p50 %.0f µs, p99 %.0f µs), CPU %.1f µs/request\n",
					res.OverProxyP50us, res.OverProxyP99us, res.OverProxyStreamP50, res.OverProxyStreamP99, res.OverProxyCPUPerReq)
				if res.Streams > 0 {
					fmt.Fprintf(e.stdout, "%d concurrent streams: %d errors, gateway heap %.1f KiB per in-flight stream\n", res.Streams, res.StreamErrors, res.HeapPerStreamKB)
				}
				return nil
			}
		},
	}
}
