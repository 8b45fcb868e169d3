package cli

import (
	"context"
	"flag"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apiary-dev/apiary/internal/bench"
)

func benchGatewayCommand() *command {
	return &command{
		Name:    "gateway",
		Summary: "reproduce HIVEMIND's evaluation: agents on a shared rate limit, direct and through the gateway",
		Help: `gateway runs each scenario of HIVEMIND's evaluation (the table of its paper) twice on a
fresh in-process llmfake: once with the mock agents talking to it directly and
once through an in-process gateway. Mock agents make sequential turns (a
200-character message, max_tokens 1024, output ~ N(150, 50)), use no client-side
retry, have a 120 s read timeout and die on their first unrecovered error.
llmfake counts fixed 60-second windows per API key; all agents share one key.

For each run it reports the agent failure rate, the tokens of agents that died,
wall time, throughput, the upstream's 429/5xx/reset/cut counts, and the
rate-limit lower bound on wall time: the last of the A admitted attempts (every
attempt the upstream charged, including ones that then failed by an injected
fault, which no client can avoid) cannot start before the start of window
ceil(A/RPM), nor can an agent finish its turns faster than turns × the
upstream's mean latency.

--time-scale shrinks every duration (windows, latencies, the read timeout) so
the suite runs quickly; 1 is the evaluation's real time. Variants: stream
(streaming requests), bucket (continuous token buckets with Anthropic's
headers), resets (twice the TCP-reset rate, at least 5%), cuts (streaming, 5% of
streams cut mid-way). --ablate turns exactly one gateway primitive off. The
gateway is told nothing of the limits or their window: it learns both.

--zoo runs the upstream zoo instead: for every seed an independent model of a
rate-limited API (fixed windows from 1 s to 120 s or a continuous bucket;
Anthropic or OpenAI headers; resets truncated, rounded up or to the
millisecond; retry-after in whole seconds, as an HTTP date or in ms; a
concurrency cap answering 529 or 503; 5xx, TCP resets, cut streams), with
sequential mock agents (no retry, --zoo-timeout read timeout) through a gateway
told nothing of it. It reports per seed the deaths, 429s, the longest turn and
the wall time against an oracle's schedule, and the zoo's criteria over the
seeds whose load fits the limit within the timeout: 0 deaths, wall ≤ 1.15×
the bound, every turn shorter than the timeout, 429s ≤ 2 % of requests.`,
		Examples: []string{
			"apiary bench gateway",
			"apiary bench gateway --scenario micro-10,micro-20 --time-scale 0.1",
			"apiary bench gateway --ablate retry --json",
		},
		Setup: func(fs *flag.FlagSet) runFunc {
			names := fs.String("scenario", "all", "comma-separated scenario `NAMES` (micro-5, micro-10, micro-20, micro-50, replay-11, stress, latency-spike) or all")
			variants := fs.String("variant", "base", "comma-separated `VARIANTS`: base, stream, bucket, resets, cuts, or all")
			ablate := fs.String("ablate", "", "also run the gateway with one `PRIMITIVE` off: retry, admission, aimd, ratelimit or breaker")
			scale := fs.Float64("time-scale", 1, "`FACTOR` applied to every duration; 0.1 runs a 60 s window in 6 s")
			noDirect := fs.Bool("no-direct", false, "skip the direct runs")
			seed := fs.Uint64("seed", 1, "llmfake's `SEED`")
			asJSON := fs.Bool("json", false, "print the results as JSON")
			zoo := fs.Int("zoo", 0, "run the upstream zoo on `N` seeds (1..N) instead of the scenarios")
			zooSeeds := fs.String("zoo-seeds", "", "run the zoo on these comma-separated `SEEDS` instead of 1..N")
			zooTimeout := fs.Duration("zoo-timeout", time.Minute, "the zoo agents' read `TIMEOUT`")
			zooParallel := fs.Int("zoo-parallel", 8, "`N` zoo seeds at once")
			zooLead := fs.Float64("zoo-lead", 0, "start each seed's agents `FRACTION` (0 to 1) through a window instead of at the seed's own lead")
			return func(ctx context.Context, e *env, args []string) error {
				if err := noArgs(args); err != nil {
					return err
				}
				if *zoo > 0 || *zooSeeds != "" {
					return runZooCommand(ctx, e, *zoo, *zooSeeds, bench.ZooOptions{Timeout: *zooTimeout, Parallel: *zooParallel, Lead: *zooLead, Direct: !*noDirect}, *asJSON)
				}
				scs, err := selectScenarios(*names)
				if err != nil {
					return err
				}
				vs := strings.Split(*variants, ",")
				if *variants == "all" {
					vs = bench.Variants
				}
				for _, v := range vs {
					if !slices.Contains(bench.Variants, v) {
						return usagef("--variant %q: want %s or all", v, strings.Join(bench.Variants, ", "))
					}
				}
				if *ablate != "" && !slices.Contains(bench.Ablations, *ablate) {
					return usagef("--ablate %q: want %s", *ablate, strings.Join(bench.Ablations, ", "))
				}
				if *scale <= 0 || *scale > 1 {
					return usagef("--time-scale must be in (0, 1]")
				}
				results, err := bench.RunSuite(ctx, bench.Suite{Scenarios: scs, Variants: vs, Ablate: *ablate, NoDirect: *noDirect,
					Scale: *scale, Seed: *seed, Progress: e.Stderr})
				if err != nil {
					return err
				}
				if *asJSON {
					return writeJSON(e.Stdout, results)
				}
				bench.WriteScenarioResults(e.Stdout, results)
				return nil
			}
		},
	}
}

func selectScenarios(names string) ([]bench.Scenario, error) {
	if names == "all" {
		return bench.Scenarios, nil
	}
	var out []bench.Scenario
	for _, n := range strings.Split(names, ",") {
		i := slices.IndexFunc(bench.Scenarios, func(s bench.Scenario) bool { return s.Name == n })
		if i < 0 {
			return nil, usagef("--scenario %q: unknown scenario", n)
		}
		out = append(out, bench.Scenarios[i])
	}
	return out, nil
}

// runZooCommand runs the zoo on seeds 1..n or those listed, as o says
// (its Seeds and Progress are set here).
func runZooCommand(ctx context.Context, e *env, n int, list string, o bench.ZooOptions, asJSON bool) error {
	var seeds []uint64
	if list != "" {
		for _, f := range strings.Split(list, ",") {
			v, err := strconv.ParseUint(strings.TrimSpace(f), 10, 64)
			if err != nil {
				return usagef("--zoo-seeds %q: %v", list, err)
			}
			seeds = append(seeds, v)
		}
	} else {
		for i := 1; i <= n; i++ {
			seeds = append(seeds, uint64(i))
		}
	}
	if o.Timeout <= 0 || o.Parallel < 1 {
		return usagef("--zoo-timeout and --zoo-parallel must be positive")
	}
	if o.Lead < 0 || o.Lead >= 1 {
		return usagef("--zoo-lead %v: want a fraction from 0 to 1", o.Lead)
	}
	o.Seeds, o.Progress = seeds, e.Stderr
	res, err := bench.RunZoo(ctx, o)
	if err != nil {
		return err
	}
	sum := bench.SummarizeZoo(res, o.Timeout)
	if asJSON {
		return writeJSON(e.Stdout, bench.ZooReport{Runs: res, Summary: sum})
	}
	bench.WriteZoo(e.Stdout, res, sum)
	return nil
}
