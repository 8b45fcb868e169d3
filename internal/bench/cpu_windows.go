//go:build windows

package bench

import (
	"syscall"
	"time"
)

// ProcessCPU is the CPU time (user and kernel) this process has used so
// far; 0 if the system will not say.
func ProcessCPU() time.Duration {
	var created, exited, kernel, user syscall.Filetime
	h, err := syscall.GetCurrentProcess()
	if err != nil || syscall.GetProcessTimes(h, &created, &exited, &kernel, &user) != nil {
		return 0
	}
	return filetimeSpan(kernel) + filetimeSpan(user)
}

// filetimeSpan reads a FILETIME that holds a span, in 100 ns units (not a
// date: Filetime.Nanoseconds would subtract the 1601 epoch).
func filetimeSpan(f syscall.Filetime) time.Duration {
	return time.Duration(int64(f.HighDateTime)<<32|int64(f.LowDateTime)) * 100
}
