//go:build unix && !linux

package runs

import "syscall"

// runnable reports whether process pid exists. Without /proc a stopped
// agent (SIGSTOP, a debugger) is not told apart here: its lease is renewed
// until it exits or the run stops it.
func runnable(pid int) bool { return syscall.Kill(pid, 0) == nil }
