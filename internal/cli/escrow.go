package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/apiary-dev/apiary/internal/git"
	"github.com/apiary-dev/apiary/internal/runs"
)

func escrowCommand() *command {
	return &command{
		name:    "escrow",
		summary: "approve or deny the destructive operations agents asked for",
		help: `Operations apiary holds in escrow (git push and the deploy commands and
tools a run names) are refused to every agent with
escrow_elevation_required; the request goes up the task tree to the root,
where a human decides. Requests wait in .apiary/escrow/ (the run also asks
on its terminal when it has one); once approved, the same operation from
the same attempt goes through exactly once. Every decision is recorded.`,
		subs: []*command{escrowListCommand(), escrowDecideCommand(true), escrowDecideCommand(false), escrowCheckCommand()},
	}
}

func openEscrowQueue(ctx context.Context, repoDir string) (*runs.EscrowQueue, error) {
	root, err := git.New(repoDir, git.Options{}).TopLevel(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s is not in a git repository: %w", repoDir, err)
	}
	return runs.NewEscrowQueue(root, nil), nil
}

func escrowListCommand() *command {
	return &command{
		name:    "list",
		summary: "list escrow requests",
		setup: func(fs *flag.FlagSet) runFunc {
			repoDir := fs.String("repo", ".", "the git repository, `DIR`")
			asJSON := fs.Bool("json", false, "print JSON")
			pending := fs.Bool("pending", false, "only requests waiting for a decision")
			return func(ctx context.Context, e *env, args []string) error {
				if err := noArgs(args); err != nil {
					return err
				}
				q, err := openEscrowQueue(ctx, *repoDir)
				if err != nil {
					return err
				}
				reqs, err := q.List()
				if err != nil {
					return err
				}
				out := reqs[:0:0]
				for _, r := range reqs {
					if !*pending || r.State == runs.EscrowPending {
						out = append(out, r)
					}
				}
				if *asJSON {
					enc := json.NewEncoder(e.stdout)
					enc.SetIndent("", "  ")
					if out == nil {
						out = []runs.EscrowRequest{}
					}
					return enc.Encode(out)
				}
				tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "ID\tSTATE\tRUN\tTASK\tOPERATION")
				for _, r := range out {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s: %s\n", r.ID, r.State, r.Run, r.Task, r.Kind, r.Operation)
				}
				return tw.Flush()
			}
		},
	}
}

func escrowDecideCommand(approve bool) *command {
	name, verb := "deny", "deny"
	if approve {
		name, verb = "approve", "approve"
	}
	return &command{
		name:    name,
		args:    "ID",
		summary: verb + " a pending escrow request",
		setup: func(fs *flag.FlagSet) runFunc {
			repoDir := fs.String("repo", ".", "the git repository, `DIR`")
			note := fs.String("note", "", "a note recorded with the decision")
			return func(ctx context.Context, e *env, args []string) error {
				if err := exactArgs(args, 1, "ID"); err != nil {
					return err
				}
				q, err := openEscrowQueue(ctx, *repoDir)
				if err != nil {
					return err
				}
				decide := q.Deny
				if approve {
					decide = q.Approve
				}
				r, err := decide(args[0], "cli", *note)
				if err != nil {
					return err
				}
				fmt.Fprintf(e.stdout, "%s %s: %s %q of task %s (run %s)\n", r.ID, r.State, r.Kind, r.Operation, r.Task, r.Run)
				return nil
			}
		},
	}
}

func escrowCheckCommand() *command {
	return &command{
		name:    "check",
		args:    "-- OPERATION...",
		summary: "ask the running apiary whether an operation may proceed (run by an agent)",
		help: `Exits 0 when the operation may proceed: it is not escrowed, or a human
approved it (once). Otherwise prints the typed refusal (JSON) and exits 1:
escrow_elevation_required while the request waits, permission_denied once
denied. Outside an apiary task ($APIARY_CONTROL unset) there is nothing to
ask and it exits 0. apiary installs it as the git pre-push hook of its
agents.`,
		setup: func(fs *flag.FlagSet) runFunc {
			kind := fs.String("kind", runs.EscrowCommand, "`KIND` of operation: command or tool")
			return func(ctx context.Context, e *env, args []string) error {
				if len(args) == 0 {
					return usagef("want the OPERATION")
				}
				control, token := e.getenv("APIARY_CONTROL"), e.getenv("APIARY_CAPABILITY")
				if control == "" {
					return nil
				}
				_, err := runs.DialControl(control).Escrow(ctx, runs.EscrowCheck{Capability: token, Kind: *kind, Operation: strings.Join(args, " ")})
				var ce *runs.ControlError
				if errors.As(err, &ce) {
					enc := json.NewEncoder(e.stdout)
					if werr := enc.Encode(ce); werr != nil {
						return werr
					}
					fmt.Fprintf(e.stderr, "apiary: %s\n", ce.Message)
					return errSilent
				}
				return err
			}
		},
	}
}
