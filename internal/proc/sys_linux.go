package proc

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// verifiesMarkers: a recorded scope's processes are found by the marker
// in their /proc/PID/environ (or by their cgroup), never by a pid alone.
const verifiesMarkers = true

// cgroupNamePrefix begins every cgroup directory apiary makes; nothing
// else is ever removed.
const cgroupNamePrefix = "apiary-"

// cgroupBase returns the cgroup v2 directory of the calling process ("" if
// there is none it can see).
func cgroupBase() string {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return ""
	}
	own := ""
	for _, line := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			own = p
			break
		}
	}
	if own == "" {
		return ""
	}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		// id parent major:minor root mountpoint options [optional...] - fstype source superoptions
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok || !strings.HasPrefix(post, "cgroup2 ") {
			continue
		}
		fields := strings.Fields(pre)
		if len(fields) < 5 {
			continue
		}
		root, mnt := unescapeMount(fields[3]), unescapeMount(fields[4])
		rel := own
		if root != "/" {
			var ok bool
			if rel, ok = strings.CutPrefix(own, root); !ok {
				continue
			}
		}
		return filepath.Join(mnt, rel)
	}
	return ""
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// ownerCgroup makes the owner's cgroup directory below the calling
// process's and checks that a process can be cloned into a cgroup there;
// "" when either fails (the tracker then uses process groups).
func ownerCgroup(name string) string {
	base := cgroupBase()
	if base == "" {
		return ""
	}
	dir := filepath.Join(base, cgroupNamePrefix+name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return ""
	}
	if _, err := os.Stat(filepath.Join(dir, "cgroup.procs")); err != nil {
		_ = os.Remove(dir)
		return ""
	}
	// The probe: clone a shell straight into a child cgroup.
	cmd := exec.Command("/bin/sh", "-c", ":")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	_, done, err := enterCgroup(cmd, dir, "probe")
	if err == nil {
		err = cmd.Run()
		done()
		_ = os.Remove(filepath.Join(dir, "probe"))
	}
	if err != nil {
		_ = os.Remove(dir)
		return ""
	}
	return dir
}

// enterCgroup makes the cgroup parent/name and arranges for cmd to be
// cloned into it; done closes the descriptor once cmd has started.
func enterCgroup(cmd *exec.Cmd, parent, name string) (dir string, done func(), err error) {
	dir = filepath.Join(parent, name)
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", nil, fmt.Errorf("proc: cgroup: %w", err)
	}
	fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		_ = os.Remove(dir)
		return "", nil, fmt.Errorf("proc: cgroup: %w", err)
	}
	cmd.SysProcAttr.UseCgroupFD = true
	cmd.SysProcAttr.CgroupFD = fd
	return dir, func() { _ = syscall.Close(fd) }, nil
}

// stat is what /proc/PID/stat says about a process.
type stat struct {
	pgid  int
	state byte
	start uint64
}

func readStat(pid int) (stat, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return stat{}, false
	}
	// The command name is in parentheses and may hold anything: the fields
	// that matter follow the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return stat{}, false
	}
	f := strings.Fields(string(b[i+2:]))
	// f[0] state, f[1] ppid, f[2] pgrp, f[3] session, ..., f[19] starttime
	if len(f) < 20 {
		return stat{}, false
	}
	pgid, _ := strconv.Atoi(f[2])
	start, _ := strconv.ParseUint(f[19], 10, 64)
	return stat{pgid: pgid, state: f[0][0], start: start}, true
}

func dead(state byte) bool { return state == 'Z' || state == 'X' || state == 'x' }

// running reports whether pid is a process that has not exited.
func running(pid int) bool {
	st, ok := readStat(pid)
	return ok && !dead(st.state)
}

func startTicks(pid int) uint64 {
	st, _ := readStat(pid)
	return st.start
}

func bootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// allPids lists the processes in /proc.
func allPids() ([]int, error) {
	f, err := os.Open("/proc")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	out := make([]int, 0, len(names))
	for _, n := range names {
		if pid, err := strconv.Atoi(n); err == nil && pid > 0 {
			out = append(out, pid)
		}
	}
	return out, nil
}

// hasEnv reports whether an entry of pid's environment satisfies match.
func hasEnv(pid int, match func([]byte) bool) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	for len(b) > 0 {
		i := bytes.IndexByte(b, 0)
		if i < 0 {
			i = len(b)
		}
		if match(b[:i]) {
			return true
		}
		if i == len(b) {
			break
		}
		b = b[i+1:]
	}
	return false
}

// scanEnv lists the live processes (not this one) whose environment has
// an entry that satisfies match.
func scanEnv(match func([]byte) bool) ([]int, error) { return scanSince(0, match) }

// scanSince is scanEnv over the processes started at or after start
// (clock ticks after boot): a scope's processes all started after its
// leader, and reading a start time is much cheaper than an environment.
func scanSince(start uint64, match func([]byte) bool) ([]int, error) {
	pids, err := allPids()
	if err != nil {
		return nil, err
	}
	self := os.Getpid()
	var out []int
	for _, pid := range pids {
		if pid == self {
			continue
		}
		st, ok := readStat(pid)
		if !ok || dead(st.state) || st.start < start {
			continue
		}
		if hasEnv(pid, match) {
			out = append(out, pid)
		}
	}
	return out, nil
}

func markerMatch(marker string) func([]byte) bool {
	want := EnvScope + "=" + marker
	return func(kv []byte) bool { return string(kv) == want }
}

// members lists the live processes of a scope: those in its cgroup, or
// (without one, or after the cgroup is gone) the members of its process
// group that carry its marker and the processes elsewhere that carry it.
func members(s Scope) []int {
	if s.Cgroup != "" {
		if pids, err := cgroupProcs(s.Cgroup); err == nil {
			return pids
		}
	}
	if s.Marker == "" {
		if s.Pgid > 0 && syscall.Kill(-s.Pgid, 0) == nil {
			return groupPids(s.Pgid)
		}
		return nil
	}
	pids, _ := scanSince(s.sinceTicks(), markerMatch(s.Marker))
	return pids
}

// sinceTicks is the start time a scope's processes cannot predate: its
// leader's, when it was recorded in this boot.
func (s Scope) sinceTicks() uint64 {
	if s.Boot != "" && s.Boot == bootID() {
		return s.Start
	}
	return 0
}

// groupPids lists the live members of process group pgid.
func groupPids(pgid int) []int {
	pids, _ := allPids()
	var out []int
	for _, pid := range pids {
		if st, ok := readStat(pid); ok && st.pgid == pgid && !dead(st.state) {
			out = append(out, pid)
		}
	}
	return out
}

// cgroupProcs lists the live processes in dir and the cgroups below it.
func cgroupProcs(dir string) ([]int, error) {
	var out []int
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == dir {
				return err
			}
			return nil
		}
		if !d.IsDir() {
			return nil
		}
		b, err := os.ReadFile(filepath.Join(p, "cgroup.procs"))
		if err != nil {
			return nil
		}
		for _, f := range strings.Fields(string(b)) {
			pid, err := strconv.Atoi(f)
			if err != nil {
				continue
			}
			if st, ok := readStat(pid); ok && !dead(st.state) {
				out = append(out, pid)
			}
		}
		return nil
	})
	return out, err
}

// signalScope sends sig to every live process of the scope. SIGKILL of a
// cgroup uses cgroup.kill where the kernel has it, which also reaches a
// process forked while the signal is being sent.
func signalScope(s Scope, sig syscall.Signal) error {
	if s.Cgroup != "" {
		if sig == syscall.SIGKILL {
			if err := os.WriteFile(filepath.Join(s.Cgroup, "cgroup.kill"), []byte("1"), 0); err == nil {
				return nil
			}
		}
		if pids, err := cgroupProcs(s.Cgroup); err == nil {
			for _, pid := range pids {
				_ = syscall.Kill(pid, sig)
			}
			return nil
		}
	}
	if s.Marker == "" {
		if s.Pgid > 0 {
			if err := syscall.Kill(-s.Pgid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
				return err
			}
		}
		return nil
	}
	// Only members that carry the marker: a group whose members do not is
	// no longer the scope's.
	pids, err := scanSince(s.sinceTicks(), markerMatch(s.Marker))
	if err != nil {
		return err
	}
	return signalPids(s, pids, sig)
}

// signalPids sends sig to pids, members of scope s, and to s's process
// group when one of them is still in it.
func signalPids(s Scope, pids []int, sig syscall.Signal) error {
	if s.Cgroup != "" {
		if sig == syscall.SIGKILL {
			if err := os.WriteFile(filepath.Join(s.Cgroup, "cgroup.kill"), []byte("1"), 0); err == nil {
				return nil
			}
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, sig)
		}
		return nil
	}
	signalled := map[int]bool{}
	for _, pid := range pids {
		if st, ok := readStat(pid); ok && st.pgid == s.Pgid && !signalled[s.Pgid] {
			signalled[s.Pgid] = true
			_ = syscall.Kill(-s.Pgid, sig)
		}
		_ = syscall.Kill(pid, sig)
	}
	return nil
}

// RemoveCgroup kills every process in the cgroup directory dir and the
// cgroups below it and removes them, deepest first; it returns how many
// processes it killed. Only a directory apiary made (its name begins with
// "apiary-", or its parent's does) is touched.
func RemoveCgroup(dir string) (int, error) {
	if dir == "" {
		return 0, nil
	}
	if !strings.HasPrefix(filepath.Base(dir), cgroupNamePrefix) && !strings.HasPrefix(filepath.Base(filepath.Dir(dir)), cgroupNamePrefix) {
		return 0, fmt.Errorf("proc: %s is not a cgroup apiary made", dir)
	}
	if _, err := os.Stat(filepath.Join(dir, "cgroup.procs")); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return 0, nil
		}
		return 0, err
	}
	pids, _ := cgroupProcs(dir)
	if len(pids) > 0 {
		closeScope(Scope{Cgroup: dir}, 0)
	}
	var dirs []string
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	var errs []error
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := removeDir(dirs[i]); err != nil {
			errs = append(errs, err)
		}
	}
	return len(pids), errors.Join(errs...)
}
