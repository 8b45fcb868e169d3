package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/envtest"
	"github.com/apiary-dev/apiary/internal/git"
	"github.com/apiary-dev/apiary/internal/rundir"
	"github.com/apiary-dev/apiary/internal/runs"
)

var testGitEnv = []string{"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
	"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@apiary.invalid", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@apiary.invalid"}

// gitInit makes a repository on main with one commit.
func gitInit(t *testing.T, dir string) {
	t.Helper()
	envtest.Command(t, "git")
	for _, args := range [][]string{{"init", "--quiet", "--initial-branch=main", dir}, {"-C", dir, "commit", "--quiet", "--allow-empty", "-m", "initial"}} {
		cmd := exec.Command("git", args...)
		cmd.Env = append(os.Environ(), testGitEnv...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
}

// killAgent: a and b finish at once; c and d say they started and wait to
// be released; e needs c.
const killAgent = `set -e
case "$APIARY_TASK" in
c|d)
  touch "$FLAGS/started-$APIARY_TASK"
  while [ ! -e "$FLAGS/release" ]; do sleep 0.02; done
  ;;
esac
echo "$APIARY_TASK" > "$APIARY_TASK.txt"
`

// TestRunKillResume runs `apiary run` as a real process, kills it with
// SIGKILL after a and b are integrated while c and d are in flight, and
// resumes it: every task completes exactly once, by the branch's trailers
// and the receipts, and nothing the killed run left behind remains.
func TestRunKillResume(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	repoDir, flags := filepath.Join(dir, "repo"), filepath.Join(dir, "flags")
	gitInit(t, repoDir)
	if err := os.Mkdir(flags, 0o755); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "agent.sh")
	planPath := filepath.Join(dir, "plan.yaml")
	plan := `version: 1
max_parallel: 4
agents:
  sh: {kind: command, argv: [sh, "` + script + `"], env: {FLAGS: "` + flags + `"}}
tasks:
  - {id: a, objective: a, agent: sh, write_scope: [a.txt]}
  - {id: b, objective: b, agent: sh, write_scope: [b.txt]}
  - {id: c, objective: c, agent: sh, write_scope: [c.txt]}
  - {id: d, objective: d, agent: sh, write_scope: [d.txt]}
  - {id: e, objective: e, agent: sh, write_scope: [e.txt], deps: [c]}
`
	for p, c := range map[string]string{script: killAgent, planPath: plan} {
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The test binary runs the apiary command when argv[0] is "apiary".
	cmd := exec.Command(exe, "run", "--repo", repoDir, planPath)
	cmd.Args[0] = "apiary"
	cmd.Env = append(os.Environ(), testGitEnv...)
	logf, err := os.Create(filepath.Join(dir, "run.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	var runID string
	waitFor(t, 2*time.Minute, func() bool {
		ids, _ := rundir.List(repoDir)
		if len(ids) != 1 {
			return false
		}
		runID = ids[0]
		for _, f := range []string{filepath.Join(rundir.Path(repoDir, runID), "tasks", "a", "receipt.json"),
			filepath.Join(rundir.Path(repoDir, runID), "tasks", "b", "receipt.json"),
			filepath.Join(flags, "started-c"), filepath.Join(flags, "started-d")} {
			if _, err := os.Stat(f); err != nil {
				return false
			}
		}
		return true
	}, logf.Name())
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	// The agents die with the process that started them.
	waitFor(t, 10*time.Second, func() bool { return len(processesRunning(t, script)) == 0 }, logf.Name())
	// The killed run left c's and d's attempts behind, without receipts.
	for _, task := range []string{"c", "d"} {
		if _, err := os.Stat(filepath.Join(rundir.Path(repoDir, runID), "tasks", task, "receipt.json")); err == nil {
			t.Fatalf("%s has a receipt before the resume", task)
		}
		if _, err := os.Stat(rundir.State(repoDir, "worktrees", runID, task+"-1")); err != nil {
			t.Errorf("expected %s's worktree to be left by the kill: %v", task, err)
		}
	}
	// status reads the killed run from disk: no process holds it any more.
	var st bytes.Buffer
	if code := Main(t.Context(), []string{"status", "--repo", repoDir, "--json", runID}, strings.NewReader(""), &st, &st); code != 0 {
		t.Fatalf("status: exit %d: %s", code, st.String())
	}
	var killed runs.Report
	if err := json.Unmarshal(st.Bytes(), &killed); err != nil || killed.Status != "interrupted" ||
		killed.Task("a").Status != "succeeded" || killed.Task("c").Status != "cancelled" {
		t.Errorf("status of the killed run: %v %s", err, st.String())
	}
	// Cancelling what the killed run does not have, or has finished, is
	// refused with exit status 1 and nothing recorded.
	for task, want := range map[string]string{"nope": `no task "nope"`, "a": "task a has already finished: succeeded"} {
		var out, errb bytes.Buffer
		if code := Main(t.Context(), []string{"cancel", "--repo", repoDir, runID, task}, strings.NewReader(""), &out, &errb); code != 1 || !strings.Contains(errb.String(), want) {
			t.Errorf("cancel %s of the killed run: exit %d, %q; want 1 and %q", task, code, errb.String(), want)
		}
	}
	if recs, _ := filepath.Glob(filepath.Join(rundir.Path(repoDir, runID), "cancel", "*.json")); len(recs) != 0 {
		t.Errorf("refused cancellations were recorded: %v", recs)
	}
	if err := os.WriteFile(filepath.Join(flags, "release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := Main(t.Context(), []string{"run", "--resume", runID, "--repo", repoDir, "--json"}, strings.NewReader(""), &stdout, &stderr); code != 0 {
		t.Fatalf("resume: exit %d\n%s\n%s", code, stdout.String(), stderr.String())
	}
	var rep runs.Report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil || !rep.OK() {
		t.Fatalf("resume report %v: %s", err, stdout.String())
	}
	ctx := t.Context()
	repo := git.New(repoDir, git.Options{})
	log, err := repo.FirstParentLog(ctx, rep.StartHead, "main")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, e := range log {
		task, _ := git.TrailerValue(e.Trailers, git.TrailerTask)
		seen[task]++
	}
	for _, task := range []string{"a", "b", "c", "d", "e"} {
		if seen[task] != 1 {
			t.Errorf("%s is on the branch %d times (%v)", task, seen[task], seen)
		}
		b, err := os.ReadFile(filepath.Join(rundir.Path(repoDir, runID), "tasks", task, "receipt.json"))
		if err != nil {
			t.Fatal(err)
		}
		rc, err := envelope.DecodeReceipt(b)
		wantAttempt := 1
		if task == "c" || task == "d" {
			wantAttempt = 2 // re-run after the kill
		}
		if err != nil || rc.Status != envelope.StatusSucceeded || rc.Attempt != wantAttempt {
			t.Errorf("%s receipt %+v, %v; want attempt %d", task, rc, err, wantAttempt)
		}
	}
	if len(seen) != 5 {
		t.Errorf("integrations %v", seen)
	}
	if wts, _ := repo.Worktrees(ctx); len(wts) != 1 {
		t.Errorf("worktrees left: %+v", wts)
	}
	if bs, err := exec.Command("git", "-C", repoDir, "branch", "--list", "apiary/*").Output(); err != nil || len(bytes.TrimSpace(bs)) > 0 {
		t.Errorf("branches left: %s %v", bs, err)
	}
}

// waitFor polls an observable condition of other processes until it holds.
func waitFor(t *testing.T, limit time.Duration, cond func() bool, logPath string) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			out, _ := os.ReadFile(logPath)
			t.Fatalf("condition not reached in %v; output so far:\n%s", limit, out)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// processesRunning lists the pids whose command line mentions s.
func processesRunning(t *testing.T, s string) []string {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Skip("no /proc")
	}
	var out []string
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(b, []byte(s)) {
			out = append(out, e.Name())
		}
	}
	return out
}
