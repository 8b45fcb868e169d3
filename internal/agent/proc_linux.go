package agent

import "syscall"

// groupAttr puts the agent in a process group of its own, killed by the
// kernel if apiary dies first.
func groupAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
