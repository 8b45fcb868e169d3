//go:build !linux

package runs

import "syscall"

// runnable reports whether process pid exists; other systems cannot tell
// a stopped process apart here.
func runnable(pid int) bool { return syscall.Kill(pid, 0) == nil }

// ownedBy cannot check a process's environment here: nothing is taken
// for apiary's.
func ownedBy(pid int, run string) bool { return false }
