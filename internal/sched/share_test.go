package sched

import (
	"testing"
	"testing/synctest"
	"time"
)

// perWindow counts the requests s admitted from each agent in each window.
func perWindow(s *simServer) map[int64]map[string]int {
	out := map[int64]map[string]int{}
	for _, r := range s.sent {
		if r.refused {
			continue
		}
		if out[r.win] == nil {
			out[r.win] = map[string]int{}
		}
		out[r.win][r.agent]++
	}
	return out
}

// When the limit, not time, ends a window's sending, the agents whose
// answers are slow get as many of its slots as the fast ones (HIVEMIND's
// latency-spike: ten agents of ten turns, 60 a window), so that none
// carries more of its work into the next window than the others and the
// run ends one share of turns after the window does.
func TestPacerShareOfFullWindow(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		s := newSim(10*time.Second, 60, resetTruncated, 10*time.Second)
		p := NewPacer(PacerConfig{})
		defer p.Close()
		lats := make([]time.Duration, 10)
		turns := make([]int, 10)
		for i := range lats {
			lats[i] = 100 * time.Millisecond
			if i%3 == 0 {
				lats[i] = 500 * time.Millisecond // four agents of ten answer five times slower
			}
			turns[i] = 10
		}
		_, wall := driveEach(t, p, s, lats, turns, nil, 50*time.Millisecond)
		w := perWindow(s)
		for a, n := range w[s.first] {
			if n != 6 {
				t.Errorf("agent %s had %d of the first window's 60 (all: %v)", a, n, w[s.first])
			}
		}
		// The second window opens 10 s in (and a second later at most, its
		// reset written to the second); each agent has four turns left, the
		// slow ones 4 × (500 ms + 50 ms).
		if limit := 11*time.Second + 4*550*time.Millisecond; wall > limit {
			t.Errorf("wall %v, want at most %v: an agent carried more than its share into the second window", wall, limit)
		}
		if s.refused > 0 {
			t.Errorf("%d requests refused after the first window", s.refused)
		}
	})
}

// A share is not held for an agent that is no longer at work: one that
// made a single request and stopped keeps its claim only for a moment, and
// one whose single answer takes 30 s (a long stream, or an answer that
// never comes) only for ShareIdle. The window's other slots go to the agent
// still at work, in the same window.
func TestPacerShareNotHeldForAbsent(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		lat  time.Duration // of the agent with one request
	}{
		{"stopped", 100 * time.Millisecond},
		{"long flight", 30 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				s := newSim(10*time.Second, 10, resetTruncated, 10*time.Second)
				p := NewPacer(PacerConfig{})
				defer p.Close()
				driveEach(t, p, s, []time.Duration{100 * time.Millisecond, tc.lat}, []int{20, 1}, nil, 0)
				if n := perWindow(s)[s.first]["A"]; n != 9 {
					t.Errorf("the agent at work had %d of the first window, want the 9 the other left", n)
				}
			})
		})
	}
}

// A share is held only for agents of the same class or a higher one: a
// higher class takes the slots a lower one has not had.
func TestPacerShareRespectsClasses(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		s := newSim(10*time.Second, 20, resetTruncated, 10*time.Second)
		p := NewPacer(PacerConfig{})
		defer p.Close()
		// A (class 1) answers fast; B (class 0) slowly.
		lats := []time.Duration{50 * time.Millisecond, 2 * time.Second}
		driveEach(t, p, s, lats, []int{30, 5}, []int{1, 0}, 0)
		w := perWindow(s)[s.first]
		if w["A"] <= 10 {
			t.Errorf("the higher class had %d of the first window's 20 (all: %v): held for a lower class", w["A"], w)
		}
		// And the other way round B, the higher class, is owed its share.
		s2 := newSim(10*time.Second, 20, resetTruncated, 10*time.Second)
		p2 := NewPacer(PacerConfig{})
		defer p2.Close()
		driveEach(t, p2, s2, lats, []int{30, 5}, []int{0, 1}, 0)
		w2 := perWindow(s2)[s2.first]
		if w2["B"] != 5 || w2["A"] > 10 {
			t.Errorf("first window %v: want B's 5 and A at its share of 10", w2)
		}
	})
}
