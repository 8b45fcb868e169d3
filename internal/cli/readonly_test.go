package cli

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// readOnlyCommands only look: run where there is nothing to look at, they
// say so (or print nothing) and leave no trace; the last few write, but
// fail on their command line before they do. DIR stands for the
// directory they run in.
var readOnlyCommands = [][]string{
	{"status"},
	{"status", "--json"},
	{"status", "20261202-000000-000000"},
	{"board", "runs"},
	{"board", "status"},
	{"board", "status", "20261202-000000-000000"},
	{"board", "runs", "--board", "local:DIR/nonexistent/dir/state.db"},
	{"board", "status", "--board", "local:DIR/nonexistent/dir/state.db"},
	{"hints", "list"},
	{"hints", "list", "--board", "local:DIR/nonexistent/dir/state.db"},
	{"hints", "approve", "overlap:go"},
	{"plan", "validate", "plan.yaml"},
	{"plan", "analyze", "plan.yaml"},
	{"gateway", "usage"},
	{"gateway", "key", "list"},
	{"gateway", "key", "revoke", "vk_4e0c1f9a7b2d"},
	{"escrow", "list"},
	{"escrow", "list", "--pending", "--json"},
	{"escrow", "approve", "3fa9c01b22d4-1"},
	{"escrow", "deny", "3fa9c01b22d4-1"},
	{"escrow", "check", "--", "git", "push"},
	{"review"},
	{"review", "--json"},
	{"review", "resolve", "20261202-000000-000000", "approve"},
	{"top", "--json"},
	{"top", "--count", "1"},
	{"cancel", "20261202-000000-000000"},
	{"reap", "--dry-run"},
	{"spawn", "child.json"},
	{"doctor", "--json", "--timeout", "5s"},
	{"version"},
	{"completion", "bash"},
	{"help", "run"},
	// Commands that write, refused before they write anything.
	{"run", "nope.yaml"},
	{"run", "--dash", ":99999", "plan.yaml"},
	{"run", "--resume", "20261202-000000-000000"},
	{"run", "--mode", "swarm", "--board", "nope:", "plan.yaml"},
	{"worker", "--profile", "claude", "--board", "nope:"},
	{"gateway", "--upstream", "a=http://127.0.0.1:1", "--listen", ":99999"},
	{"gateway", "key", "create"},
	{"mockllm", "--listen", ":99999"},
	{"demo", "--agent", "robot"},
	{"cap", "mint", "--key-file", "k", "--expires", "soon"},
}

// packagePrefix matches an error chain that reaches the user with one of
// our package names as a link ("apiary: swarm: no such run"): messages
// name what the user knows (the run, the board, the ledger), not where
// the code lives.
func packagePrefix(t *testing.T) *regexp.Regexp {
	entries, err := os.ReadDir("..")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() {
			names = append(names, regexp.QuoteMeta(e.Name()))
		}
	}
	if !slices.Contains(names, "swarm") {
		t.Fatalf("no package swarm among %v: run from internal/cli", names)
	}
	return regexp.MustCompile(`(^|: )(` + strings.Join(names, "|") + `): `)
}

// TestReadOnlyCommandsLeaveNoTrace runs each read-only command in a fresh
// directory — empty, a repository without commits, and one with a commit
// on main — with a HOME of its own, and checks that afterwards the
// directory holds nothing but what was there (nothing, or .git) and HOME
// nothing at all: no .apiary/, no board, no ledger, no lock file. What
// they print on stderr never names one of our packages.
func TestReadOnlyCommandsLeaveNoTrace(t *testing.T) {
	t.Parallel()
	envtestGit(t)
	path := apiaryOnPath(t)
	prefix := packagePrefix(t)
	kinds := []struct {
		name    string
		prepare [][]string // git commands run in the directory first
	}{
		{"empty dir", nil},
		{"fresh repo", [][]string{{"init", "--quiet", "--initial-branch=main"}}},
		{"repo with a commit", [][]string{{"init", "--quiet", "--initial-branch=main"}, {"commit", "--quiet", "--allow-empty", "-m", "first"}}},
	}
	for _, kind := range kinds {
		for _, args := range readOnlyCommands {
			t.Run(kind.name+"/"+strings.Join(args, " "), func(t *testing.T) {
				t.Parallel()
				dir, home := t.TempDir(), t.TempDir()
				for _, g := range kind.prepare {
					cmd := exec.CommandContext(t.Context(), "git", g...)
					cmd.Dir, cmd.Env = dir, append(os.Environ(), testGitEnv...)
					if out, err := cmd.CombinedOutput(); err != nil {
						t.Fatalf("git %v: %v\n%s", g, err, out)
					}
				}
				before := entries(t, dir)
				argv := make([]string, len(args))
				for i, a := range args {
					argv[i] = strings.ReplaceAll(a, "DIR", dir)
				}
				cmd := exec.CommandContext(t.Context(), "apiary", argv...)
				cmd.Dir = dir
				cmd.Env = append(os.Environ(), "PATH="+path, "HOME="+home, "XDG_STATE_HOME=", "XDG_CONFIG_HOME=", "XDG_CACHE_HOME=",
					"APIARY_CONTROL=", "APIARY_CAPABILITY=", "ANTHROPIC_BASE_URL=", "ANTHROPIC_API_KEY=", "APIARY_MODEL_KEY=")
				cmd.Stdin = strings.NewReader("")
				var stderr bytes.Buffer
				cmd.Stdout, cmd.Stderr = &bytes.Buffer{}, &stderr
				_ = cmd.Run() // most of them fail: there is nothing to look at
				if after := entries(t, dir); !slices.Equal(after, before) {
					t.Errorf("apiary %s left %q in the directory (had %q)", strings.Join(argv, " "), after, before)
				}
				if left := entries(t, home); len(left) > 0 {
					t.Errorf("apiary %s left %q in HOME", strings.Join(argv, " "), left)
				}
				for _, line := range strings.Split(stderr.String(), "\n") {
					if prefix.MatchString(line) {
						t.Errorf("apiary %s: stderr names a package: %q", strings.Join(argv, " "), line)
					}
				}
			})
		}
	}
}

// entries lists every path under dir but .git, relative to it.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Name() == ".git" {
			return filepath.SkipDir
		}
		if p != dir {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
