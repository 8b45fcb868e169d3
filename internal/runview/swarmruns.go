package runview

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/apiary-dev/apiary/internal/board"
	"github.com/apiary-dev/apiary/internal/swarm"
)

// SwarmRuns reads the swarm runs on a repository's local board, for
// apiary status.
type SwarmRuns struct {
	// DSN is the board's.
	DSN string
	st  *board.Store
}

// SwarmRun is one swarm run: its record's creation time and its report.
type SwarmRun struct {
	Created time.Time
	Report  *swarm.Report
}

// OpenSwarmRuns opens the local board of the repository at root for
// reading; nil, nil without one (nothing is created: a reader only looks).
func OpenSwarmRuns(ctx context.Context, root string) (*SwarmRuns, error) {
	dsn := DefaultBoardDSN(root)
	if dsn == "" {
		return nil, nil
	}
	st, err := OpenBoard(ctx, dsn)
	if err != nil {
		return nil, err
	}
	return &SwarmRuns{DSN: dsn, st: st}, nil
}

// Close closes the board.
func (s *SwarmRuns) Close() error { return s.st.Close() }

// List reads every swarm run on the board, oldest first.
func (s *SwarmRuns) List(ctx context.Context) ([]SwarmRun, error) {
	recs, err := swarm.ListRecords(ctx, s.st)
	if err != nil {
		return nil, err
	}
	out := make([]SwarmRun, 0, len(recs))
	for _, r := range recs {
		rep, err := swarm.LoadReport(ctx, s.st, r.Run)
		if err != nil {
			return nil, fmt.Errorf("swarm run %s: %w", r.Run, err)
		}
		out = append(out, SwarmRun{Created: r.Created, Report: rep})
	}
	return out, nil
}

// Report reads one swarm run's report; swarm.ErrNoRun when the board has
// none of that id.
func (s *SwarmRuns) Report(ctx context.Context, id string) (*swarm.Report, error) {
	return swarm.LoadReport(ctx, s.st, id)
}

// WriteSwarmRuns lists swarm runs of the board dsn: each one's status and
// its tasks by status.
func WriteSwarmRuns(w io.Writer, dsn string, list []SwarmRun) error {
	fmt.Fprintf(w, "swarm runs on the board %s (apiary status RUN_ID for one's report):\n", dsn)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tMODE\tSTATUS\tTASKS\tDONE\tFAILED\tCANCELLED\tRUNNING\tWAITING\tCREATED")
	for _, r := range list {
		t := r.Report.Totals
		fmt.Fprintf(tw, "%s\tswarm\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%s\n", r.Report.Run, r.Report.Status, t.Tasks, t.Done, t.Failed, t.Cancelled,
			t.Running, t.Waiting, r.Created.Local().Format(time.RFC3339))
	}
	return tw.Flush()
}
