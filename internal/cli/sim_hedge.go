package cli

import (
	"context"
	"flag"
	"math"
	"strconv"
	"strings"

	"github.com/apiary-dev/apiary/internal/sim"
)

func simHedgeCommand() *command {
	return &command{
		name:    "hedge",
		summary: "tail latency of a task under k-of-N attempts or a hedge after a quantile",
		help: `One attempt of a task takes a lognormal time (--median-s, --p90-s); with
--straggler-prob an attempt straggles and takes --straggler-factor times as
long. Prints the percentiles of the time to the task's result with one
attempt and under a policy, the probability of a result, the mean, and the
attempt-seconds spent (every attempt's running time until it ends or is
cancelled):

  k of n   --n N --k K: N attempts start together and the task continues
           once K passed (K = N waits for all, K = 1 takes the fastest)
  hedge    --hedge-at Q (the Q-quantile of one attempt, e.g. 0.95) or
           --hedge-after-s S: if the attempt is still running then, a second
           starts (with --hedge-median-s and --hedge-p90-s, of another
           profile); the first to pass is kept

--fail-rate is the probability that an attempt fails its gates (a result
then needs another to pass; a hedge starts only while the first attempt
runs). With independent attempts the answer is exact (closed-form CDFs,
numerical integration); --rho, the share of the variance of log duration
that a task's attempts have in common (a hard task is slow for every agent),
has no closed form and is estimated by Monte Carlo with --trials and --seed,
with 95% confidence intervals. --method monte-carlo simulates in any case.`,
		setup: func(fs *flag.FlagSet) runFunc {
			var lat, hedgeLat sim.Latency
			fs.Float64Var(&lat.MedianS, "median-s", 0, "median of one attempt's duration in `seconds`")
			fs.Float64Var(&lat.P90S, "p90-s", 0, "90th percentile of one attempt's duration in `seconds`")
			fs.Float64Var(&lat.StragglerProb, "straggler-prob", 0, "probability that an attempt straggles")
			fs.Float64Var(&lat.StragglerFactor, "straggler-factor", 5, "a straggler takes this many `times` as long")
			n := fs.Int("n", 0, "k of n: attempts started together")
			k := fs.Int("k", 0, "k of n: attempts that must pass")
			hedgeAt := fs.Float64("hedge-at", 0, "hedge at this `quantile` of one attempt's duration, in (0, 1)")
			hedgeAfter := fs.Float64("hedge-after-s", 0, "hedge after this many `seconds`")
			fs.Float64Var(&hedgeLat.MedianS, "hedge-median-s", 0, "median of the hedged attempt's duration in `seconds` (default: as the first)")
			fs.Float64Var(&hedgeLat.P90S, "hedge-p90-s", 0, "90th percentile of the hedged attempt's duration in `seconds`")
			failRate := fs.Float64("fail-rate", 0, "probability that an attempt fails its gates")
			rho := fs.Float64("rho", 0, "share of log-duration variance common to a task's attempts, in [0, 1]")
			method := fs.String("method", "auto", "`METHOD`: auto (exact unless --rho), exact or monte-carlo")
			trials := fs.Int("trials", 200_000, "Monte Carlo trials")
			seed := fs.Uint64("seed", 1, "Monte Carlo random seed")
			pcts := fs.String("percentiles", "50,90,95,99,99.9", "percentiles to print, comma-separated, each in (0, 100)")
			asJSON := fs.Bool("json", false, "print a JSON object")
			return func(ctx context.Context, e *env, args []string) error {
				if err := noArgs(args); err != nil {
					return err
				}
				if err := required(fs, "median-s", "p90-s"); err != nil {
					return err
				}
				set := map[string]bool{}
				fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
				if lat.StragglerProb == 0 {
					lat.StragglerFactor = 0
				}
				p := sim.TailParams{Latency: lat, FailRate: *failRate, Rho: *rho, Trials: *trials, Seed: *seed}
				kOfN, hedge := set["n"] || set["k"], set["hedge-at"] || set["hedge-after-s"]
				switch {
				case kOfN && hedge:
					return usagef("give --n and --k, or --hedge-at or --hedge-after-s, not both")
				case kOfN:
					if err := required(fs, "n", "k"); err != nil {
						return err
					}
					p.Policy = sim.TailPolicy{Kind: sim.PolicyKOfN, N: *n, K: *k}
				case hedge:
					if set["hedge-at"] && set["hedge-after-s"] {
						return usagef("give --hedge-at or --hedge-after-s, not both")
					}
					p.Policy = sim.TailPolicy{Kind: sim.PolicyHedge, AfterQuantile: *hedgeAt, AfterS: *hedgeAfter}
					if set["hedge-at"] && *hedgeAt == 0 {
						return usagef("--hedge-at must be in (0, 1), got 0")
					}
					if set["hedge-median-s"] != set["hedge-p90-s"] {
						return usagef("give --hedge-median-s and --hedge-p90-s together")
					}
					if set["hedge-median-s"] {
						h := hedgeLat
						p.Policy.Hedge = &h
					}
				default:
					return usagef("want a policy: --n and --k, or --hedge-at or --hedge-after-s")
				}
				if !hedge && (set["hedge-median-s"] || set["hedge-p90-s"]) {
					return usagef("--hedge-median-s and --hedge-p90-s need a hedge")
				}
				switch *method {
				case "auto":
				case "exact":
					p.Method = sim.MethodExact
				case "monte-carlo":
					p.Method = sim.MethodMonteCarlo
				default:
					return usagef("--method must be auto, exact or monte-carlo, got %q", *method)
				}
				qs, err := parsePercentiles(*pcts)
				if err != nil {
					return err
				}
				p.Quantiles = qs
				r, err := sim.Tail(p)
				if err != nil {
					return simErr(err)
				}
				if *asJSON {
					return writeJSON(e.stdout, r)
				}
				return r.WriteText(e.stdout)
			}
		},
	}
}

// parsePercentiles reads "50,90,99.9" as quantiles 0.5, 0.9, 0.999.
func parsePercentiles(s string) ([]float64, error) {
	var qs []float64
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || !(v > 0 && v < 100) {
			return nil, usagef("--percentiles must be a comma-separated list of numbers in (0, 100), got %q", s)
		}
		// Rounded, so that 99.9 is 0.999 and not 0.9990000000000001.
		qs = append(qs, math.Round(v*1e10)/1e12)
	}
	return qs, nil
}
