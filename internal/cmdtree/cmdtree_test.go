package cmdtree

import (
	"context"
	"errors"
	"flag"
	"strings"
	"testing"
)

// tree is a two-level tree whose leaf records what it ran with.
func tree(got *[]string) *Command {
	leaf := &Command{Name: "add", Args: "NAME", Summary: "add a thing", Examples: []string{"tool thing add x"},
		Setup: func(fs *flag.FlagSet) RunFunc {
			n := fs.Int("n", 1, "how many `N`")
			return func(ctx context.Context, e *Env, args []string) error {
				if len(args) != 1 {
					return Usagef("want one NAME, got %d", len(args))
				}
				*got = append(*got, args[0], strings.Repeat("+", *n))
				return nil
			}
		}}
	return &Command{Name: "tool", Summary: "a tool", Subs: []*Command{
		{Name: "thing", Summary: "things", Subs: []*Command{leaf}},
		{Name: "secret", Summary: "hidden", Hidden: true, Setup: func(*flag.FlagSet) RunFunc { return nil }},
	}}
}

func TestExecute(t *testing.T) {
	var got []string
	var out strings.Builder
	e := &Env{Stdout: &out}
	root := tree(&got)
	// Flags may come after positional arguments.
	if err := root.Execute(t.Context(), e, "tool", []string{"thing", "add", "x", "-n", "3"}); err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, " ") != "x +++" {
		t.Fatalf("ran with %q", got)
	}
	// "--" ends the flags.
	got = nil
	if err := root.Execute(t.Context(), e, "tool", []string{"thing", "add", "--", "-n"}); err != nil || strings.Join(got, " ") != "-n +" {
		t.Fatalf("err %v, ran with %q", err, got)
	}
	for _, tc := range []struct {
		args          []string
		cmd, synopsis string
		msg           string
	}{
		{nil, "tool", "tool <command>", "missing subcommand"},
		{[]string{"nope"}, "tool", "tool <command>", `unknown command "nope"`},
		{[]string{"thing", "add", "--m"}, "tool thing add", "tool thing add [flags] NAME", "unknown flag --m"},
		{[]string{"thing", "add", "-n", "x", "y"}, "tool thing add", "tool thing add [flags] NAME", `invalid value "x" for flag --n: parse error`},
		// A usage error of the command itself gets the command's path.
		{[]string{"thing", "add"}, "tool thing add", "tool thing add [flags] NAME", "want one NAME, got 0"},
	} {
		err := root.Execute(t.Context(), e, "tool", tc.args)
		var ue *UsageError
		if !errors.As(err, &ue) || ue.Cmd != tc.cmd || ue.Synopsis != tc.synopsis || ue.Msg != tc.msg {
			t.Errorf("%q: got %#v (%v), want %s / %s / %s", tc.args, ue, err, tc.cmd, tc.synopsis, tc.msg)
		}
	}
}

func TestHelp(t *testing.T) {
	var out strings.Builder
	root := tree(new([]string))
	if err := root.Execute(t.Context(), &Env{Stdout: &out}, "tool", []string{"thing", "add", "--help"}); err != nil {
		t.Fatal(err)
	}
	want := "usage: tool thing add [flags] NAME\n\nAdd a thing.\n\nflags:\n  --n N  how many N (default 1)\n\nexamples:\n  tool thing add x\n"
	if out.String() != want {
		t.Errorf("help:\n%s\nwant:\n%s", out.String(), want)
	}
	out.Reset()
	root.PrintHelp(&out, "tool")
	if strings.Contains(out.String(), "secret") || !strings.Contains(out.String(), "  thing  things\n") {
		t.Errorf("a hidden command is listed or a visible one is not:\n%s", out.String())
	}
}

func TestTree(t *testing.T) {
	nodes := Tree(tree(new([]string)))
	var paths []string
	for _, n := range nodes {
		paths = append(paths, n.Path)
	}
	if strings.Join(paths, ",") != "tool,tool thing,tool thing add" {
		t.Fatalf("paths %q (the hidden command must not be offered)", paths)
	}
	add := nodes[2]
	if !add.Files || strings.Join(FlagNames(add.Flags, true), " ") != "--n" || strings.Join(FlagNames(add.Flags, false), " ") != "--n --help" {
		t.Errorf("leaf %+v", add)
	}
	for shell, gen := range Shells {
		var b strings.Builder
		gen(&b, nodes)
		if !strings.Contains(b.String(), "tool thing add") {
			t.Errorf("%s script does not name the leaf", shell)
		}
	}
}
