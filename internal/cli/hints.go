package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"text/tabwriter"

	"github.com/apiary-dev/apiary/internal/board"
)

func hintsCommand() *command {
	return &command{
		Name:    "hints",
		Summary: "review the resolution hints learned from integration conflicts",
		Help: `When the swarm's merge role meets an integration conflict it records it on the
board; the first conflict of each type (for example overlap:go) proposes a
resolution hint, which waits in a review queue. Only approved hints are passed
to later workers in their task envelopes; a hint is reviewed once.`,
		Examples: []string{
			"apiary hints list",
			"apiary hints approve overlap:go",
		},
		Subs: []*command{hintsListCommand(), hintsReviewCommand("approve", board.HintApproved), hintsReviewCommand("reject", board.HintRejected)},
	}
}

func hintsListCommand() *command {
	return &command{
		Name:    "list",
		Summary: "list hints (default: the review queue)",
		Examples: []string{
			"apiary hints list",
			"apiary hints list --state all --json",
		},
		Setup: func(fs *flag.FlagSet) runFunc {
			dsn := boardFlag(fs)
			state := fs.String("state", "pending", "`STATE` to list: pending, approved, rejected or all")
			asJSON := fs.Bool("json", false, "print JSON")
			return func(ctx context.Context, e *env, args []string) error {
				if err := noArgs(args); err != nil {
					return err
				}
				var want board.HintState
				switch *state {
				case "all":
				case "pending", "approved", "rejected":
					want = board.HintState(*state)
				default:
					return usagef("--state %q: want pending, approved, rejected or all", *state)
				}
				st, err := openBoardReadOnly(ctx, *dsn)
				if err != nil {
					return err
				}
				defer st.Close()
				hs, err := st.Hints(ctx, want)
				if err != nil {
					return err
				}
				if *asJSON {
					if hs == nil {
						hs = []board.Hint{}
					}
					return writeJSON(e.Stdout, hs)
				}
				tw := tabwriter.NewWriter(e.Stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "TYPE\tSTATE\tCONFLICT\tREVIEWER\tRESOLUTION")
				for _, h := range hs {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", h.Type, h.State, h.Conflict, orDash(h.Reviewer), h.Resolution)
				}
				return tw.Flush()
			}
		},
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func hintsReviewCommand(name string, to board.HintState) *command {
	return &command{
		Name:    name,
		Args:    "TYPE",
		Summary: name + " the pending hint of a conflict type",
		Examples: []string{
			"apiary hints " + name + " overlap:go",
			"apiary hints " + name + " --note \"seen on three runs\" overlap:go",
		},
		Setup: func(fs *flag.FlagSet) runFunc {
			dsn := boardFlag(fs)
			note := fs.String("note", "", "a `NOTE` recorded with the decision")
			reviewer := fs.String("reviewer", "", "who decides (default $USER)")
			return func(ctx context.Context, e *env, args []string) error {
				if err := exactArgs(args, 1, "a conflict TYPE"); err != nil {
					return err
				}
				who := *reviewer
				if who == "" {
					who = e.Getenv("USER")
				}
				st, err := openBoardReadOnly(ctx, *dsn)
				if err != nil {
					return err
				}
				defer st.Close()
				h, err := st.ReviewHint(ctx, args[0], to, who, *note)
				switch {
				case errors.Is(err, board.ErrNotFound):
					return fmt.Errorf("no hint for conflict type %q", args[0])
				case errors.Is(err, board.ErrBadTransition):
					cur, _ := st.Hint(ctx, args[0])
					return fmt.Errorf("hint %q was already %s", args[0], cur.State)
				case err != nil:
					return err
				}
				fmt.Fprintf(e.Stdout, "%s %s\n", h.Type, h.State)
				return nil
			}
		},
	}
}
