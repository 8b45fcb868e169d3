package cli

import (
	"context"
	"flag"
	"io"
	"os"
	"time"

	"github.com/apiary-dev/apiary/internal/dashboard"
	"github.com/apiary-dev/apiary/internal/rundir"
	"github.com/apiary-dev/apiary/internal/runview"
	"github.com/apiary-dev/apiary/internal/tui"
)

func topCommand() *command {
	return &command{
		Name:    "top",
		Summary: "show runs, the gateway and the board in the terminal, refreshing",
		Help: `Shows what the dashboard shows, in the terminal: the tasks of the latest run
of the repository (--repo; or --run RUN_ID, a local or a swarm run) with
their status, attempts, dollars, wall time and why they failed, the critical
path marked; the gateway's queue, limits, refusals, budgets and agents (the
run's own, or --gateway URL); and what needs you — escrow requests, pending
resolution hints (--board DSN, default the repository's local board when it
exists) and escalated reviews. The money is the run gateway ledger's.

On a terminal it is a full-screen program that fits the window (80x24 and
up) and refreshes every --interval: q quits; tab, or 1 2 3, switches between
the run, the gateway and the board; up and down (or k and j) select a task;
enter shows its detail (why it failed, the log's tail, its usage), esc goes
back; c cancels the selected task and everything it spawned after asking
y/n; r refreshes at once. Otherwise each refresh prints a plain snapshot,
separated by a blank line; --count N stops after N snapshots; --json prints
one snapshot as JSON. Reading creates nothing: no board, no ledger.`,
		Examples: []string{
			"apiary top",
			"apiary top --gateway http://127.0.0.1:7420",
			"apiary top --json --count 1",
		},
		Setup: func(fs *flag.FlagSet) runFunc {
			o := &topOptions{}
			o.sourceFlags(fs)
			fs.StringVar(&o.run, "run", "", "the run `RUN_ID` to show (default: the latest)")
			fs.DurationVar(&o.interval, "interval", 2*time.Second, "refresh every `D`")
			fs.IntVar(&o.count, "count", 0, "stop after `N` snapshots (0: until interrupted)")
			fs.BoolVar(&o.json, "json", false, "print one snapshot as JSON")
			return func(ctx context.Context, e *env, args []string) error {
				if err := noArgs(args); err != nil {
					return err
				}
				return o.top(ctx, e)
			}
		},
	}
}

type topOptions struct {
	dashOptions
	run      string
	interval time.Duration
	count    int
	json     bool
}

func (o *topOptions) top(ctx context.Context, e *env) error {
	switch {
	case o.interval <= 0:
		return usagef("--interval must be positive")
	case o.count < 0:
		return usagef("--count must not be negative")
	case o.run != "" && !rundir.ValidID(o.run):
		return usagef("bad RUN_ID %q", o.run)
	}
	src, closeSrc, err := o.sources(ctx, e)
	if err != nil {
		return err
	}
	defer closeSrc()
	if o.json {
		v, err := dashboard.Collect(ctx, src, o.run, time.Now())
		if err != nil {
			return err
		}
		return writeJSON(e.Stdout, v)
	}
	if isTerminal(e.Stdout) && isTerminalReader(e.Stdin) && o.count == 0 {
		return tui.Run(ctx, runview.TUI{Sources: src}, tui.Options{Run: o.run, Interval: o.interval, NoColor: e.Getenv("NO_COLOR") != ""}, e.Stdin, e.Stdout)
	}
	return dashboard.WriteSnapshots(ctx, e.Stdout, src, o.run, o.interval, o.count)
}

// isTerminalReader reports whether r is a terminal (the UI reads keys
// from it).
func isTerminalReader(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && isTerminal(f)
}
