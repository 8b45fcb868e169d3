package envtest

import "syscall"

// ChildGroup is the SysProcAttr of a child process a test starts: a
// process group of its own, so that one signal to -pid ends everything the
// child started, and a parent-death signal, so that the kernel kills the
// child if the test binary dies first.
func ChildGroup() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
