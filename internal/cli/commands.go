package cli

import (
	"context"
	"flag"
	"fmt"
)

// rootCommand returns the command tree. Every subcommand lives in its own file
// and is listed here; there is no registry and no init.
func rootCommand() *command {
	root := &command{
		Name:    "apiary",
		Args:    "<command>",
		Summary: "run many coding agents safely against one repository and one API account",
		Help: `apiary keeps many coding agents alive and honest on one repository and one API
account: a scheduling gateway in front of the model APIs, a durable MCP write
surface, a runtime that runs a DAG of task envelopes in git worktrees behind
invariant gates, and a self-organizing swarm mode.`,
		Examples: []string{
			"apiary demo",
			"apiary run plan.yaml",
			"apiary --version",
		},
		Setup: func(fs *flag.FlagSet) runFunc {
			version := fs.Bool("version", false, "print apiary's version, VCS revision and Go version, like 'apiary version'")
			return func(ctx context.Context, e *env, args []string) error {
				if !*version {
					return usagef("missing subcommand")
				}
				if err := noArgs(args); err != nil {
					return err
				}
				_, err := fmt.Fprintln(e.Stdout, readBuildVersion())
				return err
			}
		},
		Subs: []*command{
			versionCommand(),
			gatewayCommand(),
			planCommand(),
			mockllmCommand(),
			benchCommand(),
			capCommand(),
			simCommand(),
			evalCommand(),
			mcpCommand(),
			runCommand(),
			cancelCommand(),
			spawnCommand(),
			escrowCommand(),
			reapCommand(),
			workerCommand(),
			boardCommand(),
			hintsCommand(),
			statusCommand(),
			demoCommand(),
			doctorCommand(),
			dashCommand(),
			topCommand(),
			reviewCommand(),
		},
	}
	root.Subs = append([]*command{helpCommand(root)}, root.Subs...)
	root.Subs = append(root.Subs, completionCommand(root))
	return root
}

func helpCommand(root *command) *command {
	return &command{
		Name:    "help",
		Args:    "[COMMAND...]",
		Summary: "show help for apiary or one of its commands",
		Examples: []string{
			"apiary help run",
			"apiary help gateway key create",
		},
		Setup: func(fs *flag.FlagSet) runFunc {
			return func(ctx context.Context, e *env, args []string) error {
				c, path := root, "apiary"
				for _, a := range args {
					sub := c.Lookup(a)
					if sub == nil {
						return usagef("unknown command %q", a)
					}
					c, path = sub, path+" "+sub.Name
				}
				c.PrintHelp(e.Stdout, path)
				return nil
			}
		},
	}
}

// noArgs rejects positional arguments for commands that take none.
func noArgs(args []string) error {
	if len(args) > 0 {
		return usagef("unexpected argument %q", args[0])
	}
	return nil
}

// exactArgs requires exactly n positional arguments named by what.
func exactArgs(args []string, n int, what string) error {
	if len(args) != n {
		return usagef("want %s, got %d argument(s)", what, len(args))
	}
	return nil
}
