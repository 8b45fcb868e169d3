//go:build unix && !linux

package agent

import "syscall"

// groupAttr puts the agent in a process group of its own. These systems
// have no parent-death signal: if apiary itself is killed, the group
// outlives it (the sweep after a normal exit or a cancel still runs).
func groupAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
