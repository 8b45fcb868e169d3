//go:build unix

package proc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// errPlatform: every unix can contain processes in process groups.
var errPlatform error

// Process is a started scope.
type Process struct {
	cmd   *exec.Cmd
	scope Scope
}

// Scope describes the process's scope.
func (p *Process) Scope() Scope { return p.scope }

// Start starts cmd, which must not have been started, as the leader of a
// new scope named leaf (below the tracker's prefix): in a process group of
// its own (cmd.SysProcAttr is kept and amended), in the scope's cgroup in
// ModeCgroup, with the owner's environment and the scope's marker added
// (a nil cmd.Env is the current process's environment). The caller waits
// for it with cmd.Wait and then calls Close.
func (t *Tracker) Start(cmd *exec.Cmd, leaf string) (*Process, error) {
	p := &Process{cmd: cmd, scope: Scope{Name: t.name(leaf)}}
	if t != nil && t.boot != "" {
		p.scope.Boot = t.boot
	}
	var extra []string
	if t != nil {
		extra = append(extra, t.env...)
		if t.owner != "" {
			p.scope.Marker = t.owner + "/" + t.nonce + "/" + p.scope.Name
			extra = append(extra, EnvScope+"="+p.scope.Marker)
		}
	}
	if len(extra) > 0 {
		env := cmd.Env
		if env == nil {
			env = os.Environ()
		}
		cmd.Env = withEnv(env, extra)
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Pgid = 0
	var release func()
	if t != nil && t.cgroup != "" {
		dir, done, err := enterCgroup(cmd, t.cgroup, sanitize(p.scope.Name))
		if err != nil {
			return nil, err
		}
		p.scope.Cgroup, release = dir, done
	}
	err := cmd.Start()
	if release != nil {
		release()
	}
	if err != nil {
		if p.scope.Cgroup != "" {
			_ = os.Remove(p.scope.Cgroup)
		}
		return nil, err
	}
	p.scope.Pgid = cmd.Process.Pid
	p.scope.Start = startTicks(cmd.Process.Pid)
	if t != nil && t.onStart != nil {
		t.onStart(p.scope)
	}
	return p, nil
}

// Members lists the live processes of the scope (zombies excluded).
func (p *Process) Members() []int { return members(p.scope) }

// Signal sends sig to every live process of the scope.
func (p *Process) Signal(sig syscall.Signal) error { return signalScope(p.scope, sig) }

// Kill sends SIGKILL to every process of the scope.
func (p *Process) Kill() error { return signalScope(p.scope, syscall.SIGKILL) }

// hardStop bounds the wait for processes that were sent SIGKILL: only a
// process in uninterruptible sleep outlasts it.
const hardStop = 5 * time.Second

// Close ends the scope once its leader has exited (or been given up on):
// every process still in it gets SIGTERM and, if any is left after grace,
// SIGKILL; a zero grace sends SIGKILL at once. It returns when the scope is
// empty (or hardStop after the SIGKILL), with the number of processes that
// were left, and removes the scope's cgroup.
func (p *Process) Close(grace time.Duration) int {
	n := closeScope(p.scope, grace)
	if p.scope.Cgroup != "" {
		_ = removeDir(p.scope.Cgroup)
	}
	return n
}

func closeScope(s Scope, grace time.Duration) int {
	left := members(s)
	if len(left) == 0 {
		return 0
	}
	n := len(left)
	sig := syscall.SIGTERM
	if grace <= 0 {
		sig = syscall.SIGKILL
	}
	killed := sig == syscall.SIGKILL
	deadline := time.Now().Add(grace)
	if killed {
		deadline = time.Now().Add(hardStop)
	}
	_ = signalPids(s, left, sig)
	wait := 200 * time.Microsecond
	for {
		time.Sleep(wait)
		wait = min(wait*2, 10*time.Millisecond)
		if allGone(left) {
			// Those are gone; one may have forked before it went.
			if left = members(s); len(left) == 0 {
				return n
			}
			n += len(left)
			_ = signalPids(s, left, sig)
		}
		now := time.Now()
		switch {
		case !killed && now.After(deadline):
			left = members(s)
			_ = signalPids(s, left, syscall.SIGKILL)
			killed, sig, deadline = true, syscall.SIGKILL, now.Add(hardStop)
		case killed && now.After(deadline):
			return n
		}
	}
}

// Reap ends what is left of a recorded scope whose owner is gone: the
// processes in its cgroup, the members of its process group that carry
// its marker, and every other process that carries the marker (one that
// left the group with setsid). It returns how many processes it killed.
// A process group whose members do not carry the marker is someone
// else's now and is not touched. Where markers cannot be read (macOS, the
// BSDs) Reap refuses with ErrUnsupported to kill a group that still exists.
func Reap(s Scope) (int, error) {
	if s.Marker == "" && s.Cgroup == "" {
		return 0, nil
	}
	n := len(members(s))
	if n > 0 && !verifiesMarkers {
		return 0, fmt.Errorf("%w on %s: process group %d of scope %s may belong to another program by now (its pid reused), and without readable process environments its marker cannot be checked: not killed", ErrUnsupported, runtime.GOOS, s.Pgid, s.Name)
	}
	if n == 0 {
		if s.Cgroup != "" {
			_ = os.Remove(s.Cgroup)
		}
		return 0, nil
	}
	closeScope(s, 0)
	if s.Cgroup != "" {
		if err := removeDir(s.Cgroup); err != nil {
			return n, err
		}
	}
	return n, nil
}

// ReapOwner kills every live process that carries a marker of owner or
// one of the exact environment entries in also (APIARY_RUN_ID=RUN, say),
// and returns how many it killed. Call it only once owner has no live
// process of its own: it does not tell a dead one's processes from a live
// one's.
func ReapOwner(ctx context.Context, owner string, also ...string) (int, error) {
	if owner == "" {
		return 0, nil
	}
	match := ownerMatcher(owner, also)
	pids, err := scanEnv(match)
	if err != nil || len(pids) == 0 {
		return 0, err
	}
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	deadline := time.Now().Add(hardStop)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		left, _ := scanEnv(match)
		if len(left) == 0 && allGone(pids) {
			break
		}
		for _, pid := range left {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return len(pids), nil
}

// OwnerProcesses lists the live processes that carry a marker of owner
// (below sub, if set: "task/1") or one of the entries in also.
func OwnerProcesses(owner, sub string, also ...string) []int {
	if owner == "" {
		return nil
	}
	m := ownerMatcher(owner, also)
	if sub != "" {
		m = func(kv []byte) bool {
			v, ok := strings.CutPrefix(string(kv), EnvScope+"="+MarkerPrefix(owner))
			if !ok {
				return false
			}
			// skip the nonce
			_, rest, ok := strings.Cut(v, "/")
			return ok && (rest == sub || strings.HasPrefix(rest, sub+"/") || strings.HasPrefix(rest, sub+"#"))
		}
	}
	pids, _ := scanEnv(m)
	return pids
}

func ownerMatcher(owner string, also []string) func([]byte) bool {
	pre := []byte(EnvScope + "=" + MarkerPrefix(owner))
	return func(kv []byte) bool {
		if len(kv) >= len(pre) && string(kv[:len(pre)]) == string(pre) {
			return true
		}
		for _, a := range also {
			if string(kv) == a {
				return true
			}
		}
		return false
	}
}

// allGone reports whether every process of pids has exited. A process
// being killed loses its environment before it is a zombie, so a scope's
// marker scan misses it a moment before it is gone.
func allGone(pids []int) bool {
	for _, pid := range pids {
		if running(pid) {
			return false
		}
	}
	return true
}

// removeDir removes an empty cgroup directory; one whose last process has
// only just exited may be busy for a moment.
func removeDir(dir string) error {
	var err error
	for try := 0; try < 100; try++ {
		if err = os.Remove(dir); err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		time.Sleep(2 * time.Millisecond)
	}
	return err
}

// Alive lists the live processes of a recorded scope: those in its cgroup,
// or those that carry its marker (in its process group or out of it).
func Alive(s Scope) []int {
	if s.Marker == "" && s.Cgroup == "" {
		return nil
	}
	return members(s)
}

// name is the next scope name for leaf: below the tracker's prefix, with
// the tracker's sequence number.
func (t *Tracker) name(leaf string) string {
	n := leaf
	if t != nil && t.prefix != "" {
		n = t.prefix + "/" + leaf
	}
	seq := int64(0)
	if t != nil && t.seq != nil {
		seq = t.seq.Add(1)
	}
	return n + "#" + strconv.FormatInt(seq, 10)
}

// withEnv sets the KEY=VALUE entries of extra in env, replacing earlier
// values of the same keys.
func withEnv(env, extra []string) []string {
	keys := map[string]bool{}
	for _, kv := range extra {
		k, _, _ := strings.Cut(kv, "=")
		keys[k] = true
	}
	out := make([]string, 0, len(env)+len(extra))
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); !keys[k] {
			out = append(out, kv)
		}
	}
	return append(out, extra...)
}
