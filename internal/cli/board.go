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
	"github.com/apiary-dev/apiary/internal/dashboard"
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
		Name:    "board",
		Summary: "inspect the swarm runs on a coordination board",
		Help: `The board is where swarm mode keeps its runs: tasks, claims with fencing
tokens, intents, conflict records and hints. A board is local:PATH (SQLite,
one machine; default .apiary/state.db) or etcd://HOST:PORT[,...] (a real etcd
cluster across machines).`,
		Examples: []string{
			"apiary board runs",
			"apiary board status --board etcd://127.0.0.1:2379",
		},
		Subs: []*command{boardRunsCommand(), boardStatusCommand()},
	}
}

func boardRunsCommand() *command {
	return &command{
		Name:    "runs",
		Summary: "list the swarm runs on a board",
		Examples: []string{
			"apiary board runs",
			"apiary board runs --board etcd://10.0.0.5:2379,10.0.0.6:2379 --json",
		},
		Setup: func(fs *flag.FlagSet) runFunc {
			dsn := boardFlag(fs)
			asJSON := fs.Bool("json", false, "print JSON")
			return func(ctx context.Context, e *env, args []string) error {
				if err := noArgs(args); err != nil {
					return err
				}
				st, err := openBoardReadOnly(ctx, *dsn)
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
					return writeJSON(e.Stdout, runs)
				}
				tw := tabwriter.NewWriter(e.Stdout, 0, 4, 2, ' ', 0)
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
		Name:    "status",
		Args:    "[RUN_ID]",
		Summary: "report a swarm run from the board",
		Help: `Prints the report of swarm run RUN_ID (default: the latest on the board): each
task's status, attempts, worker, integration and commit; the merge role's
account; duplicates, hot files with their suggested split tasks, and the
hints of the run's conflict types.`,
		Examples: []string{
			"apiary board status",
			"apiary board status --json 20261202-003423-375598",
		},
		Setup: func(fs *flag.FlagSet) runFunc {
			dsn := boardFlag(fs)
			asJSON := fs.Bool("json", false, "print the report as JSON")
			return func(ctx context.Context, e *env, args []string) error {
				if len(args) > 1 {
					return usagef("want at most one RUN_ID")
				}
				st, err := openBoardReadOnly(ctx, *dsn)
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
				if errors.Is(err, swarm.ErrNoRun) {
					return fmt.Errorf("no swarm run %s on the board %s", id, *dsn)
				}
				if err != nil {
					return err
				}
				if *asJSON {
					return writeJSON(e.Stdout, rep)
				}
				return rep.WriteText(e.Stdout)
			}
		},
	}
}

// swarmFlags are `apiary run`'s swarm-mode flags.
type swarmFlags struct {
	mode, board, remote string
	shards              int
	noMerge             bool
	intentWait          time.Duration
	hedgeAfter          time.Duration
	merge               mergeFlags
}

func swarmRunFlags(fs *flag.FlagSet, f *swarmFlags) {
	fs.StringVar(&f.mode, "mode", "", "`MODE` swarm publishes the plan on --board for `apiary worker` processes to claim")
	fs.StringVar(&f.board, "board", "", "swarm mode: the board `DSN` (default local:REPO/.apiary/state.db)")
	fs.StringVar(&f.remote, "remote", "", "swarm mode: the shared git remote `URL` workers clone (default: this repository)")
	fs.IntVar(&f.shards, "shards", 0, "swarm mode: `N` task shards, one gatekeeper each (default 4)")
	fs.BoolVar(&f.noMerge, "no-merge", false, "swarm mode: do not stand for the merge role in this process")
	fs.DurationVar(&f.hedgeAfter, "hedge-after", 0, "hedge every task without a hedge or quorum of its own: a second attempt when its first is still running after `DURATION` (default: none; a resume keeps the run's)")
	addMergeFlags(fs, &f.merge, "swarm mode: ")
	fs.DurationVar(&f.intentWait, "intent-wait", 0, "swarm mode: how long a worker waits for an overlapping earlier intent, `DURATION` (default: the plan's intent_wait_s, else 10s)")
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
	if sf.intentWait < 0 || sf.hedgeAfter < 0 {
		return usagef("--intent-wait and --hedge-after must not be negative")
	}
	if ignored := f.notInSwarm(); len(ignored) > 0 {
		return usagef("swarm mode: workers run the tasks with their own settings, so %s cannot apply (see apiary worker --help)",
			strings.Join(ignored, ", "))
	}
	mo, err := sf.merge.options()
	if err != nil {
		return err
	}
	agents, err := loadAgents(f.agents)
	if err != nil {
		return err
	}
	repo := git.New(f.repo, git.Options{})
	root, err := repo.TopLevel(ctx)
	if err != nil {
		return repoError(f.repo, err)
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
	head := e.Stdout
	if f.json {
		head = e.Stderr
	}
	var dash *dashboard.Server
	if f.dash != "" {
		// The run's view: its DAG, workers and claims, read from the board.
		o := &dashOptions{repo: root, board: dsn}
		src, closeSrc, err := o.sources(ctx, e)
		if err != nil {
			return err
		}
		defer closeSrc()
		srv, stop, err := serveDash(ctx, e, f.dash, src)
		if err != nil {
			return err
		}
		defer stop()
		dash = srv
	}
	opts := swarm.Options{Shards: sf.shards, MaxAttempts: f.maxAttempts, IntentWaitS: sf.intentWait.Seconds(),
		HedgeAfterS: sf.hedgeAfter.Seconds(), Merge: mo}
	_, rep, err := swarm.Run(ctx, swarm.RunConfig{
		PublishConfig: swarm.PublishConfig{Store: st, Repo: repo.At(root), Remote: sf.remote, PlanFile: args[0],
			PlanData: data, Agents: agents, Options: opts},
		NoMerge: sf.noMerge,
		Published: func(r *swarm.Record) {
			fmt.Fprintf(head, "run %s\n", r.Run)
			fmt.Fprintf(e.Stderr, "apiary: published %d tasks on %s; start workers with: apiary worker --board %s --profile PROFILE\n", len(r.Tasks), dsn, dsn)
		},
		OnTask: func(t board.Task) {
			if dash != nil {
				dash.Notify()
			}
			if !f.json {
				fmt.Fprintf(e.Stdout, "%s %s %s\n", time.Now().Format("15:04:05"), t.Status, t.ID[strings.IndexByte(t.ID, '/')+1:])
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

// notInSwarm names the flags given that only the runtime (local mode)
// obeys: in swarm mode workers run the tasks with their own settings.
func (f *runFlags) notInSwarm() []string {
	var out []string
	for _, x := range []struct {
		set  bool
		name string
	}{
		{f.maxParallel != 0, "--max-parallel"}, {f.modelURL != "", "--model-url"}, {f.noGateway, "--no-gateway"},
		{f.reconcile != "", "--reconcile-agent"}, {len(f.agentBins) > 0, "--agent-bin"}, {f.sup.deadline != 0, "--deadline"},
		{f.sup.maxDepth != 0, "--max-depth"}, {f.sup.spawnWindow != 0, "--spawn-window"},
		{len(f.sup.escrowCommands) > 0, "--escrow-command"}, {len(f.sup.escrowTools) > 0, "--escrow-tool"},
	} {
		if x.set {
			out = append(out, x.name)
		}
	}
	return out
}

func writeSwarmReport(e *env, rep *swarm.Report, asJSON bool) error {
	if asJSON {
		return writeJSON(e.Stdout, rep)
	}
	fmt.Fprintln(e.Stdout)
	return rep.WriteText(e.Stdout)
}
