package cli

import (
	"context"
	"flag"
	"time"

	"github.com/apiary-dev/apiary/internal/doctor"
)

func doctorCommand() *command {
	return &command{
		Name:    "doctor",
		Summary: "which agent CLIs are installed, their versions, and whether each works through the gateway",
		Help: `For every agent CLI apiary has a profile for (Claude Code, Codex, Gemini CLI,
opencode, aider), reports whether it is installed (test/node_modules/.bin
above the current directory, or PATH), its version next to the version the
profile was checked against, and whether it passes a one-turn smoke test:
the CLI, run by its built-in profile, answers a scripted turn of apiary's
fake model server through an in-process gateway, which replaces the
attempt's virtual key with the upstream's and meters its tokens.

No key and no network are needed. The exit status is 0 when every
installed CLI passes, 1 when one fails; a CLI that is not installed is
reported, not failed.

EXAMPLES
  apiary doctor
  apiary doctor --json --timeout 2m`,
		Examples: []string{
			"apiary doctor",
			"apiary doctor --json --timeout 2m",
		},
		Setup: func(fs *flag.FlagSet) runFunc {
			asJSON := fs.Bool("json", false, "print the results as JSON")
			timeout := fs.Duration("timeout", 90*time.Second, "how long one CLI's smoke test may take (`DURATION`)")
			return func(ctx context.Context, e *env, args []string) error {
				if err := noArgs(args); err != nil {
					return err
				}
				return runDoctor(ctx, e, *asJSON, *timeout)
			}
		},
	}
}

func runDoctor(ctx context.Context, e *env, asJSON bool, timeout time.Duration) error {
	opt := doctor.Options{Timeout: timeout, Log: e.Stderr}
	if !asJSON {
		opt.Progress = e.Stderr
	}
	results, err := doctor.Run(ctx, opt)
	if err != nil {
		return err
	}
	if asJSON {
		err = writeJSON(e.Stdout, results)
	} else {
		err = doctor.WriteTable(e.Stdout, results)
	}
	if err != nil {
		return err
	}
	if doctor.Failed(results) {
		return errSilent
	}
	return nil
}
