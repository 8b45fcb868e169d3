//go:build unix && !linux

package envtest

import "syscall"

// ChildGroup is the SysProcAttr of a child process a test starts: a
// process group of its own, so that one signal to -pid ends everything the
// child started. These systems have no parent-death signal: a test binary
// killed outright (its cleanups never run) leaves its children running.
func ChildGroup() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
