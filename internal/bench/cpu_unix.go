//go:build unix

package bench

import (
	"syscall"
	"time"
)

// ProcessCPU is the CPU time (user and system) this process has used so
// far; 0 if the system will not say.
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
