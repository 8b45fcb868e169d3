package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/apiary-dev/apiary/internal/git"
	"github.com/apiary-dev/apiary/internal/runs"
)

func escrowCommand() *command {
	return &command{
		Name:    "escrow",
		Summary: "approve or deny the destructive operations agents asked for",
		Help: `Operations apiary holds in escrow (git push and the deploy commands and
tools a run names) are refused to every agent with
escrow_elevation_required; the request goes up the task tree to the root,
where a human decides. Requests wait in .apiary/escrow/ (the run also asks
on its terminal when it has one); once approved, the same operation from
the same attempt goes through exactly once. Every decision is recorded.`,
		Examples: []string{
			"apiary escrow list --pending",
			"apiary escrow approve 3fa9c01b22d4-1",
		},
		Subs: []*command{escrowListCommand(), escrowDecideCommand(true), escrowDecideCommand(false), escrowCheckCommand()},
	}
}

func openEscrowQueue(ctx context.Context, repoDir string) (*runs.EscrowQueue, error) {
	root, err := git.New(repoDir, git.Options{}).TopLevel(ctx)
	if err != nil {
		return nil, repoError(repoDir, err)
	}
	return runs.NewEscrowQueue(root, nil), nil
}

func escrowListCommand() *command {
	return &command{
		Name:    "list",
		Summary: "list escrow requests",
		Examples: []string{
			"apiary escrow list",
			"apiary escrow list --pending --json",
		},
		Setup: func(fs *flag.FlagSet) runFunc {
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
				out := reqs
				if *pending {
					out = runs.Pending(reqs)
				}
				if *asJSON {
					if out == nil {
						out = []runs.EscrowRequest{}
					}
					return writeJSON(e.Stdout, out)
				}
				return runs.WriteEscrowTable(e.Stdout, out)
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
		Name:    name,
		Args:    "ID",
		Summary: verb + " a pending escrow request",
		Examples: []string{
			"apiary escrow " + name + " 3fa9c01b22d4-1",
			"apiary escrow " + name + " --note \"checked with the release owner\" 3fa9c01b22d4-1",
		},
		Setup: func(fs *flag.FlagSet) runFunc {
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
				// An unknown id changes nothing, not even the queue's lock
				// file (decide takes the lock before it looks).
				if _, err := q.Get(args[0]); err != nil {
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
				fmt.Fprintf(e.Stdout, "%s %s: %s %q of task %s (run %s)\n", r.ID, r.State, r.Kind, r.Operation, r.Task, r.Run)
				return nil
			}
		},
	}
}

func escrowCheckCommand() *command {
	return &command{
		Name:    "check",
		Args:    "-- OPERATION...",
		Summary: "ask the running apiary whether an operation may proceed (run by an agent)",
		Help: `Exits 0 when the operation may proceed: it is not escrowed, or a human
approved it (once). Otherwise prints the typed refusal (JSON) and exits 1:
escrow_elevation_required while the request waits, permission_denied once
denied. Outside an apiary task ($APIARY_CONTROL unset) there is nothing to
ask and it exits 0. apiary installs it as the git pre-push hook of its
agents.`,
		Examples: []string{
			"apiary escrow check -- git push origin main",
			"apiary escrow check --kind tool -- rw.move",
		},
		Setup: func(fs *flag.FlagSet) runFunc {
			kind := fs.String("kind", runs.EscrowCommand, "`KIND` of operation: command or tool")
			return func(ctx context.Context, e *env, args []string) error {
				if len(args) == 0 {
					return usagef("want the OPERATION")
				}
				if *kind != runs.EscrowCommand && *kind != runs.EscrowTool {
					return usagef("--kind %q: want command or tool", *kind)
				}
				control, token := e.Getenv("APIARY_CONTROL"), e.Getenv("APIARY_CAPABILITY")
				if control == "" {
					return nil
				}
				_, err := runs.DialControl(control).Escrow(ctx, runs.EscrowCheck{Capability: token, Kind: *kind, Operation: strings.Join(args, " ")})
				var ce *runs.ControlError
				if errors.As(err, &ce) {
					enc := json.NewEncoder(e.Stdout)
					if werr := enc.Encode(ce); werr != nil {
						return werr
					}
					fmt.Fprintf(e.Stderr, "apiary: %s\n", ce.Message)
					return errSilent
				}
				return err
			}
		},
	}
}
