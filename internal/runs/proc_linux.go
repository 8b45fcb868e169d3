package runs

import (
	"bytes"
	"os"
	"strconv"
)

// runnable reports whether process pid exists and is not stopped (by
// SIGSTOP or a tracer) or a zombie: an agent's liveness for its lease.
func runnable(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the command name, which is in parentheses and may
	// itself contain them: take the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return false
	}
	switch b[i+2] {
	case 'T', 't', 'Z', 'X', 'x':
		return false
	}
	return true
}
