package sched

import (
	"context"
	"fmt"
	"math"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// The pacer learns a window's period from the server's resets, whatever
// the format, and paces to it: no agent dies waiting, the wall time is
// close to the rate-limit bound, and the server refuses only probes.
func TestPacerLearnsPeriod(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		format resetFormat
		period time.Duration
	}{
		{"truncated-7s", resetTruncated, 7 * time.Second},
		{"ceil-13s", resetCeil, 13 * time.Second},
		{"millis-2.5s", resetMillis, 2500 * time.Millisecond},
		{"delay-9s", resetDelay, 9 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				const limit, agents, turns = 5, 10, 6
				lat := 80 * time.Millisecond
				// A phase that falls inside a second: truncation loses it.
				s := newSim(tc.period, limit, tc.format, 370*time.Millisecond)
				p := NewPacer(PacerConfig{})
				defer p.Close()
				_, wall := drive(t, p, s, agents, turns, lat)
				st := p.Stats()
				if len(st) != 1 || st[0].Period < tc.period-time.Second || st[0].Period > tc.period+time.Second || st[0].PeriodSource != SourceLearned {
					t.Errorf("stats %+v: want a period of %v learned", st, tc.period)
				}
				// The bound: 60 requests at 5 a window start no earlier than the
				// 12th window, which begins 11 periods after the first (the
				// first is the one already under way at the start, of which
				// the sim leaves 370 ms).
				bound := 370*time.Millisecond + 10*tc.period + lat
				if ratio := float64(wall) / float64(bound); ratio > 1.15 {
					t.Errorf("wall %v, bound %v: ×%.3f", wall, bound, ratio)
				}
				if s.refused > 0 {
					t.Errorf("%d requests refused after the first window (and %d probes)", s.refused, s.probes)
				}
				if s.probes > 6 {
					t.Errorf("%d probes refused in 12 windows", s.probes)
				}
			})
		})
	}
}

// With resets truncated to the second, a batch is never released before the
// true boundary, and the boundary's phase is learned: the lag between the
// window's start and the first send in it shrinks.
func TestPacerTruncatedResets(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		s := newSim(10*time.Second, 4, resetTruncated, 600*time.Millisecond)
		p := NewPacer(PacerConfig{})
		defer p.Close()
		drive(t, p, s, 8, 10, 50*time.Millisecond)
		// The first send of each window, measured from the window's start.
		first := map[int64]time.Duration{}
		for _, r := range s.sent {
			if r.refused {
				continue
			}
			lag := r.at.Sub(s.end(r.win - 1))
			if f, ok := first[r.win]; !ok || lag < f {
				first[r.win] = lag
			}
		}
		var late []time.Duration
		for w := int64(1); w < int64(len(first)); w++ {
			late = append(late, first[w])
		}
		if len(late) < 15 {
			t.Fatalf("only %d windows: %v", len(late), late)
		}
		for _, l := range late[len(late)-5:] {
			if l > 400*time.Millisecond {
				t.Errorf("late windows start %v after the boundary; lags %v", l, late)
				break
			}
		}
		if s.refused > 0 {
			t.Errorf("%d requests refused after the first window", s.refused)
		}
	})
}

// A waiting request is not bound to the time planned for it: an answer
// that shows the server has capacity now releases it at once.
func TestPacerRevisableWait(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		p := NewPacer(PacerConfig{})
		defer p.Close()
		unknown := Observation{Limit: -1, Remaining: -1}
		obs := func(o Observation) [4]Observation { return [4]Observation{o, unknown, unknown, unknown} }
		g1, _ := p.Wait(context.Background(), Ask{Agent: "a", Cost: Cost{Requests: 1}})
		g2, _ := p.Wait(context.Background(), Ask{Agent: "b", Cost: Cost{Requests: 1}})
		g1.Sent(time.Now())
		g2.Sent(time.Now())
		time.Sleep(100 * time.Millisecond)
		// The window is full until a minute from now.
		end := time.Now().Add(time.Minute).Truncate(time.Millisecond)
		g1.Answer(time.Now(), obs(Observation{Limit: 2, Remaining: 0, Reset: end, Precision: time.Millisecond}), true)
		got := make(chan time.Duration, 1)
		go func() {
			t0 := time.Now()
			g, err := p.Wait(context.Background(), Ask{Agent: "c", Cost: Cost{Requests: 1}})
			if err != nil {
				t.Error(err)
			}
			g.Cancel()
			got <- time.Since(t0)
		}()
		time.Sleep(5 * time.Second)
		synctest.Wait()
		select {
		case d := <-got:
			t.Fatalf("released after %v in a full window", d)
		default:
		}
		// The other answer shows the server began a new window already.
		g2.Answer(time.Now(), obs(Observation{Limit: 2, Remaining: 1, Reset: time.Now().Add(time.Minute).Truncate(time.Millisecond).Add(time.Second), Precision: time.Millisecond}), true)
		synctest.Wait()
		select {
		case d := <-got:
			if d > 6*time.Second {
				t.Errorf("waited %v", d)
			}
		default:
			t.Fatal("still waiting after the server showed capacity")
		}
	})
}

// At capacity every agent gets a turn each round: between two grants of one
// agent no other agent gets two, and a greedy agent with many requests in
// parallel takes no more than its turn.
func TestPacerFairPacing(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		s := newSim(5*time.Second, 4, resetMillis, time.Second)
		p := NewPacer(PacerConfig{})
		defer p.Close()
		// A greedy agent G sends 4 at a time, forever, until the others end.
		ctx, cancel := context.WithCancel(context.Background())
		greedy := make(chan struct{})
		for range 4 {
			go func() {
				defer func() { greedy <- struct{}{} }()
				for ctx.Err() == nil {
					g, err := p.Wait(ctx, Ask{Agent: "G", Cost: Cost{Requests: 1}})
					if err != nil {
						return
					}
					g.Sent(time.Now())
					time.Sleep(20 * time.Millisecond)
					status, o := s.handle("G", time.Now(), time.Now(), g.Probe)
					unknown := Observation{Limit: -1, Remaining: -1}
					g.Answer(time.Now(), [4]Observation{o, unknown, unknown, unknown}, status == 200)
				}
			}()
		}
		waits, _ := drive(t, p, s, 6, 6, 40*time.Millisecond)
		cancel()
		for range 4 {
			<-greedy
		}
		// 7 agents share 4 a window: no sequential agent waits more than two
		// windows for a turn.
		for a, ws := range waits {
			for i, w := range ws {
				if i > 0 && w > 2*s.period+time.Second {
					t.Errorf("agent %s waited %v for turn %d", a, w, i)
				}
			}
		}
		// Between two grants of one agent, no other agent is granted twice.
		// (While all run: at the end only the greedy agent is left.)
		var seq []string
		for _, r := range s.sent {
			if !r.refused && len(seq) < 36 {
				seq = append(seq, r.agent)
			}
		}
		last := map[string]int{}
		for i, a := range seq {
			if j, ok := last[a]; ok {
				count := map[string]int{}
				for _, b := range seq[j+1 : i] {
					count[b]++
					if count[b] >= 3 {
						t.Fatalf("between grants %d and %d of %s, %s was granted %d times: %v", j, i, a, b, count[b], seq)
					}
				}
			}
			last[a] = i
		}
		if g := countOf(seq, "G"); g > len(seq)/3 {
			t.Errorf("greedy agent got %d of %d grants", g, len(seq))
		}
	})
}

func countOf(seq []string, a string) int {
	n := 0
	for _, x := range seq {
		if x == a {
			n++
		}
	}
	return n
}

// Classes go first, and aging keeps the lower ones from starving.
func TestPacerClassesAndRetries(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		p := NewPacer(PacerConfig{Requests: Rate{Limit: 1, Per: time.Second}})
		defer p.Close()
		g0, _ := p.Wait(context.Background(), Ask{Agent: "x", Cost: Cost{Requests: 1}})
		order := make(chan string, 3)
		for _, a := range []Ask{{Agent: "low"}, {Agent: "high", Class: 5}, {Agent: "retry", Retry: true}} {
			a.Cost = Cost{Requests: 1}
			go func() {
				g, err := p.Wait(context.Background(), a)
				if err != nil {
					t.Error(err)
					return
				}
				order <- a.Agent
				g.Answer(time.Now(), [4]Observation{{Limit: -1, Remaining: -1}, {Limit: -1, Remaining: -1}, {Limit: -1, Remaining: -1}, {Limit: -1, Remaining: -1}}, true)
			}()
			synctest.Wait()
		}
		g0.Answer(time.Now(), [4]Observation{{Limit: -1, Remaining: -1}, {Limit: -1, Remaining: -1}, {Limit: -1, Remaining: -1}, {Limit: -1, Remaining: -1}}, true)
		got := fmt.Sprintln(<-order, <-order, <-order)
		if got != "retry high low\n" {
			t.Errorf("order %q", got)
		}
	})
}

// A context that ends while waiting returns its error and leaves no trace.
func TestPacerWaitCancelled(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		p := NewPacer(PacerConfig{Requests: Rate{Limit: 1, Per: time.Minute}})
		defer p.Close()
		g, _ := p.Wait(context.Background(), Ask{Agent: "a", Cost: Cost{Requests: 1}})
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if _, err := p.Wait(ctx, Ask{Agent: "b", Cost: Cost{Requests: 1}}); err == nil {
			t.Fatal("granted in a full window")
		}
		if p.Waiting() != 0 {
			t.Fatalf("%d still waiting", p.Waiting())
		}
		g.Cancel() // never charged: the place is free again
		g2, err := p.Wait(context.Background(), Ask{Agent: "b", Cost: Cost{Requests: 1}})
		if err != nil || g2 == nil {
			t.Fatalf("after cancel: %v", err)
		}
		if st := p.Stats(); len(st) != 1 || st[0].Source != SourceConfigured || st[0].Period != time.Minute || math.Abs(st[0].Used-1) > 0 {
			t.Errorf("stats %+v", st)
		}
	})
}

// A continuous bucket (Anthropic's model: reset is when it is full again)
// is told from fixed windows by its resets, which move later within what
// would be one window; its refill rate is learned from (remaining, reset)
// pairs, and requests trickle at that rate instead of waiting for a full
// bucket.
func TestPacerLearnsBucketRate(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const limit = 6
		period := 12 * time.Second // refills 0.5 a second
		rate := float64(limit) / float64(period)
		var mu sync.Mutex
		level, levelAt := float64(limit), time.Now()
		refused := 0
		p := NewPacer(PacerConfig{})
		defer p.Close()
		unknown := Observation{Limit: -1, Remaining: -1}
		start := time.Now()
		var wg sync.WaitGroup
		for a := range 3 {
			wg.Go(func() {
				for range 7 {
					retry := false
					for {
						g, err := p.Wait(context.Background(), Ask{Agent: string(rune('A' + a)), Cost: Cost{Requests: 1}, Retry: retry})
						if err != nil {
							t.Error(err)
							return
						}
						g.Sent(time.Now())
						time.Sleep(20 * time.Millisecond)
						mu.Lock()
						now := time.Now()
						level = min(limit, level+rate*float64(now.Sub(levelAt)))
						levelAt = now
						ok := level >= 1
						if ok {
							level--
						} else if now.Sub(start) > time.Second {
							refused++
						}
						o := Observation{Limit: limit, Remaining: int64(level), Precision: time.Millisecond,
							Reset: now.Add(time.Duration((limit - level) / rate)).Truncate(time.Millisecond).Add(time.Millisecond)}
						mu.Unlock()
						time.Sleep(20 * time.Millisecond)
						g.Answer(time.Now(), [4]Observation{o, unknown, unknown, unknown}, ok)
						if ok {
							break
						}
						retry = true
					}
				}
			})
		}
		wg.Wait()
		wall := time.Since(start)
		bound := time.Duration(float64(21-limit) / rate)
		if ratio := float64(wall) / float64(bound); ratio > 1.15 {
			t.Errorf("wall %v, bound %v (×%.2f): not paced at the refill rate", wall, bound, ratio)
		}
		if refused > 2 {
			t.Errorf("%d requests refused", refused)
		}
	})
}

// Before the server's first answer only FirstWindow requests go: a first
// burst larger than the server's limit is not refused beyond it, where
// without the hold it is.
func TestPacerFirstWindow(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		first int
		want  func(r429 int) bool
	}{
		{"held", 4, func(n int) bool { return n == 0 }},
		{"not held", -1, func(n int) bool { return n >= 6 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				// 12 agents at once against 5 a window, well inside the window.
				s := newSim(10*time.Second, 5, resetMillis, 8*time.Second)
				p := NewPacer(PacerConfig{FirstWindow: tc.first})
				defer p.Close()
				drive(t, p, s, 12, 1, 100*time.Millisecond)
				if !tc.want(s.r429) {
					t.Errorf("%d requests refused", s.r429)
				}
			})
		})
	}
}

// The first window waits for an answer only so long (FirstWait), and a
// grant of it that is cancelled gives its place to the next request.
func TestPacerFirstWindowWait(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		p := NewPacer(PacerConfig{FirstWindow: 2, FirstWait: 3 * time.Second})
		defer p.Close()
		ask := Ask{Agent: "a", Cost: Cost{Requests: 1}}
		g1, _ := p.Wait(context.Background(), ask)
		if _, err := p.Wait(context.Background(), ask); err != nil {
			t.Fatal(err)
		}
		got := make(chan time.Duration, 2)
		for range 2 {
			go func() {
				t0 := time.Now()
				if _, err := p.Wait(context.Background(), ask); err != nil {
					t.Error(err)
				}
				got <- time.Since(t0)
			}()
		}
		synctest.Wait()
		if p.Waiting() != 2 {
			t.Fatalf("%d waiting, want 2 held behind the first window", p.Waiting())
		}
		g1.Cancel() // never sent: its place goes to one of the two
		synctest.Wait()
		if d := <-got; d != 0 || p.Waiting() != 1 {
			t.Fatalf("after a cancel: one released after %v, %d waiting", d, p.Waiting())
		}
		// No answer comes: the last one goes once FirstWait has passed.
		if d := <-got; d != 3*time.Second {
			t.Errorf("released after %v, want the first window's 3 s", d)
		}
	})
}

// A count a server reports above the requests answered in the window
// includes requests still in flight: the pacer counts those once, not once
// in the count and again as in flight. Whether the server wrote its figures
// as the answered request arrived (counting only the requests before it) or
// as it answered (counting the ones that arrived meanwhile), the pacer
// fills the window and never sends more than the limit.
func TestPacerCountsInFlightOnce(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// used is the count the first answer reports, of the four first
		// requests (4: all of them; 1: itself only).
		used int64
		// granted is how many held requests the first answer releases;
		// then how many the second answer's count (one more, a released
		// one arrived) leaves room for.
		granted, more int
	}{
		{"counted as it answered", 4, 2, 0},
		{"counted as it arrived", 1, 2, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				const limit = 6
				p := NewPacer(PacerConfig{FirstWindow: 4})
				defer p.Close()
				unknown := Observation{Limit: -1, Remaining: -1}
				end := time.Now().Add(300 * time.Millisecond)
				obs := func(used int64) [4]Observation {
					o := Observation{Limit: limit, Remaining: limit - used, Reset: end, Precision: time.Millisecond}
					return [4]Observation{o, unknown, unknown, unknown}
				}
				var first []*Grant
				for range 4 {
					g, err := p.Wait(context.Background(), Ask{Agent: "a", Cost: Cost{Requests: 1}})
					if err != nil {
						t.Fatal(err)
					}
					g.Sent(time.Now())
					first = append(first, g)
				}
				granted := make(chan *Grant, 8)
				for i := range 4 {
					go func() {
						g, err := p.Wait(context.Background(), Ask{Agent: fmt.Sprint("held", i), Cost: Cost{Requests: 1}})
						if err == nil {
							granted <- g
						}
					}()
				}
				synctest.Wait()
				if len(granted) != 0 {
					t.Fatalf("%d granted before the first answer, want the first window's 4 only", len(granted))
				}
				time.Sleep(100 * time.Millisecond)
				first[0].Answer(time.Now(), obs(tc.used), true)
				synctest.Wait()
				if n := len(granted); n != tc.granted {
					t.Fatalf("the first answer (count %d, 3 in flight) released %d, want %d", tc.used, n, tc.granted)
				}
				// The second answer counts all four and a released one.
				first[1].Answer(time.Now(), obs(5), true)
				synctest.Wait()
				if n := len(granted) - tc.granted; n != tc.more {
					t.Fatalf("the second answer (count 5) released %d more, want %d", n, tc.more)
				}
				// What is out never exceeds the limit: 4 first and the released.
				if out := 4 + len(granted); out > limit {
					t.Errorf("%d sent in a window of %d", out, limit)
				}
				time.Sleep(time.Second) // the window ends; the rest go
				synctest.Wait()
				if n := len(granted); n != 4 {
					t.Errorf("%d of the 4 held granted after the window ended", n)
				}
			})
		})
	}
}
