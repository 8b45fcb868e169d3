package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
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
				return printTail(e.stdout, r)
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

// describeLatency renders a latency model in a few words.
func describeLatency(l sim.Latency) string {
	s := fmt.Sprintf("median %s, p90 %s", secs4(l.MedianS), secs4(l.P90S))
	if l.StragglerProb > 0 {
		s += fmt.Sprintf(", %s straggle %gx", pct(l.StragglerProb), l.StragglerFactor)
	}
	return s
}

// describePolicy renders a policy in a few words.
func describePolicy(p sim.TailPolicy) string {
	if p.Kind == sim.PolicyKOfN {
		return fmt.Sprintf("%d of %d attempts", p.K, p.N)
	}
	s := "hedge after " + secs4(p.AfterS)
	if p.AfterQuantile > 0 {
		s += fmt.Sprintf(" (the %g-quantile of one attempt)", p.AfterQuantile)
	}
	if p.Hedge != nil {
		s += "; the hedge: " + describeLatency(*p.Hedge)
	}
	return s
}

// secs4 renders seconds to 4 significant figures, trailing zeros kept.
func secs4(s float64) string { return sig4(s) + " s" }

func sig4(x float64) string {
	if x == 0 || math.IsInf(x, 0) || math.IsNaN(x) {
		return strconv.FormatFloat(x, 'g', 4, 64)
	}
	digits := 3 - int(math.Floor(math.Log10(math.Abs(x))))
	switch {
	case digits > 12:
		return strconv.FormatFloat(x, 'g', 4, 64)
	case digits < 0:
		return strconv.FormatFloat(x, 'f', 0, 64) // whole seconds: more figures, never an exponent
	}
	return strconv.FormatFloat(x, 'f', digits, 64)
}

// percentile renders a percentile, with its confidence interval if any.
func percentile(pc sim.Percentile) string {
	if pc.S == nil {
		return "never"
	}
	s := secs4(*pc.S)
	if pc.Low95 != nil && pc.High95 != nil {
		s += fmt.Sprintf(" [%s, %s]", sig4(*pc.Low95), sig4(*pc.High95))
	}
	return s
}

func printTail(w io.Writer, r *sim.TailReport) error {
	fmt.Fprintf(w, "one attempt: %s", describeLatency(r.Latency))
	if r.FailRate > 0 {
		fmt.Fprintf(w, "; fails its gates with p %g", r.FailRate)
	}
	if r.Rho > 0 {
		fmt.Fprintf(w, "; attempts share rho %g of log-variance", r.Rho)
	}
	fmt.Fprintf(w, "\npolicy: %s\nmethod: %s", describePolicy(r.Policy), strings.ReplaceAll(r.Method, "_", " "))
	if r.Seed != nil {
		fmt.Fprintf(w, " (%d trials, seed %d; 95%% intervals)", r.Trials, *r.Seed)
	}
	fmt.Fprintln(w)
	rows := [][3]string{{"", "one attempt", strings.ReplaceAll(r.Policy.Kind, "_", " ")}}
	for i, pc := range r.WithPolicy.Percentiles {
		rows = append(rows, [3]string{"p" + strconv.FormatFloat(pc.Q*100, 'f', -1, 64), percentile(r.Single.Percentiles[i]), percentile(pc)})
	}
	rows = append(rows,
		[3]string{"P(result)", pct(r.Single.PResult), pct(r.WithPolicy.PResult)},
		[3]string{"mean", secs4(r.Single.MeanS), secs4(r.WithPolicy.MeanS)},
		[3]string{"attempt-seconds", secs4(r.Single.AttemptS), secs4(r.WithPolicy.AttemptS)})
	var width [3]int
	for _, row := range rows {
		for c, cell := range row {
			width[c] = max(width[c], len(cell))
		}
	}
	for _, row := range rows {
		fmt.Fprintf(w, "%-*s  %*s  %*s\n", width[0], row[0], width[1], row[1], width[2], row[2])
	}
	fmt.Fprintf(w, "attempt-seconds under the policy: %+.1f%% of one attempt's\n", 100*(r.WithPolicy.AttemptS/r.Single.AttemptS-1))
	if r.HedgeRate != nil {
		fmt.Fprintf(w, "the hedge starts for %s of tasks\n", pct(*r.HedgeRate))
	}
	return nil
}
