package sim

import (
	"fmt"
	"io"
	"strings"
)

// WriteText prints the voting answer for a person: how often a majority
// and all voters are wrong, independent and correlated.
func (r VoteReport) WriteText(w io.Writer) error {
	_, err := fmt.Fprintf(w, "%d voters, each wrong with p %g, pairwise correlation rho %g\n"+
		"                independent  correlated\n"+
		"majority wrong  %11s  %10s\n"+
		"all wrong       %11s  %10s\n",
		r.M, r.P, r.Rho, Pct(r.MajorityFailIndep), Pct(r.MajorityFailCorr), Pct(r.UnanimousFailIndep), Pct(r.UnanimousFailCorr))
	return err
}

// WriteText prints the collision answer for a person: the exact
// probability and its closed form (uniform), or the Monte Carlo estimate
// with its standard error (Zipf).
func (r CollisionReport) WriteText(w io.Writer) error {
	var b strings.Builder
	if r.Zipf != nil {
		fmt.Fprintf(&b, "%d workers x %d files each, %d files, zipf s %g\n", r.N, r.W, r.Files, *r.Zipf)
		fmt.Fprintf(&b, "P(no shared file) ~ %.4f +- %.4f (Monte Carlo, %d trials, seed %d)\n", r.PNoCollision, *r.StdErr, r.Trials, *r.Seed)
	} else {
		fmt.Fprintf(&b, "%d workers x %d files each, %d files, uniform\n", r.N, r.W, r.Files)
		fmt.Fprintf(&b, "P(no shared file) = %.4g (exact)\n", r.PNoCollision)
		fmt.Fprintf(&b, "closed form exp(-N(N-1)W^2/(2 FILES)) = %.4g (approximation)\n", *r.PApprox)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
