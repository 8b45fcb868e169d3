package sched

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// FuzzPacerHeaders feeds the pacer random header sequences, in random
// order with random timing, and checks that it never grants a request
// (other than a probe, one a window at most) while the latest figures say
// the window is full, before the earliest time that window can end: the
// written reset less its precision (and, for a delay, less the round trip)
// — or, once the pacer has found the server to be a continuous bucket,
// before those figures' own refill bound has made room for one request.
// It also checks that the pacer is live: once an answer shows a fresh
// window, a waiting request is granted. Requests come from three agents,
// so that holding an agent at its share of a full window (share.go) is
// exercised too: it may delay a request, never place one earlier.
func FuzzPacerHeaders(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1, 3, 0, 5, 0, 2, 0, 2, 1, 1, 9, 2, 200, 0, 0})
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 0, 30, 1, 1, 2, 0, 0, 2, 250, 0, 1, 4, 4, 8, 0})
	f.Add([]byte{0, 1, 1, 1, 0, 0, 1, 7, 3, 2, 80, 0, 1, 255, 255, 255, 2, 9, 9})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 300 {
			ops = ops[:300]
		}
		synctest.Test(t, func(t *testing.T) {
			p := NewPacer(PacerConfig{})
			defer p.Close()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var (
				mu       sync.Mutex
				inflight []*Grant
				sentAt   = map[*Grant]time.Time{}
				// From the headers alone: the earliest time the window the
				// latest figures call full can end, and its written reset.
				block     time.Time
				blockRef  time.Time
				blockUsed int64
				blockRecv time.Time
				blockRate float64 // the full figures' own refill bound, per ns
				probes    = map[time.Time]int{}
				bad       string
			)
			ask := func(agent string) {
				go func() {
					g, err := p.Wait(ctx, Ask{Agent: agent, Cost: Cost{Requests: 1}})
					if err != nil {
						return
					}
					now := time.Now()
					mu.Lock()
					defer mu.Unlock()
					refilled := false
					if st := p.Stats(); len(st) > 0 && st[0].Continuous && blockRate > 0 {
						refilled = float64(now.Sub(blockRecv))*blockRate >= 1
					}
					if now.Before(block) && !refilled {
						if !g.Probe {
							bad = "granted at " + now.String() + " before the full window can end at " + block.String()
						}
						probes[blockRef]++
						if probes[blockRef] > 1 {
							bad = "two probes in one window"
						}
					}
					g.Sent(now)
					inflight = append(inflight, g)
					sentAt[g] = now
				}()
			}
			for i := 0; i+2 < len(ops); i += 3 {
				op, a, b := ops[i]%3, ops[i+1], ops[i+2]
				switch op {
				case 0:
					ask(string(rune('a' + a%3)))
				case 1:
					mu.Lock()
					if len(inflight) == 0 {
						mu.Unlock()
						break
					}
					g := inflight[int(a)%len(inflight)]
					inflight = removeGrant(inflight, g)
					now := time.Now()
					limit := int64(b%8) + 1
					o := Observation{Limit: limit, Remaining: int64(a) % (limit + 1),
						Reset: now.Add(time.Duration(int(b)*97-2000) * time.Millisecond), Precision: []time.Duration{time.Second, time.Millisecond, 100 * time.Millisecond}[a%3]}
					early := o.Precision
					if a&8 != 0 {
						o.Relative = true
						early += now.Sub(sentAt[g])
					} else {
						o.Reset = o.Reset.Truncate(o.Precision)
					}
					// A later window, or figures of one not over, as leniently
					// as the figures allow.
					newer := blockRef.IsZero() || o.Reset.After(blockRef) || o.Relative && o.Reset.After(blockRef.Add(-early)) ||
						o.Reset.Add(o.Precision).After(now)
					switch {
					case o.Remaining == 0 && newer:
						block, blockRef, blockUsed = o.Reset.Add(-early), o.Reset, o.Limit
						blockRecv, blockRate = now, 0
						if d := o.Reset.Add(o.Precision).Sub(sentAt[g]); d > 0 && o.Limit > 1 {
							blockRate = float64(o.Limit-1) / float64(d)
						}
					case o.Remaining > 0 && newer, o.Limit > blockUsed:
						// A limit is the key's, not a window's: a higher one
						// makes room in the window that was full.
						block, blockRef, blockUsed = time.Time{}, time.Time{}, 0
					}
					mu.Unlock()
					unknown := Observation{Limit: -1, Remaining: -1}
					g.Answer(now, [4]Observation{o, unknown, unknown, unknown}, true)
				case 2:
					time.Sleep(time.Duration(a)*time.Duration(b)*time.Millisecond + time.Millisecond)
				}
				synctest.Wait()
				mu.Lock()
				if bad != "" {
					mu.Unlock()
					t.Fatal(bad)
				}
				mu.Unlock()
			}
			for _, s := range p.Stats() {
				if s.Used < 0 || s.InFlight < 0 || s.ResetUncertainty < 0 || s.Limit <= 0 {
					t.Fatalf("stats %+v", s)
				}
			}
			// Liveness: an answer from a fresh, empty window lets a waiter go.
			mu.Lock()
			all := inflight
			inflight = nil
			mu.Unlock()
			fresh := Observation{Limit: 100, Remaining: 100, Reset: time.Now().Add(time.Hour), Precision: time.Millisecond}
			unknown := Observation{Limit: -1, Remaining: -1}
			for _, g := range all {
				g.Answer(time.Now(), [4]Observation{fresh, unknown, unknown, unknown}, true)
			}
			if len(all) == 0 {
				return
			}
			for p.Waiting() > 0 {
				time.Sleep(time.Second)
				synctest.Wait()
				if time.Since(fresh.Reset) > 0 {
					t.Fatalf("%d requests still waiting after a fresh window", p.Waiting())
				}
			}
		})
	})
}

func removeGrant(gs []*Grant, g *Grant) []*Grant {
	for i, x := range gs {
		if x == g {
			return append(gs[:i], gs[i+1:]...)
		}
	}
	return gs
}
