package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apiary-dev/apiary/internal/runs"
)

// TestRunCheckoutNotSynced: the agent edits, in the main checkout, the
// very file the run changes (the user's local modification, made while
// the run goes on). Every task succeeds, but the sync must not clobber the
// edit, so the checkout is not brought along: `apiary run` exits 1, its
// report says so, and its last line says why and how to finish; the
// user's file is kept and nothing shows as staged.
func TestRunCheckoutNotSynced(t *testing.T) {
	t.Parallel()
	for _, asJSON := range []bool{false, true} {
		name := "text"
		if asJSON {
			name = "json"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			repoDir, planPath := filepath.Join(dir, "repo"), filepath.Join(dir, "plan.yaml")
			gitInit(t, repoDir)
			if err := os.WriteFile(filepath.Join(repoDir, "a.txt"), []byte("a\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			gitIn(t, repoDir, "add", "a.txt")
			gitIn(t, repoDir, "commit", "--quiet", "-m", "a")
			plan := `version: 1
agents:
  sh: {kind: command, argv: [sh, -c, 'echo changed > a.txt; echo mine > "$MAIN/a.txt"'], env: {MAIN: "` + repoDir + `"}}
tasks:
  - {id: a, objective: a, agent: sh, write_scope: [a.txt]}
`
			if err := os.WriteFile(planPath, []byte(plan), 0o644); err != nil {
				t.Fatal(err)
			}
			args := []string{"run", "--repo", repoDir, planPath}
			if asJSON {
				args = append(args, "--json")
			}
			var stdout, stderr bytes.Buffer
			code := Main(t.Context(), args, strings.NewReader(""), &stdout, &stderr)
			if code != exitFailure {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, exitFailure, stdout.String(), stderr.String())
			}
			if asJSON {
				var rep runs.Report
				if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil || !rep.OK() || rep.Checkout == nil || rep.Checkout.Synced {
					t.Errorf("report: %v, checkout %+v\n%s", err, rep.Checkout, stdout.String())
				}
			} else if out := stdout.String(); !strings.Contains(out, ": succeeded — 1 of 1 tasks succeeded") || !strings.Contains(out, "checkout: NOT brought along") {
				t.Errorf("the report does not say the run succeeded but the checkout was not brought along:\n%s", out)
			}
			lines := strings.Split(strings.TrimRight(stderr.String(), "\n"), "\n")
			last := lines[len(lines)-1]
			if !strings.HasPrefix(last, "apiary: the checkout of main was not brought to the run's work: ") ||
				!strings.Contains(last, "a.txt") || !strings.Contains(last, "to finish: ") || !strings.Contains(last, "git checkout main") {
				t.Errorf("last line of stderr: %q", last)
			}
			if b, _ := os.ReadFile(filepath.Join(repoDir, "a.txt")); string(b) != "mine\n" {
				t.Errorf("the user's edit was clobbered: %q", b)
			}
			if out := gitIn(t, repoDir, "status", "--porcelain", "--untracked-files=no"); strings.TrimSpace(out) != "M a.txt" {
				t.Errorf("git status = %q, want only the unstaged edit of a.txt", out)
			}
			if got := gitIn(t, repoDir, "show", "main:a.txt"); got != "changed\n" {
				t.Errorf("the branch lost the run's work: %q", got)
			}
		})
	}
}

// gitIn runs git in dir with the tests' environment and returns its output.
func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), testGitEnv...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %v: %v", args, err)
	}
	return string(out)
}
