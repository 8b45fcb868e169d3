package runs

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// Pending are the requests of reqs that wait for a decision, in order.
func Pending(reqs []EscrowRequest) []EscrowRequest {
	out := reqs[:0:0]
	for _, r := range reqs {
		if r.State == EscrowPending {
			out = append(out, r)
		}
	}
	return out
}

// WriteEscrowTable prints reqs as a table, one request a line.
func WriteEscrowTable(w io.Writer, reqs []EscrowRequest) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATE\tRUN\tTASK\tOPERATION")
	for _, r := range reqs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s: %s\n", r.ID, r.State, r.Run, r.Task, r.Kind, r.Operation)
	}
	return tw.Flush()
}
