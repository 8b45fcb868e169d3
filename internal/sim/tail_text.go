package sim

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// String renders a latency model in a few words.
func (l Latency) String() string {
	s := fmt.Sprintf("median %s, p90 %s", Secs4(l.MedianS), Secs4(l.P90S))
	if l.StragglerProb > 0 {
		s += fmt.Sprintf(", %s straggle %gx", Pct(l.StragglerProb), l.StragglerFactor)
	}
	return s
}

// String renders a policy in a few words.
func (p TailPolicy) String() string {
	if p.Kind == PolicyKOfN {
		return fmt.Sprintf("%d of %d attempts", p.K, p.N)
	}
	s := "hedge after " + Secs4(p.AfterS)
	if p.AfterQuantile > 0 {
		s += fmt.Sprintf(" (the %g-quantile of one attempt)", p.AfterQuantile)
	}
	if p.Hedge != nil {
		s += "; the hedge: " + p.Hedge.String()
	}
	return s
}

// Secs4 renders seconds to 4 significant figures, trailing zeros kept.
func Secs4(s float64) string { return Sig4(s) + " s" }

// Sig4 renders x to 4 significant figures, never with an exponent for
// large values.
func Sig4(x float64) string {
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

// String renders a percentile, with its confidence interval if any.
func (pc Percentile) String() string {
	if pc.S == nil {
		return "never"
	}
	s := Secs4(*pc.S)
	if pc.Low95 != nil && pc.High95 != nil {
		s += fmt.Sprintf(" [%s, %s]", Sig4(*pc.Low95), Sig4(*pc.High95))
	}
	return s
}

// WriteText prints the report for people: the model, the policy, the
// percentiles with and without it, the cost.
func (r *TailReport) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "one attempt: %s", r.Latency.String())
	if r.FailRate > 0 {
		fmt.Fprintf(w, "; fails its gates with p %g", r.FailRate)
	}
	if r.Rho > 0 {
		fmt.Fprintf(w, "; attempts share rho %g of log-variance", r.Rho)
	}
	fmt.Fprintf(w, "\npolicy: %s\nmethod: %s", r.Policy.String(), strings.ReplaceAll(r.Method, "_", " "))
	if r.Seed != nil {
		fmt.Fprintf(w, " (%d trials, seed %d; 95%% intervals)", r.Trials, *r.Seed)
	}
	fmt.Fprintln(w)
	rows := [][3]string{{"", "one attempt", strings.ReplaceAll(r.Policy.Kind, "_", " ")}}
	for i, pc := range r.WithPolicy.Percentiles {
		rows = append(rows, [3]string{"p" + strconv.FormatFloat(pc.Q*100, 'f', -1, 64), r.Single.Percentiles[i].String(), pc.String()})
	}
	rows = append(rows,
		[3]string{"P(result)", Pct(r.Single.PResult), Pct(r.WithPolicy.PResult)},
		[3]string{"mean", Secs4(r.Single.MeanS), Secs4(r.WithPolicy.MeanS)},
		[3]string{"attempt-seconds", Secs4(r.Single.AttemptS), Secs4(r.WithPolicy.AttemptS)})
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
		fmt.Fprintf(w, "the hedge starts for %s of tasks\n", Pct(*r.HedgeRate))
	}
	return nil
}

// Pct renders a probability as a percentage to 3 significant figures.
func Pct(p float64) string { return fmt.Sprintf("%.3g%%", 100*p) }
