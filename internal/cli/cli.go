// Package cli implements apiary's command line: one file per subcommand, flag
// parsing and the wiring of the other packages. It is the only package that
// reads os.Args and the environment.
//
// Exit codes: 0 on success, 1 on a runtime error (a message on stderr), 2 on a
// usage error (a one-line hint naming the mistake and the command's --help,
// then the command's usage line, on stderr). A command may document more
// statuses of its own (review exits 3 when a review could not be carried
// out).
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/apiary-dev/apiary/internal/cmdtree"
)

// Exit codes returned by Main.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

// The command tree is cmdtree's; these are its names in this package.
type (
	env        = cmdtree.Env        // what a running command may touch of its process
	command    = cmdtree.Command    // one node of the command tree
	runFunc    = cmdtree.RunFunc    // runs a command after its flags were parsed
	usageError = cmdtree.UsageError // a mistake in the command line; Main exits 2
	stringList = cmdtree.StringList // a repeatable string flag
)

// usagef returns a usage error for the command being run; the tree fills in
// the command path.
func usagef(format string, args ...any) error {
	return cmdtree.Usagef(format, args...)
}

// errSilent is returned by a command that already reported its failure on
// stderr and only needs Main to exit 1.
var errSilent = errors.New("failure already reported")

// Main runs the command line args (without the program name) and returns the
// process exit code.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	e := &env{Stdin: stdin, Stdout: stdout, Stderr: stderr, Getenv: os.Getenv}
	root := rootCommand()
	err := root.Execute(ctx, e, "apiary", args)
	var ue *usageError
	var se *exitStatusError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "%s: %s (run '%s --help' for usage)\n", ue.Cmd, userMessage(ue.Msg), ue.Cmd)
		if ue.Synopsis != "" {
			fmt.Fprintf(stderr, "usage: %s\n", ue.Synopsis)
		}
		return exitUsage
	case errors.As(err, &se):
		// A command with exit statuses of its own (review: 3 when the
		// review could not be carried out).
		if !errors.Is(err, errSilent) {
			fmt.Fprintf(stderr, "apiary: %s\n", userMessage(err.Error()))
		}
		return se.exitCode()
	case errors.Is(err, errSilent):
		return exitFailure
	default:
		fmt.Fprintf(stderr, "apiary: %s\n", userMessage(err.Error()))
		return exitFailure
	}
}
