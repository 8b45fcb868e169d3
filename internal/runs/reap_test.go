//go:build unix

package runs

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apiary-dev/apiary/internal/attempt"
	"github.com/apiary-dev/apiary/internal/git/gittest"
	"github.com/apiary-dev/apiary/internal/rundir"
	"github.com/apiary-dev/apiary/internal/supervise"
)

// TestReapDeadRun: what a killed run left behind — an agent still alive
// (found by the run's marker in its environment), a worktree with its
// attempt branch, the control socket, then the emptied directory of its
// worktrees — is listed by a dry run and left in place, then removed once
// the grace period is over; what apiary did not create (a branch, a
// worktree outside .apiary/worktrees even when an event names it, a
// process without the run's marker even when an event names its pid) is
// never touched; every removal is logged.
func TestReapDeadRun(t *testing.T) {
	t.Parallel()
	repo := gittest.NewRepo(t, map[string]string{"README": "x\n"})
	rep := start(t, repo, `version: 1
agents:
  sh: {kind: command, argv: ["sh", "-c", "echo x > x.txt"]}
tasks:
  - {id: t1, objective: x, agent: sh, write_scope: [x.txt]}
`, Config{})
	if !rep.OK() {
		t.Fatalf("run %s", rep.Status)
	}
	id := rep.RunID
	evs, _, _ := rundir.Open(repo.Dir(), id).Events()
	seq := evs[len(evs)-1].Seq
	next := func() int64 { seq++; return seq }

	// An agent of the dead run, still alive, and a process that is not one.
	agentProc := func(env ...string) *exec.Cmd {
		cmd := exec.CommandContext(t.Context(), "sleep", "1000")
		cmd.Env = append(os.Environ(), env...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	orphan := agentProc("APIARY_RUN_ID=" + id)
	stranger := agentProc()
	appendEvent(t, repo.Dir(), id, Event{Seq: next(), Time: time.Now(), Kind: rundir.EvAgentStarted, Task: "t1", Attempt: 9, Role: attempt.RoleWorker, Pid: orphan.Process.Pid})
	appendEvent(t, repo.Dir(), id, Event{Seq: next(), Time: time.Now(), Kind: rundir.EvAgentStarted, Task: "t1", Attempt: 8, Role: attempt.RoleWorker, Pid: stranger.Process.Pid})

	// A worktree and branch it made; a worktree it did not.
	stale := filepath.Join(repo.Dir(), rundir.StateDir, "worktrees", id, "t1-9")
	branch := branchName(id, "t1") + ".9"
	gittest.Git(t, repo.Dir(), "worktree", "add", "--quiet", "-b", branch, stale, rep.StartHead)
	appendEvent(t, repo.Dir(), id, Event{Seq: next(), Time: time.Now(), Kind: rundir.EvWorktree, Task: "t1", Attempt: 9, Path: stale, Branch: branch})
	users := filepath.Join(t.TempDir(), "mine")
	gittest.Git(t, repo.Dir(), "worktree", "add", "--quiet", "-b", "users-branch", users, rep.StartHead)
	appendEvent(t, repo.Dir(), id, Event{Seq: next(), Time: time.Now(), Kind: rundir.EvWorktree, Task: "t1", Attempt: 7, Path: users})
	gittest.Git(t, repo.Dir(), "branch", "unrelated", rep.StartHead)

	// Its control socket, left on disk.
	sock := ControlPath(repo.Dir(), id)
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()

	kinds := func(rr supervise.ReapReport) []string {
		var out []string
		for _, rm := range rr.Removed {
			if rm.Err != nil {
				t.Errorf("removing %s %s: %v", rm.Item.Kind, rm.Item.ID, rm.Err)
			}
			out = append(out, string(rm.Item.Kind)+":"+filepath.Base(rm.Item.ID))
		}
		slices.Sort(out)
		return out
	}
	// The dead run's agent is found by the run's marker in its environment
	// (the run: item), whatever pid its events name.
	wantDry := []string{"branch:t1.9", "process:" + runMarker(id), "socket:" + filepath.Base(sock), "worktree:t1-9"}
	slices.Sort(wantDry)
	// Once its worktree is gone, the run's directory of worktrees is empty
	// and goes too.
	want := append([]string{"directory:" + id}, wantDry...)
	slices.Sort(want)
	later := func() time.Time { return time.Now().Add(time.Hour) }

	// Within the grace period nothing goes; a dry run removes nothing.
	if rr, err := Reap(t.Context(), repo, ReapOptions{}); err != nil || len(rr.Removed) != 0 {
		t.Errorf("within grace: %v %v", kinds(rr), err)
	}
	rr, err := Reap(t.Context(), repo, ReapOptions{DryRun: true, Now: later})
	if err != nil || !slices.Equal(kinds(rr), wantDry) {
		t.Errorf("dry run: %v %v, want %v", kinds(rr), err, wantDry)
	}
	if _, err := os.Stat(stale); err != nil {
		t.Errorf("the dry run removed the worktree: %v", err)
	}
	if err := syscall.Kill(orphan.Process.Pid, 0); err != nil {
		t.Errorf("the dry run killed the agent: %v", err)
	}

	rr, err = Reap(t.Context(), repo, ReapOptions{Now: later})
	if err != nil || !slices.Equal(kinds(rr), want) {
		t.Errorf("reap: %v %v, want %v", kinds(rr), err, want)
	}
	var ee *exec.ExitError
	if err := orphan.Wait(); !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Errorf("the dead run's agent: %v", err)
	}
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale worktree: %v", err)
	}
	if ok, _ := repo.BranchExists(t.Context(), branch); ok {
		t.Error("stale branch kept")
	}
	if _, err := os.Lstat(sock); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale socket: %v", err)
	}
	// Never anything else.
	if err := syscall.Kill(stranger.Process.Pid, 0); err != nil {
		t.Errorf("a process without the run's marker was touched: %v", err)
	}
	for _, b := range []string{"unrelated", "users-branch", rep.IntegrationBranch} {
		if ok, _ := repo.BranchExists(t.Context(), b); !ok {
			t.Errorf("branch %s deleted", b)
		}
	}
	if _, err := os.Stat(users); err != nil {
		t.Errorf("a worktree outside .apiary/worktrees was removed: %v", err)
	}
	logb, _ := os.ReadFile(filepath.Join(repo.Dir(), rundir.StateDir, "reaper.log"))
	if n := strings.Count(string(logb), "\n"); n != len(want) {
		t.Errorf("reaper.log has %d lines, want %d:\n%s", n, len(want), logb)
	}
	// A second sweep finds nothing left.
	if rr, err := Reap(t.Context(), repo, ReapOptions{Now: later}); err != nil || len(rr.Removed) != 0 {
		t.Errorf("second sweep: %v %v", kinds(rr), err)
	}
	_ = stranger.Process.Kill()
	_ = stranger.Wait()
}
