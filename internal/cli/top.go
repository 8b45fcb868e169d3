package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/apiary-dev/apiary/internal/dashboard"
	"github.com/apiary-dev/apiary/internal/rundir"
)

func topCommand() *command {
	return &command{
		name:    "top",
		summary: "show runs, the gateway and the board in the terminal, refreshing",
		help: `Shows what the dashboard shows, in the terminal: the runs of the repository
(--repo), the tasks of the latest run (or --run RUN_ID) with their status,
attempts, integration, tokens, dollars, wall time and gate, the critical path
marked; the gateway's upstreams and agents (--gateway URL); the board's
claims and resolution hints (--board DSN, default the repository's local
board when it exists); and the escrow queue.

On a terminal the screen is redrawn every --interval, in color, until
interrupted; otherwise each refresh prints a plain snapshot, separated by a
blank line. --count N stops after N snapshots; --json prints one snapshot
as JSON.`,
		setup: func(fs *flag.FlagSet) runFunc {
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
		return writeJSONTo(e.stdout, v)
	}
	tty := isTerminal(e.stdout)
	if tty {
		io.WriteString(e.stdout, "\x1b[?25l") // hide the cursor while redrawing
		defer io.WriteString(e.stdout, "\x1b[?25h")
	}
	t := time.NewTicker(o.interval)
	defer t.Stop()
	for n := 1; ; n++ {
		v, err := dashboard.Collect(ctx, src, o.run, time.Now())
		if err != nil {
			return nil // interrupted
		}
		opts := dashboard.TextOptions{}
		switch {
		case tty:
			opts.Color, opts.Width = true, termWidth(e.stdout)
			io.WriteString(e.stdout, "\x1b[H\x1b[2J")
		case n > 1:
			fmt.Fprintln(e.stdout)
		}
		if err := dashboard.WriteText(e.stdout, v, opts); err != nil {
			return err
		}
		if o.count > 0 && n >= o.count {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// termWidth is the terminal's width in columns, 0 if unknown.
func termWidth(w io.Writer) int {
	f, ok := w.(*os.File)
	if !ok {
		return 0
	}
	ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	if err != nil {
		return 0
	}
	return int(ws.Col)
}
