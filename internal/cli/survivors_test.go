//go:build unix

package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apiary-dev/apiary/internal/rundir"
	"github.com/apiary-dev/apiary/internal/runs"
)

// familyAgent leaves a whole family behind: a background child, a
// grandchild under an intermediate shell, and a daemon that called setsid,
// each pid in FLAGS/pids-TASK; then it waits. Released, it just works.
const familyAgent = `set -e
if [ -e "$FLAGS/release" ]; then echo "$APIARY_TASK" > "$APIARY_TASK.txt"; exit 0; fi
sleep 1000 &
echo $! >> "$FLAGS/pids-$APIARY_TASK"
sh -c 'sleep 1000 & echo $! >> "$FLAGS/pids-$APIARY_TASK"; wait' &
setsid sh -c 'echo $$ >> "$FLAGS/pids-$APIARY_TASK"; exec sleep 1000' &
while [ "$(wc -l < "$FLAGS/pids-$APIARY_TASK")" -lt 3 ]; do sleep 0.01; done
touch "$FLAGS/started-$APIARY_TASK"
wait
`

// slowCheck is a check that, until released, starts a background child,
// says so and waits. FLAGS is written into it (a check runs with apiary's
// environment, which differs between the killed run and the resume).
const slowCheck = `FLAGS=%s
if [ -e "$FLAGS/release" ]; then exit 0; fi
sleep 1000 &
echo $! >> "$FLAGS/pids-check"
touch "$FLAGS/started-check"
wait
`

// runProcesses lists the live processes (not zombies) that carry run's
// marker in their environment.
func runProcesses(run string) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil || !bytes.Contains(env, []byte("APIARY_RUN_ID="+run+"\x00")) {
			continue
		}
		if pidAlive(pid) {
			out = append(out, pid)
		}
	}
	return out
}

func pidAlive(pid int) bool {
	st, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(st, ')')
	return i > 0 && i+2 < len(st) && st[i+2] != 'Z' && st[i+2] != 'X'
}

func pidsIn(t *testing.T, file string) []int {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		n, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		out = append(out, n)
	}
	return out
}

// TestKilledRunLeavesNoProcess runs `apiary run` as a real process and
// kills it with SIGKILL while task a's agent has a child, a grandchild and
// a setsid daemon, and task b's check is running with a child of its own.
// All of them outlive apiary (nothing but apiary knew them); then, in one
// case `apiary run --resume` and in the other `apiary reap`, ends every one
// of them — in a cgroup per scope where the machine allows it, and in
// marked process groups — and the resumed run completes with no process of
// the run left.
func TestKilledRunLeavesNoProcess(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		flags []string
		after string // "resume" or "reap"
	}{
		{"cgroup/resume", nil, "resume"},
		{"cgroup/reap", nil, "reap"},
		{"pgroup/resume", []string{"--process-groups"}, "resume"},
		{"pgroup/reap", []string{"--process-groups"}, "reap"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			repoDir, flags := filepath.Join(dir, "repo"), filepath.Join(dir, "flags")
			gitInit(t, repoDir)
			if err := os.Mkdir(flags, 0o755); err != nil {
				t.Fatal(err)
			}
			script, check := filepath.Join(dir, "agent.sh"), filepath.Join(dir, "check.sh")
			planPath := filepath.Join(dir, "plan.yaml")
			plan := `version: 1
max_parallel: 2
agents:
  sh: {kind: command, argv: [sh, "` + script + `"], env: {FLAGS: "` + flags + `"}}
  quick: {kind: command, argv: [sh, -c, "echo b > b.txt"]}
tasks:
  - {id: a, objective: a, agent: sh, write_scope: [a.txt]}
  - {id: b, objective: b, agent: quick, write_scope: [b.txt], checks: ["sh ` + check + `"]}
`
			for p, s := range map[string]string{script: familyAgent, check: fmt.Sprintf(slowCheck, flags), planPath: plan} {
				if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			args := append([]string{"run", "--repo", repoDir}, c.flags...)
			cmd := exec.Command(exe, append(args, planPath)...)
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
			var runID string
			t.Cleanup(func() {
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
				for _, pid := range runProcesses(runID) { // whatever a failure left
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			})
			waitFor(t, time.Minute, func() bool {
				ids, _ := rundir.List(repoDir)
				if len(ids) != 1 {
					return false
				}
				runID = ids[0]
				for _, f := range []string{"started-a", "started-check"} {
					if _, err := os.Stat(filepath.Join(flags, f)); err != nil {
						return false
					}
				}
				return true
			}, logPath)
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			_ = cmd.Wait()
			family := append(pidsIn(t, filepath.Join(flags, "pids-a")), pidsIn(t, filepath.Join(flags, "pids-check"))...)
			for _, pid := range family {
				if !pidAlive(pid) {
					t.Fatalf("%d did not outlive apiary: nothing here to find", pid)
				}
			}
			if len(runProcesses(runID)) < len(family) {
				t.Fatalf("the run's processes %v do not include all of %v", runProcesses(runID), family)
			}
			if err := os.WriteFile(filepath.Join(flags, "release"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			var stdout, stderr bytes.Buffer
			switch c.after {
			case "resume":
				code := Main(t.Context(), append([]string{"run", "--resume", runID, "--repo", repoDir, "--json"}, c.flags...), strings.NewReader(""), &stdout, &stderr)
				var rep runs.Report
				if err := json.Unmarshal(stdout.Bytes(), &rep); code != 0 || err != nil || !rep.OK() {
					t.Fatalf("resume: exit %d, %v\n%s\n%s", code, err, stdout.String(), stderr.String())
				}
				evs, _, _ := rundir.Open(repoDir, runID).Events()
				killed := 0
				for _, ev := range evs {
					if ev.Kind == rundir.EvProcessesReaped {
						killed += ev.Tasks
					}
				}
				if killed < len(family) {
					t.Errorf("the resume reports %d processes killed, want at least %d", killed, len(family))
				}
			case "reap":
				if code := Main(t.Context(), []string{"reap", "--repo", repoDir, "--grace", "1ns"}, strings.NewReader(""), &stdout, &stderr); code != 0 {
					t.Fatalf("reap: exit %d\n%s\n%s", code, stdout.String(), stderr.String())
				}
				if !strings.Contains(stdout.String(), "removed process ") {
					t.Errorf("reap removed no process:\n%s", stdout.String())
				}
			}
			for _, pid := range family {
				if pidAlive(pid) {
					t.Errorf("process %d of the killed run survived the %s", pid, c.after)
				}
			}
			if ps := runProcesses(runID); len(ps) > 0 {
				t.Errorf("processes of run %s left after the %s: %v", runID, c.after, ps)
			}
		})
	}
}
