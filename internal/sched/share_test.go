package sched

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// driveEach runs one sequential agent per latency, each making turns[i]
// requests of cost 1 through p against s, with a pause of think between an
// answer and the next request, and returns the wall time.
func driveEach(t *testing.T, p *Pacer, s *simServer, lats []time.Duration, turns []int, class []int, think time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	var wg sync.WaitGroup
	for i, lat := range lats {
		agent := string(rune('A' + i))
		wg.Go(func() {
			retry := false
			for done := 0; done < turns[i]; {
				c := 0
				if class != nil {
					c = class[i]
				}
				g, err := p.Wait(context.Background(), Ask{Agent: agent, Class: c, Cost: Cost{Requests: 1}, Retry: retry})
				if err != nil {
					t.Error(err)
					return
				}
				g.Sent(time.Now())
				time.Sleep(lat / 2)
				at := time.Now()
				time.Sleep(lat - lat/2)
				status, o := s.handle(agent, at, time.Now(), g.Probe)
				unknown := Observation{Limit: -1, Remaining: -1}
				g.Answer(time.Now(), [4]Observation{o, unknown, unknown, unknown}, status == 200)
				retry = status != 200
				if !retry {
					done++
					time.Sleep(think)
				}
			}
		})
	}
	wg.Wait()
	return time.Since(start)
}

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
		wall := driveEach(t, p, s, lats, turns, nil, 50*time.Millisecond)
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

// A share is not held for an agent that has stopped: one that made a
// single request keeps its claim only for a moment, and the window's other
// slots go to the agent still at work, in the same window.
func TestPacerShareNotHeldForIdle(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		s := newSim(10*time.Second, 10, resetTruncated, 10*time.Second)
		p := NewPacer(PacerConfig{})
		defer p.Close()
		lats := []time.Duration{100 * time.Millisecond, 100 * time.Millisecond}
		driveEach(t, p, s, lats, []int{20, 1}, nil, 0)
		if n := perWindow(s)[s.first]["A"]; n != 9 {
			t.Errorf("the agent at work had %d of the first window, want the 9 the other left", n)
		}
	})
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

// Nor for an agent whose request stays in flight long past its claim (a
// long stream, or an answer that never comes): the other agent gets the
// window's slots once the claim is over, within the window.
func TestPacerShareNotHeldForLongFlight(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		s := newSim(10*time.Second, 10, resetTruncated, 10*time.Second)
		p := NewPacer(PacerConfig{})
		defer p.Close()
		lats := []time.Duration{100 * time.Millisecond, 30 * time.Second}
		driveEach(t, p, s, lats, []int{20, 1}, nil, 0)
		if n := perWindow(s)[s.first]["A"]; n != 9 {
			t.Errorf("the agent at work had %d of the first window, want the 9 the other left", n)
		}
	})
}
