//go:build unix && !linux

package etcdproc

import (
	"os"
	"syscall"
)

// sysProcAttr puts a member in its own process group. Without Linux's
// parent-death signal, a member outlives a parent killed before Stop.
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// killGroup sends SIGKILL to the process group p leads.
func killGroup(p *os.Process) { _ = syscall.Kill(-p.Pid, syscall.SIGKILL) }
