package cli

import (
	"context"
	"flag"

	"github.com/apiary-dev/apiary/internal/sim"
)

func simHedgeCommand() *command {
	return &command{
		Name:    "hedge",
		Summary: "tail latency of a task under k-of-N attempts or a hedge after a quantile",
		Help: `One attempt of a task takes a lognormal time (--median-s, --p90-s); with
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
		Examples: []string{
			"apiary sim hedge --median-s 60 --p90-s 180 --hedge-at 0.9",
			"apiary sim hedge --n 3 --k 1 --median-s 60 --p90-s 180",
		},
		Setup: func(fs *flag.FlagSet) runFunc {
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
				spec := sim.TailSpec{N: *n, K: *k, HedgeAt: *hedgeAt, HedgeAfterS: *hedgeAfter, Hedge: hedgeLat, Method: *method, Percentiles: *pcts,
					Set: sim.TailSpecSet{N: set["n"], K: set["k"], HedgeAt: set["hedge-at"], HedgeAfterS: set["hedge-after-s"],
						HedgeMedianS: set["hedge-median-s"], HedgeP90S: set["hedge-p90-s"]}}
				if err := spec.Apply(&p); err != nil {
					return simErr(err)
				}
				r, err := sim.Tail(p)
				if err != nil {
					return simErr(err)
				}
				if *asJSON {
					return writeJSON(e.Stdout, r)
				}
				return r.WriteText(e.Stdout)
			}
		},
	}
}
