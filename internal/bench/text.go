package bench

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// WriteScenarioResults prints a table of the gateway scenarios' results.
func WriteScenarioResults(w io.Writer, rs []ScenarioResult) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SCENARIO\tVARIANT\tMODE\tFAILED\tWASTED TOK\tWALL s\tREQ/s\t429\t5XX\tRESETS\tCUTS\tBOUND s\tWALL/BOUND")
	for _, r := range rs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d/%d (%.0f%%)\t%d\t%.1f\t%.2f\t%d\t%d\t%d\t%d\t%.1f\t%.3f\n", r.Scenario, r.Variant, r.Mode,
			r.FailedAgents, r.Agents, 100*r.FailureRate, r.WastedTokens, r.WallS, r.Throughput, r.Upstream429, r.Upstream5xx, r.Resets, r.Cuts, r.LowerBoundS, r.Ratio)
	}
	tw.Flush()
}

// WriteZoo prints a table of the zoo's runs and their summary.
func WriteZoo(w io.Writer, rs []ZooResult, s ZooSummary) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SEED\tMODE\tUPSTREAM\tAGENTS\tSTREAM\tFITS\tDEAD\tOK\t429\t5XX\tRESETS\tCAP\tMAX TURN s\tWALL s\tBOUND s\tWALL/BOUND")
	for _, r := range rs {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d×%d\t%v\t%v\t%d\t%d\t%d\t%d\t%d\t%d\t%.1f\t%.1f\t%.1f\t%.3f\n", r.Model.Seed, r.Mode, r.Model, r.Agents, r.Turns, r.Stream, r.Fits,
			r.Dead, r.Requests, r.Upstream.RateLimited, r.Upstream.Errors5xx, r.Upstream.Resets, r.Upstream.CapRefused, r.MaxTurnS, r.WallS, r.BoundS, r.Ratio)
	}
	tw.Flush()
	fmt.Fprintf(w, "\ngateway, %d seeds (%d whose load fits the limit within the timeout):\n", s.Seeds, s.Fitting)
	fmt.Fprintf(w, "  deaths where it fits: %d agents of %d (%d seeds)\n", s.DeadFitting, s.AgentsFitting, s.SeedsWithDeaths)
	fmt.Fprintf(w, "  wall/bound where it fits: median ×%.3f, p90 ×%.3f, max ×%.3f; %d seeds above ×1.15\n", s.RatioMedian, s.RatioP90, s.RatioMax, s.Above115)
	fmt.Fprintf(w, "  longest turn where it fits: %.1f s (timeout %.0f s)\n", s.MaxTurnS, s.TimeoutS)
	fmt.Fprintf(w, "  upstream 429s: %d for %d requests (%.2f%%)\n", s.RateLimited, s.Requests, 100*s.RateLimitedShare)
	fmt.Fprintf(w, "  deaths where it does not fit: %d agents of %d\n", s.DeadNotFitting, s.AgentsNotFitting)
}

// WriteOverhead prints a table of the overhead benchmark's phases, then
// what the gateway adds over direct requests and over a bare reverse
// proxy, and its heap per in-flight stream.
func WriteOverhead(w io.Writer, res OverheadResult) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PATH\tSTREAM\tREQUESTS\tERRORS\tP50 µs\tP99 µs\tCPU µs/req")
	for _, p := range res.Phases {
		fmt.Fprintf(tw, "%s\t%v\t%d\t%d\t%.0f\t%.0f\t%.1f\n", p.Path, p.Stream, p.Requests, p.Errors, p.P50us, p.P99us, p.CPUPerReq)
	}
	tw.Flush()
	fmt.Fprintf(w, "\nadded by the gateway at %d req/s: p50 %.0f µs, p99 %.0f µs (streaming: p50 %.0f µs, p99 %.0f µs), CPU %.1f µs/request\n",
		res.Rate, res.AddedP50us, res.AddedP99us, res.AddedStreamP50, res.AddedStreamP99, res.AddedCPUPerReq)
	fmt.Fprintf(w, "beyond a bare reverse proxy: p50 %.0f µs, p99 %.0f µs (streaming: p50 %.0f µs, p99 %.0f µs), CPU %.1f µs/request\n",
		res.OverProxyP50us, res.OverProxyP99us, res.OverProxyStreamP50, res.OverProxyStreamP99, res.OverProxyCPUPerReq)
	if res.Streams > 0 {
		fmt.Fprintf(w, "%d concurrent streams: %d errors, gateway heap %.1f KiB per in-flight stream\n", res.Streams, res.StreamErrors, res.HeapPerStreamKB)
	}
}
