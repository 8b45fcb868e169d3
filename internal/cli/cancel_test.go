package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/git"
	"github.com/apiary-dev/apiary/internal/rundir"
	"github.com/apiary-dev/apiary/internal/runs"
)

// cancelAgent says it started, leaves a background process in its
// process group (its pid in FLAGS) and waits.
const cancelAgent = `set -e
sleep 1000 &
echo $! > "$FLAGS/pid-$APIARY_TASK"
touch "$FLAGS/started-$APIARY_TASK"
wait
`

// TestCancelOtherProcess runs `apiary run` as a real process and cancels
// one of its tasks, then the rest of it, with `apiary cancel` from this
// one: the cancelled task's processes are gone when the command returns,
// its receipt says cancelled with the reason, the other task runs on
// until the run is cancelled; the run then ends with nothing left behind,
// and `apiary reap --dry-run` finds nothing to remove.
func TestCancelOtherProcess(t *testing.T) {
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
	scripts := map[string]string{"a": filepath.Join(dir, "agent-a.sh"), "b": filepath.Join(dir, "agent-b.sh")}
	planPath := filepath.Join(dir, "plan.yaml")
	plan := `version: 1
agents:
  a: {kind: command, argv: [sh, "` + scripts["a"] + `"], env: {FLAGS: "` + flags + `"}}
  b: {kind: command, argv: [sh, "` + scripts["b"] + `"], env: {FLAGS: "` + flags + `"}}
tasks:
  - {id: a, objective: a, agent: a, write_scope: [a.txt]}
  - {id: b, objective: b, agent: b, write_scope: [b.txt]}
`
	for p, c := range map[string]string{scripts["a"]: cancelAgent, scripts["b"]: cancelAgent, planPath: plan} {
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.CommandContext(t.Context(), exe, "run", "--repo", repoDir, planPath)
	cmd.Args[0] = "apiary"
	cmd.Env = append(os.Environ(), testGitEnv...)
	logPath := filepath.Join(dir, "run.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	var runID string
	waitFor(t, time.Minute, func() bool {
		ids, _ := rundir.List(repoDir)
		if len(ids) != 1 {
			return false
		}
		runID = ids[0]
		_, errA := os.Stat(filepath.Join(flags, "started-a"))
		_, errB := os.Stat(filepath.Join(flags, "started-b"))
		return errA == nil && errB == nil
	}, logPath)
	bgPid := func(task string) int {
		b, _ := os.ReadFile(filepath.Join(flags, "pid-"+task))
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		return pid
	}
	alive := func(task string) bool {
		for _, p := range append(processesRunning(t, scripts[task]), strconv.Itoa(bgPid(task))) {
			st, err := os.ReadFile("/proc/" + p + "/stat")
			if i := bytes.LastIndexByte(st, ')'); err == nil && i > 0 && i+2 < len(st) && st[i+2] != 'Z' {
				return true // a zombie is dead, waiting for its parent
			}
		}
		return false
	}

	var out, errb bytes.Buffer
	if code := Main(t.Context(), []string{"cancel", "--repo", repoDir, "--json", "--reason", "not needed", runID, "a"}, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("cancel a: exit %d: %s %s", code, out.String(), errb.String())
	}
	var res runs.CancelResult
	if err := json.Unmarshal(out.Bytes(), &res); err != nil || !slices.Equal(res.Cancelled, []string{"a"}) {
		t.Fatalf("cancel a: %v %s", err, out.String())
	}
	if alive("a") {
		t.Error("a's agent outlived its acknowledged cancellation")
	}
	rc := readReceipt(t, repoDir, runID, "a")
	if rc.Status != envelope.StatusCancelled || !strings.Contains(rc.Reason, "not needed") {
		t.Errorf("a's receipt: %s %q", rc.Status, rc.Reason)
	}
	if !alive("b") {
		t.Error("b was stopped by a's cancellation")
	}

	out.Reset()
	if code := Main(t.Context(), []string{"cancel", "--repo", repoDir, runID}, strings.NewReader(""), &out, &errb); code != 0 {
		lb, _ := os.ReadFile(logPath)
		t.Fatalf("cancel the run: exit %d: %s %s\n%s", code, out.String(), errb.String(), lb)
	}
	if !strings.Contains(out.String(), "cancelled run "+runID+": 1 task(s) [b]") {
		t.Errorf("cancel the run: %q", out.String())
	}
	select {
	case err := <-exited:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() == 0 {
			t.Errorf("the cancelled run exited with %v", err)
		}
		exited <- err // for the cleanup
	case <-time.After(time.Minute):
		t.Fatal("the cancelled run did not end")
	}
	if alive("b") {
		t.Error("b's agent outlived the run's cancellation")
	}
	if rc := readReceipt(t, repoDir, runID, "b"); rc.Status != envelope.StatusCancelled {
		t.Errorf("b's receipt: %s", rc.Status)
	}
	if wts, _ := git.New(repoDir, git.Options{}).Worktrees(t.Context()); len(wts) != 1 {
		t.Errorf("worktrees left: %+v", wts)
	}
	out.Reset()
	if code := Main(t.Context(), []string{"reap", "--repo", repoDir, "--dry-run", "--grace", "1ns", "--json"}, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("reap: exit %d: %s", code, errb.String())
	}
	var removals []map[string]any
	if err := json.Unmarshal(out.Bytes(), &removals); err != nil || len(removals) != 0 {
		t.Errorf("the cancelled run left something to reap: %v %s", err, out.String())
	}
	// The run has finished: nothing to cancel, exit status 1; likewise for
	// a run that does not exist.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{runID}, "has finished (cancelled)"},
		{[]string{runID, "b"}, "has finished (cancelled)"},
		{[]string{"20200101-000000-abcdef"}, "no run 20200101-000000-abcdef"},
	} {
		out.Reset()
		errb.Reset()
		code := Main(t.Context(), append([]string{"cancel", "--repo", repoDir}, c.args...), strings.NewReader(""), &out, &errb)
		if code != 1 || !strings.Contains(errb.String(), c.want) {
			t.Errorf("cancel %v: exit %d, %q; want 1 and %q", c.args, code, errb.String(), c.want)
		}
	}
}

func readReceipt(t *testing.T, repoDir, run, task string) *envelope.Receipt {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(rundir.Path(repoDir, run), "tasks", task, "receipt.json"))
	if err != nil {
		t.Fatal(err)
	}
	rc, err := envelope.DecodeReceipt(b)
	if err != nil {
		t.Fatal(err)
	}
	return rc
}
