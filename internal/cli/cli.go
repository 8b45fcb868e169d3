// Package cli implements apiary's command line: one file per subcommand, flag
// parsing and the wiring of the other packages. It is the only package that
// reads os.Args and the environment.
//
// Exit codes: 0 on success, 1 on a runtime error (a message on stderr), 2 on a
// usage error (a one-line hint on stderr).
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// Exit codes returned by Main.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

// env is what a running command may touch of its process.
type env struct {
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	getenv func(string) string
}

// runFunc runs a command after its flags were parsed; args are the positional
// arguments.
type runFunc func(ctx context.Context, e *env, args []string) error

// command is one node of the command tree. A command either has subcommands or
// a setup function, which declares the command's flags on fs and returns the
// function that runs it (the flags' values are captured in its closure).
type command struct {
	name    string
	args    string // synopsis of the positional arguments, e.g. "PLAN"
	summary string // one line, lower case, no period
	help    string // paragraphs shown by --help
	setup   func(fs *flag.FlagSet) runFunc
	subs    []*command
	hidden  bool
}

// usageError is a mistake in the command line; Main exits 2 with a hint.
type usageError struct {
	cmd string // full command path, e.g. "apiary gateway"
	msg string
}

func (e *usageError) Error() string { return e.msg }

// usagef returns a usage error for the command being run; Main fills in the
// command path.
func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// errSilent is returned by a command that already reported its failure on
// stderr and only needs Main to exit 1.
var errSilent = errors.New("failure already reported")

// Main runs the command line args (without the program name) and returns the
// process exit code.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	e := &env{stdin: stdin, stdout: stdout, stderr: stderr, getenv: os.Getenv}
	root := rootCommand()
	err := root.execute(ctx, e, "apiary", args)
	var ue *usageError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "%s: %s (run '%s --help' for usage)\n", ue.cmd, ue.msg, ue.cmd)
		return exitUsage
	case errors.Is(err, errSilent):
		return exitFailure
	default:
		fmt.Fprintf(stderr, "apiary: %v\n", err)
		return exitFailure
	}
}

// execute dispatches args to c or to one of its subcommands; path is the
// command path so far ("apiary", "apiary gateway").
func (c *command) execute(ctx context.Context, e *env, path string, args []string) error {
	if len(c.subs) > 0 {
		if len(args) == 0 {
			if c.setup == nil {
				return &usageError{cmd: path, msg: "missing subcommand"}
			}
		} else {
			a := args[0]
			if a == "-h" || a == "--help" || a == "-help" {
				c.printHelp(e.stdout, path)
				return nil
			}
			if !strings.HasPrefix(a, "-") {
				sub := c.lookup(a)
				if sub == nil {
					return &usageError{cmd: path, msg: fmt.Sprintf("unknown command %q", a)}
				}
				return sub.execute(ctx, e, path+" "+sub.name, args[1:])
			}
			if c.setup == nil {
				return &usageError{cmd: path, msg: fmt.Sprintf("unknown flag %s", a)}
			}
		}
	}
	fs := newFlagSet(path)
	run := c.setup(fs)
	pos, err := parseInterspersed(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		c.printHelp(e.stdout, path)
		return nil
	}
	if err != nil {
		return &usageError{cmd: path, msg: err.Error()}
	}
	err = run(ctx, e, pos)
	var ue *usageError
	if errors.As(err, &ue) && ue.cmd == "" {
		ue.cmd = path
	}
	return err
}

func (c *command) lookup(name string) *command {
	for _, s := range c.subs {
		if s.name == name {
			return s
		}
	}
	return nil
}

func newFlagSet(path string) *flag.FlagSet {
	fs := flag.NewFlagSet(path, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parseInterspersed parses flags that may appear before, between and after
// positional arguments ("apiary run plan.yaml --json"). A lone "--" ends flag
// parsing.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, cleanFlagError(err)
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		// flag stops at "--" (consumed) or at the first non-flag argument.
		consumed := len(args) - len(rest)
		if consumed > 0 && args[consumed-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// cleanFlagError turns the flag package's messages into our one-line style.
func cleanFlagError(err error) error {
	if errors.Is(err, flag.ErrHelp) {
		return err
	}
	msg := err.Error()
	msg = strings.Replace(msg, "flag provided but not defined: -", "unknown flag --", 1)
	msg = strings.Replace(msg, "flag needs an argument: -", "flag needs an argument: --", 1)
	return errors.New(msg)
}

// printHelp writes the command's usage, description, subcommands and flags.
func (c *command) printHelp(w io.Writer, path string) {
	var b strings.Builder
	synopsis := path
	if len(c.subs) > 0 && c.setup == nil {
		synopsis += " <command>"
	} else {
		synopsis += " [flags]"
		if c.args != "" {
			synopsis += " " + c.args
		}
	}
	fmt.Fprintf(&b, "usage: %s\n\n", synopsis)
	if c.help != "" {
		b.WriteString(strings.TrimSpace(c.help))
		b.WriteString("\n")
	} else {
		b.WriteString(upperFirst(c.summary) + ".\n")
	}
	if len(c.subs) > 0 {
		b.WriteString("\ncommands:\n")
		width := 0
		for _, s := range c.subs {
			if !s.hidden {
				width = max(width, len(s.name))
			}
		}
		for _, s := range c.subs {
			if !s.hidden {
				fmt.Fprintf(&b, "  %-*s  %s\n", width, s.name, s.summary)
			}
		}
	}
	if c.setup != nil {
		fs := newFlagSet(path)
		c.setup(fs)
		if flags := describeFlags(fs); flags != "" {
			b.WriteString("\nflags:\n")
			b.WriteString(flags)
		}
	}
	if len(c.subs) > 0 {
		fmt.Fprintf(&b, "\nRun '%s <command> --help' for a command's flags.\n", path)
	}
	io.WriteString(w, b.String())
}

// describeFlags renders every flag of fs, sorted, with its argument name,
// usage and default.
func describeFlags(fs *flag.FlagSet) string {
	type row struct{ left, right string }
	var rows []row
	fs.VisitAll(func(f *flag.Flag) {
		name, usage := flag.UnquoteUsage(f)
		left := "--" + f.Name
		if name != "" {
			left += " " + strings.ToUpper(name)
		}
		if def := f.DefValue; def != "" && def != "false" && def != "0" && def != "[]" {
			usage += fmt.Sprintf(" (default %s)", def)
		}
		rows = append(rows, row{left, usage})
	})
	sort.Slice(rows, func(i, j int) bool { return rows[i].left < rows[j].left })
	width := 0
	for _, r := range rows {
		width = max(width, len(r.left))
	}
	var b strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&b, "  %-*s  %s\n", width, r.left, r.right)
	}
	return b.String()
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string { return strings.Join(*l, ",") }

func (l *stringList) Set(v string) error {
	*l = append(*l, v)
	return nil
}
