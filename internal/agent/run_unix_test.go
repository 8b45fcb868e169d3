//go:build linux

package agent

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apiary-dev/apiary/internal/proc"
)

// lingering is an agent that leaves a background child holding its
// stdout, a setsid daemon, and exits with its report on stdout.
const lingering = `sleep 300 & echo $! > pids
setsid sh -c 'echo $$ >> pids; exec sleep 300' &
while [ "$(wc -l < pids)" -lt 2 ]; do sleep 0.01; done
echo done`

// TestRunReapsLeaderAtOnce: the agent exits while a child of its still
// holds its stdout and a daemon of its left the process group. Run returns
// once the leader is gone and its stragglers have taken SIGTERM — not after
// the grace period (a minute here) — with both of them dead, the output
// read to the end and the stragglers counted; in a cgroup and in a marked
// process group.
func TestRunReapsLeaderAtOnce(t *testing.T) {
	t.Parallel()
	for _, noCg := range []bool{false, true} {
		tr, err := proc.New(proc.Options{Owner: "agent-test-" + strconv.Itoa(os.Getpid()), NoCgroup: noCg})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = tr.Close() })
		if !noCg && tr.Mode() != proc.ModeCgroup {
			continue
		}
		t.Run(tr.Mode(), func(t *testing.T) {
			dir := t.TempDir()
			s := Spec{Profile: Profile{Name: "sh", Kind: KindCommand, Argv: []string{"sh", "-c", lingering}},
				Dir: dir, Home: filepath.Join(dir, "home"), Log: filepath.Join(dir, "log"), Grace: time.Minute}
			start := time.Now()
			res, err := Run(proc.WithTracker(context.Background(), tr), s)
			took := time.Since(start)
			if err != nil {
				t.Fatal(err)
			}
			if took > 30*time.Second {
				t.Errorf("Run took %v: it waited out the grace period", took)
			}
			t.Logf("%s: Run returned after %v", tr.Mode(), took)
			if res.Exit != 0 || res.Stragglers != 2 {
				t.Errorf("exit %d, stragglers %d; want 0 and 2", res.Exit, res.Stragglers)
			}
			b, _ := os.ReadFile(filepath.Join(dir, "pids"))
			for _, f := range strings.Fields(string(b)) {
				pid, _ := strconv.Atoi(f)
				if st, err := os.ReadFile("/proc/" + f + "/stat"); err == nil {
					s := string(st)
					if i := strings.LastIndexByte(s, ')'); i > 0 && s[i+2] != 'Z' {
						t.Errorf("straggler %d outlived the attempt", pid)
					}
				}
			}
			if log, _ := os.ReadFile(s.Log); !strings.Contains(string(log), "done") {
				t.Errorf("the log misses the agent's output: %q", log)
			}
		})
	}
}

// BenchmarkAttemptLingering measures what a lingering child costs an
// attempt: the same command agent, once exiting cleanly and once leaving a
// background child that holds its stdout, run by Run in a cgroup and in a
// process group; and, as the baseline of the same run, the way Run worked
// before (exec.CommandContext with the output copied through a pipe and
// WaitDelay set to the grace period), which waited the whole grace for
// such a child. The added cost is lingering minus clean.
//
//	go test ./internal/agent -run '^$' -bench AttemptLingering -benchtime 20x
func BenchmarkAttemptLingering(b *testing.B) {
	const grace = 5 * time.Second
	cmds := map[string]string{"clean": "echo x", "lingering": "sleep 300 & echo x"}
	for _, mode := range []string{proc.ModeCgroup, proc.ModeGroup, "before"} {
		var tr *proc.Tracker
		if mode != "before" {
			var err error
			tr, err = proc.New(proc.Options{Owner: "bench-" + strconv.Itoa(os.Getpid()), NoCgroup: mode == proc.ModeGroup})
			if err != nil {
				b.Fatal(err)
			}
			if tr.Mode() != mode {
				b.Logf("no %s here", mode)
				continue
			}
			b.Cleanup(func() { _ = tr.Close() })
		}
		for _, kind := range []string{"clean", "lingering"} {
			b.Run(mode+"/"+kind, func(b *testing.B) {
				dir := b.TempDir()
				s := Spec{Profile: Profile{Name: "sh", Kind: KindCommand, Argv: []string{"sh", "-c", cmds[kind]}},
					Dir: dir, Home: filepath.Join(dir, "home"), Log: filepath.Join(dir, "log"), Grace: grace}
				ctx := proc.WithTracker(context.Background(), tr)
				for b.Loop() {
					if mode == "before" {
						runBefore(b, s)
						continue
					}
					if res, err := Run(ctx, s); err != nil || res.Exit != 0 {
						b.Fatalf("%+v %v", res, err)
					}
				}
			})
		}
	}
}

// runBefore is how Run waited for an agent before it reaped the leader at
// once: Wait returned only when the last holder of stdout let go, or after
// WaitDelay (the grace period), after which the group was killed.
func runBefore(b *testing.B, s Spec) {
	argv := s.Profile.Argv
	cmd := exec.CommandContext(b.Context(), argv[0], argv[1:]...)
	cmd.Dir = s.Dir
	var out strings.Builder
	cmd.Stdout = &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = s.Grace
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	_ = cmd.Wait()
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}
