//go:build unix

package gate

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apiary-dev/apiary/internal/git/gittest"
)

// readPID reads a pid a check wrote.
func readPID(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// gone waits until pid no longer exists (the kernel may take a moment to
// reap a killed process that was reparented to init).
func gone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("process %d outlived its check", pid)
		}
		time.Sleep(10 * time.Millisecond) // polling another process's exit
	}
}

func TestRunCheck(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tests := []struct {
		name     string
		command  string
		timeout  time.Duration
		exit     int
		timedOut bool
		inLog    string
	}{
		{"passes", "echo hello from $PWD", 0, 0, false, "hello from " + dir},
		{"fails", "echo ok; echo 'FAIL: TestX' >&2; exit 3", 0, 3, false, "FAIL: TestX"},
		{"times out", "echo started; sleep 30", 200 * time.Millisecond, -1, true, "killed after the 200ms timeout"},
		{"stdin is closed", "read x; echo read=$?", 0, 0, false, "read=1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			log := filepath.Join(t.TempDir(), "logs", "check.log")
			res, err := RunCheck(t.Context(), CheckCommand{Command: tt.command, Dir: dir, Timeout: tt.timeout, Log: log})
			if err != nil {
				t.Fatal(err)
			}
			if res.Exit != tt.exit || res.TimedOut != tt.timedOut || res.Log != log || res.Command != tt.command {
				t.Errorf("result %+v", res)
			}
			b, _ := os.ReadFile(log)
			if !strings.Contains(string(b), tt.inLog) || !strings.HasPrefix(string(b), "$ "+tt.command+"\n") {
				t.Errorf("log %q lacks %q", b, tt.inLog)
			}
		})
	}
}

// TestRunCheckKillsGroup: a timed-out check's grandchildren die with it, and
// background processes a passing check leaves behind are killed too.
func TestRunCheckKillsGroup(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name    string
		command string
		timeout time.Duration
	}{
		{"timeout", "sleep 300 & echo $! > pid; wait", 300 * time.Millisecond},
		{"straggler", "sleep 300 > /dev/null 2>&1 & echo $! > pid; exit 0", 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			res, err := RunCheck(t.Context(), CheckCommand{Command: tt.command, Dir: dir, Timeout: tt.timeout, Log: filepath.Join(dir, "log")})
			if err != nil {
				t.Fatal(err)
			}
			if tt.timeout > 0 != res.TimedOut {
				t.Errorf("result %+v", res)
			}
			gone(t, readPID(t, filepath.Join(dir, "pid")))
		})
	}
}

func TestRunCheckCancelled(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx, cancel := contextWithCancel(t)
	cancel()
	if _, err := RunCheck(ctx, CheckCommand{Command: "true", Dir: dir, Log: filepath.Join(dir, "log")}); err == nil {
		t.Error("a cancelled context ran the check")
	}
}

// TestRunWithChecks: checks run in the candidate's scratch worktree after the
// static gates pass; a failing check is a typed reason pointing into its
// log; checks are skipped when a static gate already failed.
func TestRunWithChecks(t *testing.T) {
	t.Parallel()
	r, b := repoWith(t, map[string]string{"src/a.txt": "a\n"})
	c := gittest.Commit(t, r, map[string]string{"src/a.txt": "b\n"}, nil)
	logs := t.TempDir()
	tick := fixedTime
	spec := Spec{
		WriteScope: []string{"src/"},
		Checks:     []string{"test \"$(cat src/a.txt)\" = b", "echo building; echo 'error: it broke'; exit 2"},
		LogDir:     logs,
		Now:        func() time.Time { tick = tick.Add(1500 * time.Millisecond); return tick },
	}
	rep, err := Run(t.Context(), spec, Candidate{Repo: r, Base: b, Commit: c, Dir: r.Dir()})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Checks) != 2 || rep.Checks[0].Exit != 0 || rep.Checks[1].Exit != 2 || rep.Checks[0].Duration != 1.5 {
		t.Fatalf("checks %+v", rep.Checks)
	}
	if len(rep.Failures) != 1 {
		t.Fatalf("failures %v", rep.Failures)
	}
	f := rep.Failures[0]
	if !errors.Is(f, ErrCheck) || f.File != filepath.Join(logs, "check-1.log") || f.Line != 3 || !strings.Contains(f.Detail, "exited 2") {
		t.Errorf("failure %+v", f)
	}
	// A scope failure skips the checks.
	spec.WriteScope = []string{"docs/"}
	rep, err = Run(t.Context(), spec, Candidate{Repo: r, Base: b, Commit: c, Dir: r.Dir()})
	if err != nil || len(rep.Checks) != 0 || len(rep.Failures) != 1 {
		t.Errorf("after a scope failure: %+v, %v", rep, err)
	}
	spec.RunChecksAfterFailure = true
	rep, _ = Run(t.Context(), spec, Candidate{Repo: r, Base: b, Commit: c, Dir: r.Dir()})
	if len(rep.Checks) != 2 || len(rep.Failures) != 2 {
		t.Errorf("RunChecksAfterFailure: %+v", rep)
	}
	if _, err := Run(t.Context(), Spec{WriteScope: []string{"."}, Checks: []string{"true"}}, Candidate{Repo: r, Base: b, Commit: c}); err == nil {
		t.Error("checks without a scratch worktree ran")
	}
}

func contextWithCancel(t *testing.T) (context.Context, context.CancelFunc) {
	return context.WithCancel(t.Context())
}
