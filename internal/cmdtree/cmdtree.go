// Package cmdtree is the command tree apiary's command line is built from:
// commands with subcommands, flags that may sit between positional
// arguments, --help rendered from the tree (usage line, description,
// subcommands, flags, examples), usage errors that name the command, and
// shell completion scripts generated from the same tree. It knows nothing of
// what the commands do.
package cmdtree

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
)

// Env is what a running command may touch of its process.
type Env struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	Getenv func(string) string
}

// RunFunc runs a command after its flags were parsed; args are the positional
// arguments.
type RunFunc func(ctx context.Context, e *Env, args []string) error

// Command is one node of the command tree. A command either has subcommands or
// a setup function, which declares the command's flags on fs and returns the
// function that runs it (the flags' values are captured in its closure).
type Command struct {
	Name    string
	Args    string // synopsis of the positional arguments, e.g. "PLAN"
	Summary string // one line, lower case, no period
	Help    string // paragraphs shown by --help
	// Examples are complete command lines shown under "examples:" in
	// --help, each starting with the command's path; every command has at
	// least one, and each must parse (TestHelpExamples).
	Examples []string
	Setup    func(fs *flag.FlagSet) RunFunc
	Subs     []*Command
	Hidden   bool
}

// UsageError is a mistake in the command line (a program exits 2 with a
// hint naming it).
type UsageError struct {
	Cmd      string // full command path, e.g. "apiary gateway"
	Synopsis string // the command's usage line, e.g. "apiary gateway [flags]"
	Msg      string
}

func (e *UsageError) Error() string { return e.Msg }

// Usagef returns a usage error for the command being run; Execute fills in
// the command path.
func Usagef(format string, args ...any) error {
	return &UsageError{Msg: fmt.Sprintf(format, args...)}
}

// Execute dispatches args to c or to one of its subcommands; path is the
// command path so far ("apiary", "apiary gateway").
func (c *Command) Execute(ctx context.Context, e *Env, path string, args []string) error {
	if len(c.Subs) > 0 {
		if len(args) == 0 {
			if c.Setup == nil {
				return &UsageError{Cmd: path, Synopsis: c.Synopsis(path), Msg: "missing subcommand"}
			}
		} else {
			a := args[0]
			if a == "-h" || a == "--help" || a == "-help" {
				c.PrintHelp(e.Stdout, path)
				return nil
			}
			if !strings.HasPrefix(a, "-") {
				sub := c.Lookup(a)
				if sub == nil {
					return &UsageError{Cmd: path, Synopsis: c.Synopsis(path), Msg: fmt.Sprintf("unknown command %q", a)}
				}
				return sub.Execute(ctx, e, path+" "+sub.Name, args[1:])
			}
			if c.Setup == nil {
				return &UsageError{Cmd: path, Synopsis: c.Synopsis(path), Msg: fmt.Sprintf("unknown flag %s", a)}
			}
		}
	}
	fs := NewFlagSet(path)
	run := c.Setup(fs)
	pos, err := ParseInterspersed(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		c.PrintHelp(e.Stdout, path)
		return nil
	}
	if err != nil {
		return &UsageError{Cmd: path, Synopsis: c.Synopsis(path), Msg: err.Error()}
	}
	err = run(ctx, e, pos)
	var ue *UsageError
	if errors.As(err, &ue) && ue.Cmd == "" {
		ue.Cmd, ue.Synopsis = path, c.Synopsis(path)
	}
	return err
}

// Lookup returns the visible or hidden subcommand called name, or nil.
func (c *Command) Lookup(name string) *Command {
	for _, s := range c.Subs {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// NewFlagSet returns a flag set that reports nothing itself: errors come back
// to Execute, help is printed by PrintHelp.
func NewFlagSet(path string) *flag.FlagSet {
	fs := flag.NewFlagSet(path, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// ParseInterspersed parses flags that may appear before, between and after
// positional arguments ("apiary run plan.yaml --json"). A lone "--" ends flag
// parsing.
func ParseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
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
	msg = strings.Replace(msg, " for flag -", " for flag --", 1)
	msg = strings.Replace(msg, "invalid boolean value", "invalid value", 1)
	msg = strings.Replace(msg, "\" for -", "\" for flag --", 1)
	msg = strings.Replace(msg, "invalid boolean flag ", "invalid boolean flag --", 1)
	return errors.New(msg)
}

// Synopsis is the command's usage line: its path, then [flags] and its
// positional arguments, or <command> for a command that only groups others.
func (c *Command) Synopsis(path string) string {
	switch {
	case len(c.Subs) > 0 && c.Setup == nil:
		return path + " <command>"
	case c.Args != "":
		return path + " [flags] " + c.Args
	case len(c.Subs) > 0:
		return path + " [flags] [<command>]"
	}
	return path + " [flags]"
}

// PrintHelp writes the command's usage, description, subcommands, flags and
// examples.
func (c *Command) PrintHelp(w io.Writer, path string) {
	var b strings.Builder
	fmt.Fprintf(&b, "usage: %s\n\n", c.Synopsis(path))
	if c.Help != "" {
		b.WriteString(strings.TrimSpace(c.Help))
		b.WriteString("\n")
	} else {
		b.WriteString(upperFirst(c.Summary) + ".\n")
	}
	if len(c.Subs) > 0 {
		b.WriteString("\ncommands:\n")
		width := 0
		for _, s := range c.Subs {
			if !s.Hidden {
				width = max(width, len(s.Name))
			}
		}
		for _, s := range c.Subs {
			if !s.Hidden {
				fmt.Fprintf(&b, "  %-*s  %s\n", width, s.Name, s.Summary)
			}
		}
	}
	if c.Setup != nil {
		fs := NewFlagSet(path)
		c.Setup(fs)
		if flags := describeFlags(fs); flags != "" {
			b.WriteString("\nflags:\n")
			b.WriteString(flags)
		}
	}
	if len(c.Examples) > 0 {
		b.WriteString("\nexamples:\n")
		for _, ex := range c.Examples {
			fmt.Fprintf(&b, "  %s\n", ex)
		}
	}
	if len(c.Subs) > 0 {
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

// StringList is a repeatable string flag.
type StringList []string

// String implements flag.Value.
func (l *StringList) String() string { return strings.Join(*l, ",") }

// Set implements flag.Value.
func (l *StringList) Set(v string) error {
	*l = append(*l, v)
	return nil
}
