package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/apiary-dev/apiary/internal/envtest"
	"github.com/apiary-dev/apiary/internal/rundir"
)

// tmux drives one terminal program in a tmux server of its own (its own
// socket), which the test's cleanup stops.
type tmux struct {
	t      *testing.T
	bin    string
	socket string
}

func newTmux(t *testing.T) *tmux {
	t.Helper()
	tm := &tmux{t: t, bin: envtest.Command(t, "tmux"), socket: fmt.Sprintf("apiary-top-%d-%d", os.Getpid(), time.Now().UnixNano())}
	t.Cleanup(func() { _ = exec.Command(tm.bin, "-L", tm.socket, "kill-server").Run() })
	return tm
}

func (tm *tmux) cmd(args ...string) string {
	tm.t.Helper()
	out, err := exec.Command(tm.bin, append([]string{"-L", tm.socket, "-f", "/dev/null"}, args...)...).CombinedOutput()
	if err != nil {
		tm.t.Fatalf("tmux %v: %v: %s", args, err, out)
	}
	return string(out)
}

// start runs command in a new w×h session.
func (tm *tmux) start(name string, w, h int, env []string, command string) {
	tm.t.Helper()
	args := []string{"new-session", "-d", "-s", name, "-x", fmt.Sprint(w), "-y", fmt.Sprint(h)}
	for _, kv := range env {
		args = append(args, "-e", kv)
	}
	tm.cmd(append(args, command)...)
	tm.cmd("set-option", "-t", name, "remain-on-exit", "on")
}

func (tm *tmux) screen(name string) []string {
	tm.t.Helper()
	return strings.Split(strings.TrimRight(tm.cmd("capture-pane", "-p", "-t", name), "\n"), "\n")
}

func (tm *tmux) keys(name string, keys ...string) {
	tm.t.Helper()
	tm.cmd(append([]string{"send-keys", "-t", name}, keys...)...)
}

// waitScreen waits until the screen holds every want.
func (tm *tmux) waitScreen(name string, want ...string) []string {
	tm.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		lines := tm.screen(name)
		text := strings.Join(lines, "\n")
		ok := true
		for _, w := range want {
			ok = ok && strings.Contains(text, w)
		}
		if ok {
			return lines
		}
		if time.Now().After(deadline) {
			tm.t.Fatalf("the screen never showed %q:\n%s", want, text)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// checkFits fails if the screen is taller or wider than w×h.
func checkFits(t *testing.T, lines []string, w, h int) {
	t.Helper()
	if len(lines) > h {
		t.Errorf("%d lines on a %d-line terminal", len(lines), h)
	}
	for i, l := range lines {
		if n := utf8.RuneCountInString(l); n > w {
			t.Errorf("line %d is %d wide on a %d-column terminal: %q", i, n, w, l)
		}
	}
}

// TestTopTmux runs `apiary top` in a real terminal (tmux) at 80×24 during
// a run: the header stays on screen, j selects the running task, enter
// shows its detail and esc leaves it, c asks y/n and y cancels the task
// in the run's own process; q quits. At 160×45 the finished run fits with
// its critical path.
func TestTopTmux(t *testing.T) {
	t.Parallel()
	envtestGit(t)
	tm := newTmux(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "apiary") // the test binary runs as apiary under that name
	if err := os.Symlink(exe, bin); err != nil {
		t.Fatal(err)
	}
	repo, planPath, _ := dashRepo(t, []dashTask{{id: "quick", sleep: "0", est: 5}, {id: "slow", sleep: "300", est: 60}, {id: "after", sleep: "0", deps: []string{"slow"}, est: 5}})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var stdout, stderr lockedBuffer
	runDone := make(chan error, 1)
	go func() { runDone <- cliRun(ctx, nil, &stdout, &stderr, "run", "--repo", repo, planPath) }()
	var run string
	waitFor(t, time.Minute, func() bool {
		ids, _ := rundir.List(repo)
		if len(ids) != 1 {
			return false
		}
		run = ids[0]
		b, _ := os.ReadFile(rundir.Open(repo, run).EventsPath())
		return strings.Count(string(b), `"attempt_started"`) >= 2 && strings.Contains(string(b), `"task_done"`)
	}, "/dev/null")

	env := append([]string{"TERM=xterm-256color"}, testGitEnv...)
	command := fmt.Sprintf("%s top --repo %s --interval 300ms", bin, repo)
	tm.start("small", 80, 24, env, command)
	lines := tm.waitScreen("small", "apiary top", "run "+run, "slow", "q quit")
	checkFits(t, lines, 80, 24)
	if !strings.HasPrefix(lines[0], "apiary top") || !strings.Contains(lines[len(lines)-1], "q quit") {
		t.Errorf("header or footer off screen:\n%s", strings.Join(lines, "\n"))
	}
	keep := func(name string, lines []string) {
		text := []byte(strings.TrimRight(strings.Join(lines, "\n"), "\n ") + "\n")
		if *shotDir != "" { // for a person to look at
			_ = os.WriteFile(filepath.Join(*shotDir, name), text, 0o644)
		}
		if *docImage { // the README's capture
			_ = os.WriteFile(filepath.Join(envtest.ModuleRoot(t), "docs", "img", name), text, 0o644)
		}
	}
	keep("top-80x24.txt", lines)
	tm.keys("small", "j", "Enter")
	tm.waitScreen("small", "task slow", "objective", "Write slow.txt.", "esc back")
	tm.keys("small", "Escape")
	// Back on the list before the next key: an Escape and a key read
	// together are Alt and the key.
	tm.waitScreen("small", "enter detail")
	tm.keys("small", "c")
	tm.waitScreen("small", "Cancel task slow and every task it spawned? y/n")
	tm.keys("small", "y")
	lines = tm.waitScreen("small", "cancelled slow")
	checkFits(t, lines, 80, 24)
	select {
	case err := <-runDone:
		if !errors.Is(err, errSilent) {
			t.Fatalf("run: %v, want a failed run (a task was cancelled)\n%s", err, stderr.String())
		}
	case <-time.After(time.Minute):
		t.Fatal("the run did not end after top cancelled its task")
	}
	tm.waitScreen("small", "cancelled", "skipped")
	tm.keys("small", "q")
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(tm.cmd("list-panes", "-t", "small", "-F", "#{pane_dead}"), "1") {
		if time.Now().After(deadline) {
			t.Fatalf("q did not quit top:\n%s", strings.Join(tm.screen("small"), "\n"))
		}
		time.Sleep(50 * time.Millisecond)
	}

	tm.start("big", 160, 45, env, command)
	lines = tm.waitScreen("big", "run "+run, "critical path", "slow", "cancelled")
	checkFits(t, lines, 160, 45)
	keep("top-160x45.txt", lines)
	tm.keys("big", "3")
	tm.waitScreen("big", "The board is not connected")
	tm.keys("big", "q")
}
