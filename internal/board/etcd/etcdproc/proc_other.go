//go:build !unix

package etcdproc

import (
	"os"
	"syscall"
)

func sysProcAttr() *syscall.SysProcAttr { return nil }

// killGroup kills the member itself: there are no process groups here.
func killGroup(p *os.Process) { _ = p.Kill() }
