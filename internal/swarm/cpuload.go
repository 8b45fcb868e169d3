package swarm

import (
	"fmt"
	"os"
	"strings"
)

// CPULoad samples the machine's CPU use (0–1) from /proc/stat between
// calls, for a worker's Load; nil where /proc/stat is unavailable.
func CPULoad() func() float64 {
	read := func() (busy, total uint64, ok bool) {
		b, err := os.ReadFile("/proc/stat")
		if err != nil {
			return 0, 0, false
		}
		line, _, _ := strings.Cut(string(b), "\n")
		f := strings.Fields(line)
		if len(f) < 5 || f[0] != "cpu" {
			return 0, 0, false
		}
		for i, v := range f[1:] {
			var n uint64
			fmt.Sscan(v, &n)
			total += n
			if i != 3 && i != 4 { // idle, iowait
				busy += n
			}
		}
		return busy, total, true
	}
	pb, pt, ok := read()
	if !ok {
		return nil
	}
	return func() float64 {
		b, t, ok := read()
		if !ok || t <= pt {
			return 0
		}
		load := float64(b-pb) / float64(t-pt)
		pb, pt = b, t
		return load
	}
}
