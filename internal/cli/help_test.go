package cli

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/apiary-dev/apiary/internal/cmdtree"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata")

var issueRef = regexp.MustCompile(`(?i)\bissues? #?[0-9]+`)

// walk calls fn for every command in the tree with its full path.
func walk(c *command, path string, fn func(c *command, path string)) {
	fn(c, path)
	for _, s := range c.Subs {
		walk(s, path+" "+s.Name, fn)
	}
}

// TestHelpGolden checks `apiary <cmd> --help` for every command against
// testdata/help/<cmd>.golden, and that every flag is documented.
func TestHelpGolden(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	walk(rootCommand(), "apiary", func(c *command, path string) {
		args := append(strings.Fields(path)[1:], "--help")
		name := strings.ReplaceAll(path, " ", "_") + ".golden"
		seen[name] = true
		t.Run(path, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			code := Main(context.Background(), args, strings.NewReader(""), &stdout, &stderr)
			if code != 0 || stderr.Len() > 0 {
				t.Fatalf("exit %d, stderr %q", code, stderr.String())
			}
			if c.Summary == "" {
				t.Errorf("command %q has no summary", path)
			}
			if m := issueRef.FindString(stdout.String()); m != "" {
				t.Errorf("help of %q cites %q: help speaks to users, who cannot see our tracker", path, m)
			}
			if c.Setup != nil {
				fs := cmdtree.NewFlagSet(path)
				c.Setup(fs)
				fs.VisitAll(func(f *flag.Flag) {
					if strings.TrimSpace(f.Usage) == "" {
						t.Errorf("flag --%s of %q is undocumented", f.Name, path)
					}
					if !strings.Contains(stdout.String(), "--"+f.Name) {
						t.Errorf("help of %q does not mention --%s", path, f.Name)
					}
				})
			}
			golden := filepath.Join("testdata", "help", name)
			if *update {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, stdout.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./internal/cli -run TestHelpGolden -update)", err)
			}
			if got := stdout.String(); got != string(want) {
				t.Errorf("help of %q changed; got:\n%s\nwant:\n%s\n(rerun with -update if intended)", path, got, want)
			}
		})
	})
	if *update {
		return
	}
	// A golden file for a command that no longer exists is stale.
	entries, _ := os.ReadDir(filepath.Join("testdata", "help"))
	for _, e := range entries {
		if !seen[e.Name()] {
			t.Errorf("stale golden file testdata/help/%s", e.Name())
		}
	}
}

// TestHelpExamples: every command shows one to three examples, each a
// command line that runs the command (or, for one that groups others, one
// of its subcommands) and that apiary parses: every
// "apiary ..." part of it (a pipeline may hold two) resolves to a command
// that runs, with flags that command declares, values its flags accept
// and no positional argument where the command takes none.
func TestHelpExamples(t *testing.T) {
	t.Parallel()
	root := rootCommand()
	walk(root, "apiary", func(c *command, path string) {
		if c.Hidden {
			return
		}
		if n := len(c.Examples); n < 1 || n > 3 {
			t.Errorf("%q has %d examples, want 1 to 3", path, n)
		}
		var help bytes.Buffer
		c.PrintHelp(&help, path)
		if len(c.Examples) > 0 && !strings.Contains(help.String(), "\nexamples:\n  "+c.Examples[0]+"\n") {
			t.Errorf("help of %q does not show its examples:\n%s", path, help.String())
		}
		for _, ex := range c.Examples {
			segs, err := splitCommandLine(ex)
			if err != nil {
				t.Errorf("%q example %q: %v", path, ex, err)
				continue
			}
			names := false
			for _, words := range segs {
				if len(words) == 0 || words[0] != "apiary" {
					continue
				}
				gotPath, err := parseExample(root, words)
				if err != nil {
					t.Errorf("%q example %q: %v", path, ex, err)
					continue
				}
				// A command that groups others is shown through them.
				names = names || gotPath == path || strings.HasPrefix(gotPath, path+" ")
			}
			if !names {
				t.Errorf("%q example %q does not run %s", path, ex, path)
			}
		}
	})
}

// parseExample resolves words ("apiary", ...) to a command the way
// execute does and parses its flags.
func parseExample(root *command, words []string) (string, error) {
	c, path, args := root, "apiary", words[1:]
	for len(c.Subs) > 0 && len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		sub := c.Lookup(args[0])
		if sub == nil {
			return "", fmt.Errorf("%s has no command %q", path, args[0])
		}
		c, path, args = sub, path+" "+sub.Name, args[1:]
	}
	if c.Setup == nil {
		return "", fmt.Errorf("%s needs a subcommand", path)
	}
	fs := cmdtree.NewFlagSet(path)
	c.Setup(fs)
	pos, err := cmdtree.ParseInterspersed(fs, args)
	if err != nil {
		return "", fmt.Errorf("%s: %v", path, err)
	}
	if c.Args == "" && len(pos) > 0 {
		return "", fmt.Errorf("%s takes no arguments, got %q", path, pos)
	}
	return path, nil
}

// splitCommandLine splits a shell command line into the words of each
// command of its pipeline, with quotes removed and redirections dropped
// ($VARIABLES stay as written).
func splitCommandLine(line string) ([][]string, error) {
	var segs [][]string
	var words []string
	var word strings.Builder
	inWord, redirect := false, false
	end := func() {
		if inWord {
			if !redirect {
				words = append(words, word.String())
			}
			redirect = false
		}
		word.Reset()
		inWord = false
	}
	for i := 0; i < len(line); i++ {
		switch ch := line[i]; ch {
		case ' ', '\t':
			end()
		case '|':
			end()
			segs, words = append(segs, words), nil
		case '>', '<':
			end()
			redirect = true
		case '\'', '"':
			j := strings.IndexByte(line[i+1:], ch)
			if j < 0 {
				return nil, fmt.Errorf("unterminated %c", ch)
			}
			word.WriteString(line[i+1 : i+1+j])
			inWord, i = true, i+1+j
		default:
			word.WriteByte(ch)
			inWord = true
		}
	}
	end()
	return append(segs, words), nil
}
