package swarm

import (
	"os"
	"runtime"
	"testing"
)

// TestCPULoad: where /proc/stat exists the sampler reads a share in
// [0, 1] after some work; elsewhere there is none.
func TestCPULoad(t *testing.T) {
	t.Parallel()
	load := CPULoad()
	if _, err := os.Stat("/proc/stat"); err != nil {
		if load != nil {
			t.Fatal("a sampler without /proc/stat")
		}
		return
	}
	if load == nil {
		t.Fatal("no sampler though /proc/stat exists")
	}
	x := 0
	for i := range 50_000_000 {
		x += i % 7
	}
	runtime.KeepAlive(x)
	if v := load(); v < 0 || v > 1 {
		t.Errorf("load %v", v)
	}
}
