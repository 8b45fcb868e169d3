//go:build linux

package etcdproc

import (
	"os"
	"syscall"
)

// sysProcAttr puts a member in its own process group and has the kernel
// kill it when the thread that started it dies (with the process, in
// practice: Go does not end its threads).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// killGroup sends SIGKILL to the process group p leads.
func killGroup(p *os.Process) { _ = syscall.Kill(-p.Pid, syscall.SIGKILL) }
