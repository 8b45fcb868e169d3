//go:build unix && !linux

package proc

import (
	"errors"
	"fmt"
	"os/exec"
	"runtime"
	"syscall"
)

// These systems have neither cgroups nor a /proc to read environments
// from: a scope is its process group, and a process that left it is not
// found again. A recorded scope's group cannot be told from another
// program's that reuses its id, so Reap refuses to kill one and ReapOwner
// refuses outright; Process.Close, which runs while the owner still knows
// its group, ends the group as on Linux.

// verifiesMarkers: no process environments to check a marker in.
const verifiesMarkers = false

func ownerCgroup(string) string { return "" }

func enterCgroup(*exec.Cmd, string, string) (string, func(), error) {
	return "", nil, ErrUnsupported
}

func startTicks(int) uint64 { return 0 }

func bootID() string { return "" }

func members(s Scope) []int {
	if s.Pgid > 0 && syscall.Kill(-s.Pgid, 0) == nil {
		return []int{s.Pgid}
	}
	return nil
}

func signalScope(s Scope, sig syscall.Signal) error {
	if s.Pgid <= 0 {
		return nil
	}
	if err := syscall.Kill(-s.Pgid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}

func scanEnv(func([]byte) bool) ([]int, error) {
	return nil, fmt.Errorf("%w on %s: no process environments to find a dead owner's processes by their marker", ErrUnsupported, runtime.GOOS)
}

// RemoveCgroup has nothing to remove here.
func RemoveCgroup(string) (int, error) { return 0, nil }

func running(pid int) bool { return syscall.Kill(pid, 0) == nil }

func signalPids(s Scope, _ []int, sig syscall.Signal) error { return signalScope(s, sig) }
