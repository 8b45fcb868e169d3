package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/apiary-dev/apiary/internal/board"
	"github.com/apiary-dev/apiary/internal/board/connect"
	"github.com/apiary-dev/apiary/internal/git"
	"github.com/apiary-dev/apiary/internal/swarm"
)

// boardFlag declares --board with the local default.
func boardFlag(fs *flag.FlagSet) *string {
	return fs.String("board", "local:"+board.DefaultLocalPath, "the coordination board `DSN`: local:PATH (SQLite) or etcd://HOST:PORT[,HOST:PORT...][/PREFIX]")
}

// openBoard parses and opens a board DSN; a bad DSN is a usage error.
func openBoard(ctx context.Context, dsn string) (*board.Store, error) {
	if _, err := board.ParseDSN(dsn); err != nil {
		return nil, usagef("%v", err)
	}
	return connect.Open(ctx, dsn, connect.Options{})
}

func boardCommand() *command {
	return &command{
		name:    "board",
		summary: "inspect the swarm runs on a coordination board",
		help: `The board is where swarm mode keeps its runs: tasks, claims with fencing
tokens, intents, conflict records and hints. A board is local:PATH (SQLite,
one machine; default .apiary/state.db) or etcd://HOST:PORT[,...] (a real etcd
cluster across machines).`,
		subs: []*command{boardRunsCommand(), boardStatusCommand()},
	}
}

func boardRunsCommand() *command {
	return &command{
		name:    "runs",
		summary: "list the swarm runs on a board",
		setup: func(fs *flag.FlagSet) runFunc {
			dsn := boardFlag(fs)
			asJSON := fs.Bool("json", false, "print JSON")
			return func(ctx context.Context, e *env, args []string) error {
				if err := noArgs(args); err != nil {
					return err
				}
				st, err := openBoard(ctx, *dsn)
				if err != nil {
					return err
				}
				defer st.Close()
				runs, err := swarm.ListRecords(ctx, st)
				if err != nil {
					return err
				}
				if *asJSON {
					if runs == nil {
						runs = []*swarm.Record{}
					}
					return writeJSON(e.stdout, runs)
				}
				tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "RUN\tSTATUS\tTASKS\tBRANCH\tREMOTE\tCREATED")
				for _, r := range runs {
					fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\n", r.Run, r.Status, len(r.Tasks), r.IntegrationBranch, r.Remote, r.Created.Format(time.RFC3339))
				}
				return tw.Flush()
			}
		},
	}
}

func boardStatusCommand() *command {
	return &command{
		name:    "status",
		args:    "[RUN_ID]",
		summary: "report a swarm run from the board",
		help: `Prints the report of swarm run RUN_ID (default: the latest on the board): each
task's status, attempts, worker, integration and commit; the merge role's
account; duplicates, hot files with their suggested split tasks, and the
hints of the run's conflict types.`,
		setup: func(fs *flag.FlagSet) runFunc {
			dsn := boardFlag(fs)
			asJSON := fs.Bool("json", false, "print the report as JSON")
			return func(ctx context.Context, e *env, args []string) error {
				if len(args) > 1 {
					return usagef("want at most one RUN_ID")
				}
				st, err := openBoard(ctx, *dsn)
				if err != nil {
					return err
				}
				defer st.Close()
				id := ""
				if len(args) == 1 {
					id = args[0]
				} else {
					runs, err := swarm.ListRecords(ctx, st)
					if err != nil {
						return err
					}
					if len(runs) == 0 {
						return errors.New("no swarm runs on the board")
					}
					id = runs[len(runs)-1].Run
				}
				rep, err := swarm.LoadReport(ctx, st, id)
				if err != nil {
					return err
				}
				if *asJSON {
					return writeJSON(e.stdout, rep)
				}
				return rep.WriteText(e.stdout)
			}
		},
	}
}

// swarmFlags are `apiary run`'s swarm-mode flags.
type swarmFlags struct {
	mode, board, remote string
	shards              int
	noMerge             bool
}

func swarmRunFlags(fs *flag.FlagSet, f *swarmFlags) {
	fs.StringVar(&f.mode, "mode", "", "`MODE` swarm publishes the plan on --board for `apiary worker` processes to claim")
	fs.StringVar(&f.board, "board", "", "swarm mode: the board `DSN` (default local:REPO/.apiary/state.db)")
	fs.StringVar(&f.remote, "remote", "", "swarm mode: the shared git remote `URL` workers clone (default: this repository)")
	fs.IntVar(&f.shards, "shards", 0, "swarm mode: `N` task shards, one gatekeeper each (default 4)")
	fs.BoolVar(&f.noMerge, "no-merge", false, "swarm mode: do not stand for the merge role in this process")
}

// runSwarm is `apiary run PLAN --mode swarm`: publish the plan on the
// board, serve as a candidate for the merge role (and a shard gatekeeper)
// while workers claim the tasks, and print the report once every task has
// ended.
func (f *runFlags) runSwarm(ctx context.Context, e *env, args []string) error {
	sf := f.swarm
	if sf.mode != "swarm" {
		return usagef("--mode %q: want swarm", sf.mode)
	}
	if len(args) != 1 || f.resume != "" || f.goal != "" {
		return usagef("swarm mode wants one PLAN (no --resume, no --goal)")
	}
	agents, err := loadAgents(f.agents)
	if err != nil {
		return err
	}
	repo := git.New(f.repo, git.Options{})
	root, err := repo.TopLevel(ctx)
	if err != nil {
		return fmt.Errorf("%s is not in a git repository: %w", f.repo, err)
	}
	dsn := sf.board
	if dsn == "" {
		dsn = "local:" + filepath.Join(root, board.DefaultLocalPath)
	}
	st, err := openBoard(ctx, dsn)
	if err != nil {
		return err
	}
	defer st.Close()
	data, err := os.ReadFile(args[0])
	if err != nil {
		return err
	}
	head := e.stdout
	if f.json {
		head = e.stderr
	}
	opts := swarm.Options{Shards: sf.shards, MaxAttempts: f.maxAttempts}
	_, rep, err := swarm.Run(ctx, swarm.RunConfig{
		PublishConfig: swarm.PublishConfig{Store: st, Repo: repo.At(root), Remote: sf.remote, PlanFile: args[0],
			PlanData: data, Agents: agents, Options: opts},
		NoMerge: sf.noMerge,
		Published: func(r *swarm.Record) {
			fmt.Fprintf(head, "run %s\n", r.Run)
			fmt.Fprintf(e.stderr, "apiary: published %d tasks on %s; start workers with: apiary worker --board %s --profile PROFILE\n", len(r.Tasks), dsn, dsn)
		},
		OnTask: func(t board.Task) {
			if !f.json {
				fmt.Fprintf(e.stdout, "%s %s %s\n", time.Now().Format("15:04:05"), t.Status, t.ID[strings.IndexByte(t.ID, '/')+1:])
			}
		},
	})
	if rep == nil {
		return reportPlanErrors(e, err)
	}
	if werr := writeSwarmReport(e, rep, f.json); werr != nil {
		return werr
	}
	if err != nil {
		return err
	}
	if !rep.OK() {
		return errSilent
	}
	return nil
}

func writeSwarmReport(e *env, rep *swarm.Report, asJSON bool) error {
	if asJSON {
		return writeJSON(e.stdout, rep)
	}
	fmt.Fprintln(e.stdout)
	return rep.WriteText(e.stdout)
}
