package sim

import (
	"math"
	"math/rand/v2"
	"slices"
)

// simTask is one task of a simulation: what it is (fixed by the seed) and
// where it stands.
type simTask struct {
	// The workload.
	dur      float64
	deps     []int32
	children []int32
	prio     float64 // bottom level: the longest chain of work from its start
	writes   []int32 // files
	util     int32   // utility it needs, or -1
	iface    bool    // its integration changes an interface

	// State.
	state       uint8
	pending     int32 // dependencies not yet integrated (as the coordinator knows)
	attempts    int
	reworks     int
	base        int64 // integrations at the start of the current work
	ifaceBase   int64
	writingUtil bool
	firstUtil   bool // this attempt writes the first copy of its utility
	extra       float64
	ran         bool
	windowOpen  bool
	cands       []claimCand
}

// Task states.
const (
	stPending uint8 = iota
	stReady
	stClaimed // assigned or granted; running, integrating or reworking
	stDone
	stFailed
	stSkipped
)

type claimCand struct {
	agent int32
	score float64
}

// Stream constants separate the random streams drawn from one seed.
const (
	streamWorkload = 0x776f726b6c6f6164 // durations and dependencies
	streamDraws    = 0x6472617773       // write sets, utilities, interfaces
	streamAgents   = 0x6167656e7473     // heartbeat phases, claims
)

// generateWorkload draws durations and dependencies from p, then the
// per-task draws.
func generateWorkload(p SwarmParams) []simTask {
	rng := rand.New(rand.NewPCG(p.Seed, streamWorkload))
	mu, sigma := math.Log(p.MedianS), lognormalSigma(p.MedianS, p.P90S)
	w := Workload{Durations: make([]float64, p.Tasks), Deps: make([][]int32, p.Tasks)}
	for i := range p.Tasks {
		w.Durations[i] = math.Exp(mu + sigma*rng.NormFloat64())
		if i > 0 && rng.Float64() < p.DepProb {
			lo := max(0, i-depWindow)
			w.Deps[i] = []int32{int32(lo + rng.IntN(i-lo))}
		}
	}
	return attachDraws(p, w)
}

// attachDraws builds the tasks of workload w with their write sets,
// utilities and interface flags drawn from p.Seed, and their bottom
// levels.
func attachDraws(p SwarmParams, w Workload) []simTask {
	n := len(w.Durations)
	rng := rand.New(rand.NewPCG(p.Seed, streamDraws))
	tasks := make([]simTask, n)
	// The tables are built only when drawn from (building them draws no
	// random numbers, so this changes no result).
	var files, utils zipf
	if p.WriteSet > 0 {
		files = newZipf(p.Files, p.Zipf)
	}
	if p.UtilityProb > 0 {
		nu := p.Utilities
		if nu == 0 {
			nu = max(1, n/10)
		}
		utils = newZipf(nu, 1)
	}
	writes := make([]int32, 0, n*p.WriteSet)
	for i := range tasks {
		t := &tasks[i]
		t.dur, t.util = w.Durations[i], -1
		if w.Deps != nil {
			t.deps = w.Deps[i]
		}
		start := len(writes)
		for tries := 0; len(writes)-start < p.WriteSet; tries++ {
			f := files.draw(rng)
			if tries > 100*p.WriteSet { // a steep Zipf: take the next free ranks
				f = 0
				for slices.Contains(writes[start:], f) {
					f++
				}
			}
			if !slices.Contains(writes[start:], f) {
				writes = append(writes, f)
			}
		}
		t.writes = writes[start:len(writes):len(writes)]
		if rng.Float64() < p.UtilityProb {
			t.util = utils.draw(rng)
		}
		t.iface = rng.Float64() < p.InterfaceProb
	}
	for i := range tasks {
		for _, d := range tasks[i].deps {
			tasks[d].children = append(tasks[d].children, int32(i))
		}
	}
	for i := n - 1; i >= 0; i-- { // children come after their parents
		best := 0.0
		for _, c := range tasks[i].children {
			best = max(best, tasks[c].prio)
		}
		tasks[i].prio = tasks[i].dur + best
	}
	return tasks
}

// zipf draws ranks 0..n-1 with weight (rank+1)^-s.
type zipf struct{ cdf []float64 }

func newZipf(n int, s float64) zipf {
	cdf := make([]float64, n)
	total := 0.0
	for i := range n {
		total += math.Pow(float64(i+1), -s)
		cdf[i] = total
	}
	for i := range cdf {
		cdf[i] /= total
	}
	return zipf{cdf}
}

func (z zipf) draw(rng *rand.Rand) int32 {
	i, _ := slices.BinarySearch(z.cdf, rng.Float64())
	return int32(min(i, len(z.cdf)-1))
}

// uniform01 is a uniform number in [0, 1) determined by (seed, a, b) alone,
// so a task's n-th attempt passes or fails its tests the same way whatever
// else the simulation does (common random numbers across agent counts).
func uniform01(seed uint64, a, b int) float64 {
	x := seed ^ uint64(a)*0x9e3779b97f4a7c15 ^ uint64(b)*0xc2b2ae3d27d4eb4f
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return float64(x>>11) / (1 << 53)
}
