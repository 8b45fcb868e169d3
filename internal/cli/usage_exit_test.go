package cli

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apiary-dev/apiary/internal/cmdtree"
)

// usageCase is one wrong command line and what its usage error must name.
type usageCase struct {
	name string
	args []string
	// names are strings stderr must hold besides the command's usage line:
	// the flag or argument the mistake is about.
	names []string
	path  string // the command whose usage stderr must show
}

// badValue is a value flag's parser rejects for the flag types the flag
// package parses itself; "" for a type whose values are checked by the
// command (strings, lists), which handUsageCases covers.
func badValue(f *flag.Flag) string {
	switch fmt.Sprintf("%T", f.Value) {
	case "*flag.intValue", "*flag.int64Value", "*flag.uintValue", "*flag.uint64Value", "*flag.float64Value":
		return "12abc"
	case "*flag.durationValue":
		return "12abc"
	case "*flag.boolValue":
		return "maybe"
	}
	return ""
}

// treeUsageCases derives from the command tree, for every command: an
// unknown flag; every numeric, duration and bool flag given a value it
// cannot parse; and, for a command with a required argument, none.
func treeUsageCases() []usageCase {
	var cases []usageCase
	walk(rootCommand(), "apiary", func(c *command, path string) {
		words := strings.Fields(path)[1:]
		with := func(extra ...string) []string { return append(append([]string{}, words...), extra...) }
		cases = append(cases, usageCase{"unknown flag", with("--no-such-flag"), []string{"unknown flag --no-such-flag"}, path})
		if c.Setup == nil {
			return
		}
		fs := cmdtree.NewFlagSet(path)
		c.Setup(fs)
		fs.VisitAll(func(f *flag.Flag) {
			if v := badValue(f); v != "" {
				cases = append(cases, usageCase{"bad --" + f.Name, with("--" + f.Name + "=" + v), []string{`invalid value "` + v + `" for flag --` + f.Name}, path})
			}
		})
		if req := requiredArg(c.Args); req != "" {
			cases = append(cases, usageCase{"missing " + req, with(), []string{req}, path})
		}
	})
	return cases
}

// requiredArg is the first required positional argument of a synopsis
// ("RUN_ID [TASK]" → "RUN_ID"), "" when every argument is optional.
func requiredArg(synopsis string) string {
	for _, w := range strings.Fields(synopsis) {
		switch {
		case w == "--" || w == "<command>":
			continue
		case strings.HasPrefix(w, "["):
			return ""
		}
		return strings.TrimSuffix(w, "...")
	}
	return ""
}

// handUsageCases are flag values only the command can judge (an address,
// a DSN, a name from a set): each is a usage error naming the flag, found
// before the command does anything.
var handUsageCases = []usageCase{
	{"port out of range", []string{"gateway", "--upstream", "a=http://127.0.0.1:1", "--listen", ":99999"}, []string{"--listen", ":99999"}, "apiary gateway"},
	{"port out of range", []string{"mockllm", "--listen", ":99999"}, []string{"--listen"}, "apiary mockllm"},
	{"port out of range", []string{"dash", "--listen", ":99999"}, []string{"--listen"}, "apiary dash"},
	{"port out of range", []string{"mcp", "--root", ".", "--listen", "127.0.0.1:99999"}, []string{"--listen"}, "apiary mcp"},
	{"port out of range", []string{"gateway", "--upstream", "a=http://127.0.0.1:1", "--dash", ":99999"}, []string{"--dash"}, "apiary gateway"},
	{"port out of range", []string{"demo", "--agent", "command", "--dash", ":99999"}, []string{"--dash"}, "apiary demo"},
	{"port out of range", []string{"worker", "--profile", "claude", "--dash", ":99999"}, []string{"--dash"}, "apiary worker"},
	{"bad upstream", []string{"gateway", "--upstream", "nourl"}, []string{"--upstream"}, "apiary gateway"},
	{"bad log level", []string{"gateway", "--upstream", "a=http://127.0.0.1:1", "--log-level", "loud"}, []string{"--log-level"}, "apiary gateway"},
	{"bad group", []string{"gateway", "usage", "--by", "color"}, []string{"--by"}, "apiary gateway usage"},
	{"bad format", []string{"mockllm", "--format", "grpc"}, []string{"format"}, "apiary mockllm"},
	{"bad window", []string{"mockllm", "--window", "sliding"}, []string{"window"}, "apiary mockllm"},
	{"bad board", []string{"board", "runs", "--board", "nope:x"}, []string{"--board"}, "apiary board runs"},
	{"bad board", []string{"board", "status", "--board", "nope:x"}, []string{"--board"}, "apiary board status"},
	{"bad board", []string{"hints", "list", "--board", "nope:x"}, []string{"--board"}, "apiary hints list"},
	{"bad state", []string{"hints", "list", "--state", "maybe"}, []string{"--state"}, "apiary hints list"},
	{"bad gateway", []string{"top", "--gateway", "ftp://x"}, []string{"--gateway"}, "apiary top"},
	{"bad gateway", []string{"dash", "--gateway", "ftp://x"}, []string{"--gateway"}, "apiary dash"},
	{"bad agent", []string{"demo", "--agent", "robot"}, []string{"--agent"}, "apiary demo"},
	{"bad expiry", []string{"cap", "mint", "--key-file", "k", "--expires", "soon"}, []string{"--expires"}, "apiary cap mint"},
	{"bad mode", []string{"run", "--mode", "mob", "plan.yaml"}, []string{"--mode"}, "apiary run"},
	{"bad kind", []string{"escrow", "check", "--kind", "spell", "--", "x"}, []string{"--kind"}, "apiary escrow check"},
	{"bad shell", []string{"completion", "tcsh"}, []string{"tcsh"}, "apiary completion"},
	{"bad method", []string{"sim", "hedge", "--median-s", "60", "--p90-s", "180", "--hedge-at", "0.9", "--method", "guess"}, []string{"--method"}, "apiary sim hedge"},
}

// TestUsageErrorsExit2 runs every command with an unknown flag, every
// parsed flag with a bad value, every command with a required argument
// without it, and the hand cases, each in an empty directory of its own
// with a HOME of its own: each exits 2 (the README: usage errors exit 2)
// with stderr naming the mistake, pointing at the command's --help and
// showing its usage line.
func TestUsageErrorsExit2(t *testing.T) {
	t.Parallel()
	path := apiaryOnPath(t)
	root := rootCommand()
	cases := append(treeUsageCases(), handUsageCases...)
	for _, tc := range cases {
		t.Run(tc.path+"/"+tc.name, func(t *testing.T) {
			t.Parallel()
			c := root
			for _, w := range strings.Fields(tc.path)[1:] {
				c = c.Lookup(w)
			}
			dir, home := t.TempDir(), t.TempDir()
			cmd := exec.CommandContext(t.Context(), "apiary", tc.args...)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "PATH="+path, "HOME="+home, "XDG_STATE_HOME="+filepath.Join(home, "state"), "APIARY_CONTROL=")
			cmd.Stdin = strings.NewReader("")
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != exitUsage {
				t.Fatalf("apiary %s: %v, want exit status 2; stderr:\n%s", strings.Join(tc.args, " "), err, stderr.String())
			}
			got := stderr.String()
			want := append([]string{
				tc.path + ": ",
				"(run '" + tc.path + " --help' for usage)",
				"\nusage: " + c.Synopsis(tc.path) + "\n",
			}, tc.names...)
			for _, w := range want {
				if !strings.Contains(got, w) {
					t.Errorf("apiary %s: stderr does not say %q:\n%s", strings.Join(tc.args, " "), w, got)
				}
			}
		})
	}
}

// TestUsageErrorInProcess: Main itself (not only the binary) maps a flag
// error to 2 and writes nothing to stdout.
func TestUsageErrorInProcess(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	code := Main(context.Background(), []string{"plan", "analyze", "--workers", "four", "p.yaml"}, strings.NewReader(""), &stdout, &stderr)
	if code != exitUsage || stdout.Len() > 0 {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout.String(), stderr.String())
	}
	want := "apiary plan analyze: invalid value \"four\" for flag --workers: parse error (run 'apiary plan analyze --help' for usage)\nusage: apiary plan analyze [flags] PLAN\n"
	if stderr.String() != want {
		t.Errorf("stderr:\n%s\nwant:\n%s", stderr.String(), want)
	}
}
