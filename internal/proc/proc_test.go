//go:build linux

package proc

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// trackers returns the modes this machine can test: process groups
// always, a cgroup per scope where the test process may make one.
func trackers(t *testing.T, owner string) map[string]*Tracker {
	t.Helper()
	out := map[string]*Tracker{}
	for _, noCg := range []bool{true, false} {
		tr, err := New(Options{Owner: owner, NoCgroup: noCg, Env: map[string]string{"APIARY_RUN_ID": owner}})
		if err != nil {
			t.Fatal(err)
		}
		if !noCg && tr.Mode() != ModeCgroup {
			t.Logf("no cgroup v2 directory can be made here: testing process groups only")
			continue
		}
		t.Cleanup(func() {
			if err := tr.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
		out[tr.Mode()] = tr
	}
	return out
}

// family is a leader that leaves a background child, a grandchild and a
// daemon that called setsid, writes their pids to dir/pids and exits.
const family = `
sleep 1000 &
echo $! >> "$DIR/pids"
sh -c 'sleep 1000 & echo $! >> "$DIR/pids"; wait' &
setsid sh -c 'echo $$ >> "$DIR/pids"; exec sleep 1000' &
while [ "$(wc -l < "$DIR/pids")" -lt 3 ]; do sleep 0.01; done
`

func alive(pid int) bool {
	st, ok := readStat(pid)
	return ok && !dead(st.state)
}

func readPids(t *testing.T, dir string) []int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "pids"))
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		n, _ := strconv.Atoi(f)
		out = append(out, n)
	}
	return out
}

func startFamily(t *testing.T, tr *Tracker) (*Process, *exec.Cmd, string) {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("/bin/sh", "-c", family)
	cmd.Env = append(os.Environ(), "DIR="+dir)
	var seen []Scope
	p, err := tr.With("task/1", func(s Scope) { seen = append(seen, s) }).Start(cmd, "agent")
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != 1 || seen[0] != p.Scope() {
		t.Errorf("OnStart saw %+v, want %+v", seen, p.Scope())
	}
	return p, cmd, dir
}

// TestCloseEndsStragglers: once the leader has exited, Close ends every
// process it left — a background child, a grandchild, a setsid daemon —
// with SIGTERM, well within the grace period, and removes the cgroup.
func TestCloseEndsStragglers(t *testing.T) {
	t.Parallel()
	for mode, tr := range trackers(t, "close-"+strconv.Itoa(os.Getpid())) {
		t.Run(mode, func(t *testing.T) {
			p, cmd, dir := startFamily(t, tr)
			if err := cmd.Wait(); err != nil {
				t.Fatal(err)
			}
			pids := readPids(t, dir)
			for _, pid := range pids {
				if !alive(pid) {
					t.Fatalf("straggler %d is not running before Close", pid)
				}
			}
			if got := p.Members(); len(got) != 4 {
				t.Errorf("members %v, want the 4 stragglers %v", got, pids)
			}
			start := time.Now()
			n := p.Close(time.Minute)
			took := time.Since(start)
			if n != 4 { // with the grandchild's parent
				t.Errorf("Close ended %d processes, want 4", n)
			}
			if took > 10*time.Second {
				t.Errorf("Close took %v: SIGTERM should end sleep at once", took)
			}
			for _, pid := range pids {
				if alive(pid) {
					t.Errorf("process %d outlived Close", pid)
				}
			}
			if c := p.Scope().Cgroup; c != "" {
				if _, err := os.Stat(c); !os.IsNotExist(err) {
					t.Errorf("cgroup %s left: %v", c, err)
				}
			}
		})
	}
}

// TestCloseKillsAfterGrace: a straggler that ignores SIGTERM gets SIGKILL
// once the grace period is over.
func TestCloseKillsAfterGrace(t *testing.T) {
	t.Parallel()
	for mode, tr := range trackers(t, "grace-"+strconv.Itoa(os.Getpid())) {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			cmd := exec.Command("/bin/sh", "-c", `sh -c 'trap "" TERM; echo $$ > "$DIR/pids"; while :; do sleep 0.05; done' &
while [ ! -s "$DIR/pids" ]; do sleep 0.01; done`)
			cmd.Env = append(os.Environ(), "DIR="+dir)
			p, err := tr.Start(cmd, "stubborn")
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Wait(); err != nil {
				t.Fatal(err)
			}
			pid := readPids(t, dir)[0]
			start := time.Now()
			if n := p.Close(200 * time.Millisecond); n == 0 {
				t.Error("Close found nothing")
			}
			if took := time.Since(start); took < 200*time.Millisecond {
				t.Errorf("Close returned after %v, before the grace period", took)
			}
			if alive(pid) {
				t.Errorf("%d ignored SIGTERM and outlived SIGKILL", pid)
			}
		})
	}
}

// TestReapAfterOwnerDied: a later process finds a dead owner's scope from
// its record alone (the leader gone, the group's leader pid free) and ends
// every process of it; ReapOwner ends what no record names; processes
// without the marker are never touched.
func TestReapAfterOwnerDied(t *testing.T) {
	t.Parallel()
	owner := "reap-" + strconv.Itoa(os.Getpid())
	stranger := exec.Command("sleep", "1000")
	stranger.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := stranger.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stranger.Process.Kill(); _ = stranger.Wait() })
	for mode, tr := range trackers(t, owner) {
		t.Run(mode, func(t *testing.T) {
			p, cmd, dir := startFamily(t, tr)
			if err := cmd.Wait(); err != nil {
				t.Fatal(err)
			}
			pids := readPids(t, dir)
			rec := p.Scope() // what the owner recorded; it then "dies"
			n, err := Reap(rec)
			if err != nil || n != 4 {
				t.Errorf("Reap: %d, %v; want 4", n, err)
			}
			for _, pid := range pids {
				if alive(pid) {
					st, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
					cl, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
					t.Errorf("%d survived Reap: %s %q", pid, st, cl)
				}
			}
			// A scope nobody recorded: found by the owner's marker.
			_, cmd2, dir2 := startFamily(t, tr)
			if err := cmd2.Wait(); err != nil {
				t.Fatal(err)
			}
			pids2 := readPids(t, dir2)
			if got := OwnerProcesses(owner, "task/1"); len(got) != 4 {
				t.Errorf("OwnerProcesses(task/1) = %v, want %v", got, pids2)
			}
			if got := OwnerProcesses(owner, "task/2"); len(got) != 0 {
				t.Errorf("OwnerProcesses(task/2) = %v", got)
			}
			n, err = ReapOwner(context.Background(), owner)
			if err != nil || n != 4 {
				t.Errorf("ReapOwner: %d, %v; want 4", n, err)
			}
			for _, pid := range pids2 {
				if alive(pid) {
					t.Errorf("%d survived ReapOwner", pid)
				}
			}
			if !alive(stranger.Process.Pid) {
				t.Fatal("a process without the marker was killed")
			}
		})
	}
}

// TestCancelKillsEverything: Kill while the leader runs ends the whole
// scope, including processes that left its group.
func TestCancelKillsEverything(t *testing.T) {
	t.Parallel()
	for mode, tr := range trackers(t, "kill-"+strconv.Itoa(os.Getpid())) {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			cmd := exec.Command("/bin/sh", "-c", family+"\nsleep 1000")
			cmd.Env = append(os.Environ(), "DIR="+dir)
			p, err := tr.Start(cmd, "agent")
			if err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(30 * time.Second)
			for len(p.Members()) < 4 && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			if err := p.Kill(); err != nil {
				t.Fatal(err)
			}
			_ = cmd.Wait()
			p.Close(time.Minute)
			for _, pid := range readPids(t, dir) {
				if alive(pid) {
					t.Errorf("%d survived Kill", pid)
				}
			}
		})
	}
}

// TestMountinfoUnescape covers mount points with escaped characters.
func TestMountinfoUnescape(t *testing.T) {
	for in, want := range map[string]string{`/sys/fs/cgroup`: "/sys/fs/cgroup", `/a\040b`: "/a b", `/x\134y`: `/x\y`} {
		if got := unescapeMount(in); got != want {
			t.Errorf("unescapeMount(%q) = %q, want %q", in, got, want)
		}
	}
	if !slices.Equal(withEnv([]string{"A=1", "B=2"}, []string{"B=3", "C=4"}), []string{"A=1", "B=3", "C=4"}) {
		t.Error("withEnv")
	}
}
