// Package policy holds the decisions of swarm mode that depend only on the
// time and on what is observed, never on the board itself: a worker's
// scores (whether to bid, how much to coordinate, whether to give up its
// slot, what to do about an overlapping intent) and the watchdog that
// breaks the silence around a ready task nobody claims. Both are pure state
// on the clock they are given; package swarm's workers and gatekeepers
// feed them and act on the answers.
package policy

import (
	"math"
	"sort"
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

// Config tunes a Worker; zero fields take the defaults.
type Config struct {
	StaleAfter  time.Duration // default 200ms
	Oscillation float64       // a jump larger than this is "sharp"; default 0.5
	ObserveFor  time.Duration // default 5s
	CPUHigh     float64       // default 0.85
	CPUSustain  int           // samples in a row above CPUHigh; default 3
	BidAt       float64       // least Action to bid; default 0.3
	YieldAt     float64       // Yield at or above this gives up the slot; default 0.5
}

func (c *Config) defaults() {
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

// Worker is one worker's policy state. It is safe for concurrent use (a
// worker's scheduler and its running attempts share it).
type Worker struct {
	mu           sync.Mutex
	cfg          Config
	now          func() time.Time
	history      map[string][]float64 // raw Action scores by kind, newest last
	observeUntil time.Time
	highCPU      int // consecutive samples above CPUHigh
	load         float64
	last         map[string]Scores
}

// New returns a worker's policy on clock now.
func New(cfg Config, now func() time.Time) *Worker {
	cfg.defaults()
	return &Worker{cfg: cfg, now: now, history: map[string][]float64{}, last: map[string]Scores{}}
}

func clamp01(x float64) float64 { return math.Max(0, math.Min(1, x)) }

// ObserveCPU folds in one CPU load sample (0–1 of the machine).
func (p *Worker) ObserveCPU(load float64) {
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
func (p *Worker) Overloaded() (bool, float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.overloaded(), p.load
}

func (p *Worker) overloaded() bool { return p.highCPU >= p.cfg.CPUSustain }

// Observing reports whether the worker is in observation mode.
func (p *Worker) Observing() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.now().Before(p.observeUntil)
}

// Score computes and records the scores of one decision of kind from s.
func (p *Worker) Score(kind string, s Snapshot) Scores {
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
func (p *Worker) Act(sc Scores) bool {
	return !sc.Stale && !sc.Observing && sc.Action >= p.cfg.BidAt && sc.Yield < p.cfg.YieldAt
}

// Fresh reports whether scores computed at sc.At may still be acted on.
func (p *Worker) Fresh(sc Scores) bool { return p.now().Sub(sc.At) <= p.cfg.StaleAfter }

// StaleAfter is the age beyond which a snapshot is not acted on.
func (p *Worker) StaleAfter() time.Duration { return p.cfg.StaleAfter }

// Last returns the latest scores of every kind, for the worker's record.
func (p *Worker) Last() []Scores {
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
func (p *Worker) Overlap(sc Scores, waited, maxWait time.Duration, canNarrow bool) OverlapChoice {
	switch {
	case sc.Collab >= 0.5 && waited < maxWait:
		return OverlapWait
	case canNarrow:
		return OverlapNarrow
	}
	return OverlapProceed
}
