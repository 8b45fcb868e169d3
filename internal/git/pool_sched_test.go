package git

import (
	"os"
	"path/filepath"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// schedSample is what the kernel's schedstat says a set of processes spent
// so far: time on a CPU, and time runnable but waiting for one.
type schedSample struct {
	cpu, wait time.Duration
	gitCPU    time.Duration // of cpu, the git processes'
	gc        uint64        // garbage collections finished
	gcCPU     float64       // seconds of CPU the collector used
	disk      int64         // bytes this process had read from the disk (not the page cache)
	written   int           // files the pool wrote
}

// sampleSched sums schedstat over every thread of this process and of the
// pool's long-lived git processes (Linux; zero elsewhere).
func sampleSched(p *WorktreePool) schedSample {
	var s schedSample
	add := func(dir string) time.Duration {
		var cpu time.Duration
		ents, err := os.ReadDir(filepath.Join(dir, "task"))
		if err != nil {
			return 0
		}
		for _, e := range ents {
			b, err := os.ReadFile(filepath.Join(dir, "task", e.Name(), "schedstat"))
			if err != nil {
				continue
			}
			f := strings.Fields(string(b))
			if len(f) < 2 {
				continue
			}
			run, _ := strconv.ParseInt(f[0], 10, 64)
			wait, _ := strconv.ParseInt(f[1], 10, 64)
			cpu += time.Duration(run)
			s.cpu += time.Duration(run)
			s.wait += time.Duration(wait)
		}
		return cpu
	}
	add("/proc/self")
	for _, bp := range []*batchProc{&p.objects.batchProc, &p.refs.batchProc} {
		bp.mu.Lock()
		if bp.cmd != nil && bp.cmd.Process != nil {
			s.gitCPU += add("/proc/" + strconv.Itoa(bp.cmd.Process.Pid))
		}
		bp.mu.Unlock()
	}
	ms := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}, {Name: "/cpu/classes/gc/total:cpu-seconds"}}
	metrics.Read(ms)
	s.gc, s.gcCPU = ms[0].Value.Uint64(), ms[1].Value.Float64()
	if b, err := os.ReadFile("/proc/self/io"); err == nil {
		for l := range strings.Lines(string(b)) {
			if v, ok := strings.CutPrefix(strings.TrimSpace(l), "read_bytes: "); ok {
				s.disk, _ = strconv.ParseInt(v, 10, 64)
			}
		}
	}
	s.written = p.Stats().Written
	return s
}

// timing is one measured operation: its wall time and, of it, the time
// on a CPU and waiting for one, summed over the threads of this process
// and the pool's git processes (so it can exceed the wall time).
type timing struct {
	wall, cpu, wait, gitCPU time.Duration
	gc                      uint64
	gcCPU                   float64
	disk                    int64
	written                 int
}

func measure(p *WorktreePool, f func()) timing {
	a := sampleSched(p)
	start := time.Now()
	f()
	wall := time.Since(start)
	b := sampleSched(p)
	return timing{wall: wall, cpu: b.cpu - a.cpu, wait: b.wait - a.wait, gitCPU: b.gitCPU - a.gitCPU, gc: b.gc - a.gc, gcCPU: b.gcCPU - a.gcCPU,
		disk: b.disk - a.disk, written: b.written - a.written}
}

// logTail logs where the time of the slowest 2% of ts went, next to the
// median ones.
func logTail(b *testing.B, what string, ts []timing) {
	if len(ts) < 10 {
		return
	}
	s := slices.Clone(ts)
	slices.SortFunc(s, func(x, y timing) int { return int(x.wall - y.wall) })
	mean := func(part []timing) (w, c, q, g, gc, gcc, disk, files float64) {
		for _, t := range part {
			disk += float64(t.disk) / 1024
			files += float64(t.written)
			w += float64(t.wall) / 1e6
			c += float64(t.cpu) / 1e6
			q += float64(t.wait) / 1e6
			g += float64(t.gitCPU) / 1e6
			gc += float64(t.gc)
			gcc += t.gcCPU * 1e3
		}
		n := float64(len(part))
		return w / n, c / n, q / n, g / n, gc / n, gcc / n, disk / n, files / n
	}
	n := len(s)
	tail := s[n-max(n/50, 1):]
	mid := s[n*40/100 : n*60/100]
	for _, g := range []struct {
		name string
		part []timing
	}{{"p40-p60", mid}, {"slowest 2%", tail}} {
		w, c, q, gc, n, gcc, disk, files := mean(g.part)
		b.Logf("%s %-10s (%3d): wall %7.2f ms; on a cpu %6.2f ms (git's %5.2f, the collector's %5.2f; %.2f collections); runnable, waiting for a cpu %7.2f ms (summed over threads); read from disk %.0f KiB; files written %.0f",
			what, g.name, len(g.part), w, c, gc, gcc, n, q, disk, files)
	}
}
