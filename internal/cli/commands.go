package cli

import (
	"context"
	"flag"
)

// rootCommand returns the command tree. Every subcommand lives in its own file
// and is listed here; there is no registry and no init.
func rootCommand() *command {
	root := &command{
		name:    "apiary",
		summary: "run many coding agents safely against one repository and one API account",
		help: `apiary keeps many coding agents alive and honest on one repository and one API
account: a scheduling gateway in front of the model APIs, a durable MCP write
surface, a runtime that runs a DAG of task envelopes in git worktrees behind
invariant gates, and a self-organizing swarm mode.`,
		subs: []*command{
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
	root.subs = append([]*command{helpCommand(root)}, root.subs...)
	return root
}

func helpCommand(root *command) *command {
	return &command{
		name:    "help",
		args:    "[COMMAND...]",
		summary: "show help for apiary or one of its commands",
		setup: func(fs *flag.FlagSet) runFunc {
			return func(ctx context.Context, e *env, args []string) error {
				c, path := root, "apiary"
				for _, a := range args {
					sub := c.lookup(a)
					if sub == nil {
						return usagef("unknown command %q", a)
					}
					c, path = sub, path+" "+sub.name
				}
				c.printHelp(e.stdout, path)
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
