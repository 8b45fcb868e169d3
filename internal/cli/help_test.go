package cli

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata")

// walk calls fn for every command in the tree with its full path.
func walk(c *command, path string, fn func(c *command, path string)) {
	fn(c, path)
	for _, s := range c.subs {
		walk(s, path+" "+s.name, fn)
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
			if c.summary == "" {
				t.Errorf("command %q has no summary", path)
			}
			if c.setup != nil {
				fs := newFlagSet(path)
				c.setup(fs)
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
