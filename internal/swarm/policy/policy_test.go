package policy

import (
	"slices"
	"testing"
	"time"
)

// fakeNow is a settable clock for policy tests.
type fakeNow struct{ t time.Time }

func (f *fakeNow) now() time.Time { return f.t }

// TestPolicyGuards: fresh snapshots with work waiting bid; a snapshot older
// than 200 ms scores 0 and never acts; three sharply alternating scores put
// the worker in observation mode (reads only) until ObserveFor passes;
// sustained CPU above 85% sets Yield to 1; a cool-down yields.
func TestPolicyGuards(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	busy := Snapshot{Ready: 8, Idle: 1, Workers: 2}
	idle := Snapshot{Ready: 0, Idle: 1, Workers: 2}
	at := func(s Snapshot, ts time.Time) Snapshot { s.At = ts; return s }
	tests := []struct {
		name string
		run  func(t *testing.T, p *Worker, clk *fakeNow)
	}{
		{"fresh bids", func(t *testing.T, p *Worker, clk *fakeNow) {
			sc := p.Score("bid", at(busy, clk.t))
			if !p.Act(sc) || sc.Action < 0.5 || sc.Yield != 0 {
				t.Fatalf("fresh busy snapshot: %+v, act %v", sc, p.Act(sc))
			}
		}},
		{"stale counts as zero", func(t *testing.T, p *Worker, clk *fakeNow) {
			sc := p.Score("bid", at(busy, clk.t.Add(-201*time.Millisecond)))
			if !sc.Stale || sc.Action != 0 || sc.Collab != 0 || p.Act(sc) {
				t.Fatalf("stale snapshot: %+v", sc)
			}
			if sc := p.Score("bid", at(busy, clk.t.Add(-200*time.Millisecond))); sc.Stale || !p.Act(sc) {
				t.Fatalf("a 200 ms old snapshot is still fresh: %+v", sc)
			}
		}},
		{"oscillation observes", func(t *testing.T, p *Worker, clk *fakeNow) {
			p.Score("bid", at(busy, clk.t))
			p.Score("bid", at(idle, clk.t))
			sc := p.Score("bid", at(busy, clk.t))
			if !sc.Observing || p.Act(sc) || !p.Observing() {
				t.Fatalf("after high, low, high: %+v observing=%v", sc, p.Observing())
			}
			clk.t = clk.t.Add(5*time.Second + time.Millisecond)
			if sc := p.Score("bid", at(busy, clk.t)); p.Observing() || !p.Act(sc) {
				t.Fatalf("observation mode did not end: %+v", sc)
			}
		}},
		{"steady does not observe", func(t *testing.T, p *Worker, clk *fakeNow) {
			for range 5 {
				p.Score("bid", at(busy, clk.t))
			}
			p.Score("bid", at(idle, clk.t))
			if p.Observing() {
				t.Fatal("one drop is not an oscillation")
			}
		}},
		{"sustained cpu yields", func(t *testing.T, p *Worker, clk *fakeNow) {
			p.ObserveCPU(0.9)
			p.ObserveCPU(0.95)
			if over, _ := p.Overloaded(); over {
				t.Fatal("two samples are not sustained")
			}
			p.ObserveCPU(0.9)
			sc := p.Score("bid", at(busy, clk.t))
			if over, load := p.Overloaded(); !over || load != 0.9 || sc.Yield != 1 || p.Act(sc) {
				t.Fatalf("sustained load: over=%v load=%v scores %+v", over, load, sc)
			}
			p.ObserveCPU(0.5)
			if sc := p.Score("bid", at(busy, clk.t)); sc.Yield != 0 || !p.Act(sc) {
				t.Fatalf("load dropped, still yielding: %+v", sc)
			}
		}},
		{"cooldown yields", func(t *testing.T, p *Worker, clk *fakeNow) {
			s := at(busy, clk.t)
			s.Cooldown = true
			if sc := p.Score("bid", s); p.Act(sc) || sc.Yield < 0.5 {
				t.Fatalf("cool-down: %+v", sc)
			}
		}},
		{"overlap choices", func(t *testing.T, p *Worker, clk *fakeNow) {
			s := at(busy, clk.t)
			s.Overlaps, s.Risk = 2, 0.5
			sc := p.Score("intent", s)
			got := []OverlapChoice{p.Overlap(sc, 0, time.Second, true), p.Overlap(sc, time.Second, time.Second, true),
				p.Overlap(sc, time.Second, time.Second, false)}
			if want := []OverlapChoice{OverlapWait, OverlapNarrow, OverlapProceed}; !slices.Equal(got, want) {
				t.Fatalf("overlap choices %v, want %v (scores %+v)", got, want, sc)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clk := &fakeNow{t: t0}
			tt.run(t, New(Config{}, clk.now), clk)
		})
	}
}

// TestWatchdog: a ready task is offered after 5 s, opened 2 s after the
// offer, and a claim stops the clock.
func TestWatchdog(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	w := NewWatchdog(5*time.Second, 2*time.Second)
	w.Ready("a", t0)
	w.Ready("b", t0.Add(time.Second))
	w.Ready("a", t0.Add(3*time.Second)) // already watched: keeps its clock
	if off, open := w.Due(t0.Add(4999 * time.Millisecond)); len(off)+len(open) != 0 {
		t.Fatalf("due before 5 s: %v %v", off, open)
	}
	if off, _ := w.Due(t0.Add(5 * time.Second)); !slices.Equal(off, []string{"a"}) {
		t.Fatalf("offer at 5 s = %v", off)
	}
	w.Offered("a", t0.Add(5*time.Second))
	if n := w.Next(); !n.Equal(t0.Add(6 * time.Second)) {
		t.Fatalf("next deadline %v; want b's offer at 6 s", n)
	}
	w.Claimed("b")
	if _, open := w.Due(t0.Add(6999 * time.Millisecond)); len(open) != 0 {
		t.Fatalf("opened before 2 s after the offer: %v", open)
	}
	if off, open := w.Due(t0.Add(7 * time.Second)); len(off) != 0 || !slices.Equal(open, []string{"a"}) {
		t.Fatalf("at 7 s: offer %v open %v; want a opened, b (claimed) gone", off, open)
	}
	w.Opened("a", t0.Add(7*time.Second))
	if off, open := w.Due(t0.Add(time.Hour)); len(off)+len(open) != 0 || !w.Next().IsZero() {
		t.Fatalf("an open task needs nothing more: %v %v", off, open)
	}
}
