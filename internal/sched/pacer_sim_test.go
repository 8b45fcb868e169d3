package sched

import (
	"context"
	"math"
	"sync"
	"testing"
	"time"
)

// simServer is a fixed-window server for the pacer's tests: windows of
// period starting at phase, limit requests each, counted when a request
// arrives. Its reset header is written as the format says.
type simServer struct {
	mu     sync.Mutex
	period time.Duration
	phase  time.Time
	limit  int64
	format resetFormat
	counts map[int64]int64
	r429   int
	probes int // refused probes
	// refused counts non-probe requests refused after the first window
	// (in which the client cannot know the limit yet).
	refused int
	first   int64
	started bool
	sent    []sentRec
}

type sentRec struct {
	agent   string
	at      time.Time
	win     int64
	refused bool
}

type resetFormat uint8

const (
	resetTruncated resetFormat = iota // RFC 3339 to the second, truncated (Anthropic-like)
	resetCeil                         // to the second, rounded up
	resetMillis                       // to the millisecond
	resetDelay                        // a delay to the second from when it answers (OpenAI-like)
)

func (s *simServer) window(t time.Time) int64 {
	return int64(math.Floor(float64(t.Sub(s.phase)) / float64(s.period)))
}

func (s *simServer) end(w int64) time.Time { return s.phase.Add(time.Duration(w+1) * s.period) }

// handle counts a request arriving at at and returns its status and
// figures as a client would parse them at recv.
func (s *simServer) handle(agent string, at, recv time.Time, probe bool) (int, Observation) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.window(at)
	if !s.started {
		s.first, s.started = w, true
	}
	status := 200
	if s.counts[w] >= s.limit {
		status = 429
		s.r429++
		switch {
		case probe:
			s.probes++
		case w != s.first:
			s.refused++
		}
	} else {
		s.counts[w]++
	}
	s.sent = append(s.sent, sentRec{agent: agent, at: at, win: w, refused: status == 429})
	end := s.end(w)
	o := Observation{Limit: s.limit, Remaining: s.limit - s.counts[w], Precision: time.Second}
	switch s.format {
	case resetTruncated:
		o.Reset = end.Truncate(time.Second)
	case resetCeil:
		o.Reset = end.Add(time.Second - 1).Truncate(time.Second)
	case resetMillis:
		o.Reset, o.Precision = end.Truncate(time.Millisecond), time.Millisecond
	case resetDelay:
		d := end.Sub(at).Truncate(time.Second)
		o.Reset, o.Relative = recv.Add(d), true
	}
	return status, o
}

// drive runs agents sequential agents of turns requests each against s
// through p, each with latency lat (see driveEach). It returns each
// agent's waits and the wall time.
func drive(t *testing.T, p *Pacer, s *simServer, agents, turns int, lat time.Duration) (waits map[string][]time.Duration, wall time.Duration) {
	t.Helper()
	lats, ts := make([]time.Duration, agents), make([]int, agents)
	for i := range lats {
		lats[i], ts[i] = lat, turns
	}
	return driveEach(t, p, s, lats, ts, nil, 0)
}

// driveEach runs one sequential agent per latency (agents A, B, ...),
// agent i making turns[i] requests of cost 1 in class class[i] (nil: all
// 0) against s through p: each request waits in the pacer, goes, arrives
// after half the latency and is answered after all of it; a 429 is asked
// again as a retry, and an answer is followed by a pause of think. It
// returns each agent's waits and the wall time.
func driveEach(t *testing.T, p *Pacer, s *simServer, lats []time.Duration, turns, class []int, think time.Duration) (waits map[string][]time.Duration, wall time.Duration) {
	t.Helper()
	start := time.Now()
	var mu sync.Mutex
	waits = map[string][]time.Duration{}
	var wg sync.WaitGroup
	for i, lat := range lats {
		agent := string(rune('A' + i))
		c := 0
		if class != nil {
			c = class[i]
		}
		wg.Go(func() {
			retry := false
			for done := 0; done < turns[i]; {
				t0 := time.Now()
				g, err := p.Wait(context.Background(), Ask{Agent: agent, Class: c, Cost: Cost{Requests: 1}, Retry: retry})
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				waits[agent] = append(waits[agent], time.Since(t0))
				mu.Unlock()
				g.Sent(time.Now())
				time.Sleep(lat / 2)
				at := time.Now()
				time.Sleep(lat - lat/2)
				status, o := s.handle(agent, at, time.Now(), g.Probe)
				var obs [4]Observation
				for d := range obs {
					obs[d] = Observation{Limit: -1, Remaining: -1}
				}
				obs[Requests] = o
				g.Answer(time.Now(), obs, status == 200)
				retry = status != 200
				if !retry {
					done++
					time.Sleep(think)
				}
			}
		})
	}
	wg.Wait()
	return waits, time.Since(start)
}

func newSim(period time.Duration, limit int64, format resetFormat, phase time.Duration) *simServer {
	return &simServer{period: period, phase: time.Now().Add(phase - period), limit: limit, format: format, counts: map[int64]int64{}}
}
