package swarm

import (
	"math"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// A worker's local policy scores, from its view of the board and its own
// recent actions, how urgent acting is (Action), how much it should
// coordinate (Collab) and whether to give up its slot (Yield), each 0–1,
// and records them. Three guards keep it from acting on bad information:
//
//   - a score computed from a snapshot older than StaleAfter (200 ms)
//     counts as 0: the worker does nothing on it and looks again;
//   - three sharply different Action scores in a row for the same kind of
//     decision put the worker in observation mode (reads only) for
//     ObserveFor;
//   - sustained CPU load above CPUHigh sets Yield to 1, and the worker
//     publishes its load.

// PolicyConfig tunes a Policy; zero fields take the defaults.
type PolicyConfig struct {
	StaleAfter  time.Duration // default 200ms
	Oscillation float64       // a jump larger than this is "sharp"; default 0.5
	ObserveFor  time.Duration // default 5s
	CPUHigh     float64       // default 0.85
	CPUSustain  int           // samples in a row above CPUHigh; default 3
	BidAt       float64       // least Action to bid; default 0.3
	YieldAt     float64       // Yield at or above this gives up the slot; default 0.5
}

func (c *PolicyConfig) defaults() {
	if c.StaleAfter <= 0 {
		c.StaleAfter = 200 * time.Millisecond
	}
	if c.Oscillation <= 0 {
		c.Oscillation = 0.5
	}
	if c.ObserveFor <= 0 {
		c.ObserveFor = 5 * time.Second
	}
	if c.CPUHigh <= 0 {
		c.CPUHigh = 0.85
	}
	if c.CPUSustain <= 0 {
		c.CPUSustain = 3
	}
	if c.BidAt <= 0 {
		c.BidAt = 0.3
	}
	if c.YieldAt <= 0 {
		c.YieldAt = 0.5
	}
}

// Snapshot is what a worker sees when it decides.
type Snapshot struct {
	At       time.Time // when the view was taken
	Ready    int       // ready tasks it could ask for
	Idle     int       // its free slots
	Workers  int       // live workers it knows of
	Overlaps int       // earlier intents overlapping its own (intent decisions)
	Risk     float64   // the task's risk, 0–1 (intent decisions)
	Recent   int       // its recent attempts
	Failed   int       // of which failed
	Cooldown bool      // the merge role is cooling down
}

// Scores is one decision's scores. Kind names the decision ("bid",
// "intent"). Stale is set when the snapshot was too old (all scores 0);
// Observing while the worker only reads.
type Scores struct {
	Kind      string    `json:"kind"`
	Action    float64   `json:"action"`
	Collab    float64   `json:"collab"`
	Yield     float64   `json:"yield"`
	At        time.Time `json:"at"`
	Stale     bool      `json:"stale,omitempty"`
	Observing bool      `json:"observing,omitempty"`
}

// Policy is one worker's policy state. It is safe for concurrent use (a
// worker's scheduler and its running attempts share it).
type Policy struct {
	mu           sync.Mutex
	cfg          PolicyConfig
	now          func() time.Time
	history      map[string][]float64 // raw Action scores by kind, newest last
	observeUntil time.Time
	highCPU      int // consecutive samples above CPUHigh
	load         float64
	last         map[string]Scores
}

// NewPolicy returns a worker's policy on clock now.
func NewPolicy(cfg PolicyConfig, now func() time.Time) *Policy {
	cfg.defaults()
	return &Policy{cfg: cfg, now: now, history: map[string][]float64{}, last: map[string]Scores{}}
}

func clamp01(x float64) float64 { return math.Max(0, math.Min(1, x)) }

// ObserveCPU folds in one CPU load sample (0–1 of the machine).
func (p *Policy) ObserveCPU(load float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.load = load
	if load > p.cfg.CPUHigh {
		p.highCPU++
	} else {
		p.highCPU = 0
	}
}

// Overloaded reports sustained CPU load above CPUHigh, and the load.
func (p *Policy) Overloaded() (bool, float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.overloaded(), p.load
}

func (p *Policy) overloaded() bool { return p.highCPU >= p.cfg.CPUSustain }

// Observing reports whether the worker is in observation mode.
func (p *Policy) Observing() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.now().Before(p.observeUntil)
}

// Score computes and records the scores of one decision of kind from s.
func (p *Policy) Score(kind string, s Snapshot) Scores {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	sc := Scores{Kind: kind, At: s.At}
	if now.Sub(s.At) > p.cfg.StaleAfter {
		sc.Stale = true
		p.last[kind] = sc
		return sc
	}
	// Action: work waiting per worker, only with a free slot.
	if s.Idle > 0 && s.Ready > 0 && !s.Cooldown {
		perWorker := float64(s.Ready) / float64(max(s.Workers, 1))
		sc.Action = clamp01(0.3 + 0.7*(1-math.Exp(-perWorker)))
	}
	// Collab: overlapping intents and risk call for coordination.
	sc.Collab = clamp01(0.2 + 0.5*math.Min(1, float64(s.Overlaps)/2) + 0.3*s.Risk)
	// Yield: a worker that keeps failing, or that the cool-down holds back,
	// leaves the work to others.
	if s.Recent > 0 {
		sc.Yield = clamp01(0.8 * float64(s.Failed) / float64(s.Recent))
	}
	if s.Cooldown {
		sc.Yield = math.Max(sc.Yield, 0.5)
	}
	if p.overloaded() {
		sc.Yield = 1
	}
	h := append(p.history[kind], sc.Action)
	if len(h) > 3 {
		h = h[len(h)-3:]
	}
	p.history[kind] = h
	if len(h) == 3 && math.Abs(h[1]-h[0]) > p.cfg.Oscillation && math.Abs(h[2]-h[1]) > p.cfg.Oscillation {
		p.observeUntil = now.Add(p.cfg.ObserveFor)
		p.history[kind] = nil
	}
	if now.Before(p.observeUntil) {
		sc.Observing, sc.Action = true, 0
	}
	p.last[kind] = sc
	return sc
}

// Act reports whether scores allow taking work: fresh, not observing, urgent
// enough, and not yielding.
func (p *Policy) Act(sc Scores) bool {
	return !sc.Stale && !sc.Observing && sc.Action >= p.cfg.BidAt && sc.Yield < p.cfg.YieldAt
}

// Fresh reports whether scores computed at sc.At may still be acted on.
func (p *Policy) Fresh(sc Scores) bool { return p.now().Sub(sc.At) <= p.cfg.StaleAfter }

// Last returns the latest scores of every kind, for the worker's record.
func (p *Policy) Last() []Scores {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]Scores, 0, len(p.last))
	for _, s := range p.last {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Kind < out[j].Kind })
	return out
}

// OverlapChoice is what a worker does when its intent overlaps an earlier
// one.
type OverlapChoice string

// Choices, in the order a worker tries them.
const (
	OverlapWait    OverlapChoice = "wait"    // until the earlier intent ends
	OverlapNarrow  OverlapChoice = "narrow"  // declare a narrower scope
	OverlapProceed OverlapChoice = "proceed" // with a declared conflict
)

// Overlap chooses: a collaborative score waits (while waited < maxWait),
// then a scope that can be narrowed is, and otherwise the worker proceeds
// and declares the conflict.
func (p *Policy) Overlap(sc Scores, waited, maxWait time.Duration, canNarrow bool) OverlapChoice {
	switch {
	case sc.Collab >= 0.5 && waited < maxWait:
		return OverlapWait
	case canNarrow:
		return OverlapNarrow
	}
	return OverlapProceed
}

// Intent compaction: once the intent log of a run holds more than share of
// its task count (and at least minCompact records), the records of
// integrated tasks are folded into patterns — directory and change kinds,
// with a count and the tasks — and archived.

const minCompact = 8

// compactDue reports whether a run's intent log should be compacted.
func compactDue(logged, tasks int, share float64) bool {
	return logged >= minCompact && float64(logged) > share*float64(tasks)
}

// IntentPattern is an archived summary of similar intents.
type IntentPattern struct {
	Dir     string   `json:"dir"`
	Changes []string `json:"changes"`
	Count   int      `json:"count"`
	Tasks   []string `json:"tasks"`
}

// loggedIntent is one intent-log record.
type loggedIntent struct {
	Task    string   `json:"task"`
	Files   []string `json:"files"`
	Changes []string `json:"changes"`
}

// patternKey is the directory and change kinds that group intents.
func patternKey(in loggedIntent) (dir string, changes []string) {
	dirs := make([]string, 0, len(in.Files))
	for _, f := range in.Files {
		if d, ok := strings.CutSuffix(f, "/"); ok {
			dirs = append(dirs, path.Clean(d))
		} else {
			dirs = append(dirs, path.Dir(f))
		}
	}
	slices.Sort(dirs)
	dirs = slices.Compact(dirs)
	dir = "."
	if len(dirs) > 0 {
		dir = dirs[0]
		for _, d := range dirs[1:] {
			for !within(d, dir) {
				dir = path.Dir(dir)
			}
		}
	}
	changes = slices.Clone(in.Changes)
	slices.Sort(changes)
	return dir, slices.Compact(changes)
}

func within(p, dir string) bool { return dir == "." || p == dir || strings.HasPrefix(p, dir+"/") }

// compactIntents groups intents into patterns, largest first.
func compactIntents(ins []loggedIntent) []IntentPattern {
	by := map[string]*IntentPattern{}
	for _, in := range ins {
		dir, ch := patternKey(in)
		k := dir + "\x00" + strings.Join(ch, ",")
		p := by[k]
		if p == nil {
			p = &IntentPattern{Dir: dir, Changes: ch}
			by[k] = p
		}
		p.Count++
		p.Tasks = append(p.Tasks, in.Task)
	}
	out := make([]IntentPattern, 0, len(by))
	for _, p := range by {
		slices.Sort(p.Tasks)
		out = append(out, *p)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return out[i].Dir < out[j].Dir
	})
	return out
}
