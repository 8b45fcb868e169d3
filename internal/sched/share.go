package sched

import (
	"math"
	"time"
)

// Shares of a full window.
//
// Round-robin alone orders a queue; it does nothing while there is none.
// When a window's limit is what ends its sending, agents whose answers come
// fast take its slots before the queue forms, and an agent whose answers
// were slow enters the next window with more of its work left than the
// others: the run ends when its chain does. So, in each dimension whose
// window is full before its end, an agent is held once it has had its
// share of the window (the limit over the agents at work; for requests,
// the share rounded up) while the slots left are no more than the agents
// that have had less are owed, and they are still at work.
//
// Holding is never what stops a window from being used: an agent within
// its share is never held, an agent is owed a slot only while its next
// request fits within its share, and an agent that is not waiting keeps
// its claim only so long: with a request in flight, for
// PacerConfig.ShareIdle from that request's grant; after an answer, for
// three times its usual pause before its next request (at least
// minClaim, at most ShareIdle). A new window starts every share over.

// paceAgent is what a Pacer knows of one agent.
type paceAgent struct {
	served  uint64 // seq of its latest grant
	class   int    // of its latest ask
	cost    Cost   // of its latest ask
	waiting int
	flights []*Grant      // its grants not settled
	last    time.Time     // its latest answer; zero: none yet
	gap     time.Duration // its usual pause from an answer to its next request; 0: not known
	touched time.Time     // its latest ask or answer
	win     [numDims]int64
	used    [numDims]float64 // granted in window win[d]
}

const (
	// minClaim is the least an agent's claim lasts after its answer, so
	// that an agent with no pause keeps it across scheduling delays.
	minClaim = 100 * time.Millisecond
	// unknownGapClaim is an agent's claim after an answer before any pause
	// of its is known.
	unknownGapClaim = 500 * time.Millisecond
	// forgetAfter is how long an agent idle with nothing waiting or in
	// flight is remembered.
	forgetAfter = 10 * time.Minute
)

// arrive notes a's request joining the queue at now.
func (p *Pacer) arrive(now time.Time, a Ask) {
	s := p.agents[a.Agent]
	if s == nil {
		if p.arrival%256 == 0 {
			p.forget(now)
		}
		s = &paceAgent{}
		p.agents[a.Agent] = s
	}
	if s.waiting == 0 && len(s.flights) == 0 && !s.last.IsZero() {
		s.gap = ewma(s.gap, now.Sub(s.last)) // a pause between turns
	}
	s.waiting++
	s.class, s.cost, s.touched = a.Class, a.Cost, now
}

// forget drops agents idle for forgetAfter with nothing waiting or in
// flight: an agent coming back is served as one never seen.
func (p *Pacer) forget(now time.Time) {
	for name, s := range p.agents {
		if s.waiting == 0 && len(s.flights) == 0 && now.Sub(s.touched) > forgetAfter {
			delete(p.agents, name)
		}
	}
}

// ewma folds d into the average avg (0: none yet), weighted to the latest.
func ewma(avg, d time.Duration) time.Duration {
	d = max(d, time.Nanosecond)
	if avg == 0 {
		return d
	}
	return (avg*3 + d) / 4
}

// charge counts n of dimension d granted in window win.
func (s *paceAgent) charge(d Dim, win int64, n float64) {
	if s.win[d] != win {
		s.win[d], s.used[d] = win, 0
	}
	s.used[d] += n
}

// usedIn is what s was granted of dimension d in window win.
func (s *paceAgent) usedIn(d Dim, win int64) float64 {
	if s.win[d] != win {
		return 0
	}
	return s.used[d]
}

// settle notes g answered or given back at t; what the server did not
// charge no longer counts against the agent's share.
func (s *paceAgent) settle(g *Grant, t time.Time, charged bool) {
	s.last, s.touched = t, t
	for i, x := range s.flights {
		if x == g {
			s.flights = append(s.flights[:i], s.flights[i+1:]...)
			break
		}
	}
	if charged {
		return
	}
	for d := range numDims {
		if s.win[d] == g.win[d] {
			s.used[d] = max(s.used[d]-float64(g.cost.of(d)), 0)
		}
	}
}

// claimUntil is when s stops being owed its share, zero while it is
// waiting (its request is in the queue, and is served by it).
func (p *Pacer) claimUntil(s *paceAgent) time.Time {
	if s.waiting > 0 {
		return time.Time{}
	}
	bound := func(c time.Duration) time.Duration { return min(max(c, minClaim), p.cfg.ShareIdle) }
	if len(s.flights) > 0 {
		oldest := s.flights[0].granted
		for _, g := range s.flights[1:] {
			if g.granted.Before(oldest) {
				oldest = g.granted
			}
		}
		// Latencies are heavy-tailed (a fifth of HIVEMIND's latency-spike
		// answers take five times the others, and a long generation many
		// times that), so no multiple of the usual one says an answer is
		// late: the claim lasts ShareIdle from the grant.
		return oldest.Add(p.cfg.ShareIdle)
	}
	if s.last.IsZero() {
		return s.touched // given back without an answer: no claim
	}
	c := unknownGapClaim
	if s.gap > 0 {
		c = 3 * s.gap
	}
	return s.last.Add(bound(c))
}

// atWork says whether s is waiting or within its claim at now.
func (p *Pacer) atWork(s *paceAgent, now time.Time) bool {
	u := p.claimUntil(s)
	return u.IsZero() || now.Before(u)
}

// share says whether a, admitted by the model at now, is held for the
// agents owed the rest of a full window, and if so the earliest time that
// may change without an ask or an answer (zero: only they can change it).
// Retries are never held: they keep the place they had.
func (p *Pacer) share(now time.Time, a Ask) (held bool, until time.Time) {
	if a.Retry || len(p.agents) < 2 {
		return false, time.Time{}
	}
	me := p.agents[a.Agent]
	var others []*paceAgent // at work, a's own agent left out
	for _, s := range p.agents {
		if s != me && p.atWork(s, now) {
			others = append(others, s)
		}
	}
	if len(others) == 0 {
		return false, time.Time{}
	}
	working := len(others) + 1
	for d := range numDims {
		x := &p.d[d]
		n := float64(a.Cost.of(d))
		if n <= 0 || x.limit == 0 || x.bucket {
			continue
		}
		fair := x.limit / float64(working)
		if d == Requests {
			fair = math.Ceil(fair)
		}
		if me.usedIn(d, x.n)+n <= fair {
			continue
		}
		owed := 0.0
		var wake time.Time
		for _, s := range others {
			if s.class < a.Class {
				continue
			}
			u := s.usedIn(d, x.n)
			if u+max(float64(s.cost.of(d)), 1) > fair {
				continue // its next request would be over its share too
			}
			owed += fair - u
			wake = earliest(wake, p.claimUntil(s))
		}
		if owed > 0 && x.limit-x.est()-n < owed {
			return true, earliest(wake, x.end())
		}
	}
	return false, time.Time{}
}
