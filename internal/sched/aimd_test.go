package sched

import (
	"testing"
	"testing/synctest"
	"time"
)

func TestSignalOf(t *testing.T) {
	t.Parallel()
	for status, want := range map[int]Signal{
		200: Success, 204: Success, 304: Success,
		400: Neutral, 401: Neutral, 404: Neutral, 413: Neutral,
		429: Neutral, 500: Congestion, 502: Congestion, 503: Congestion, 529: Congestion,
	} {
		if got := SignalOf(status); got != want {
			t.Errorf("SignalOf(%d) = %d, want %d", status, got, want)
		}
	}
}

func TestAIMDIncrease(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		cfg       AIMDConfig
		successes int
		want      int
	}{
		// One limit's worth per step: 4 to reach 5, 5 to reach 6, 6 to 7.
		{"per limit-worth", AIMDConfig{Initial: 4, Max: 100}, 4 + 5 + 6, 7},
		{"per limit-worth, one short", AIMDConfig{Initial: 4, Max: 100}, 4 + 5 + 5, 6},
		{"every N", AIMDConfig{Initial: 4, Max: 100, IncreaseEvery: 2}, 10, 9},
		{"ceiling", AIMDConfig{Initial: 4, Max: 5, IncreaseEvery: 1}, 10, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := NewAIMD(tc.cfg)
			var got int
			for range tc.successes {
				got = a.Record(t0, Success, 0)
			}
			if got != tc.want || a.Limit() != tc.want {
				t.Fatalf("limit %d after %d successes, want %d", got, tc.successes, tc.want)
			}
		})
	}
}

func TestAIMDDecrease(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		cfg  AIMDConfig
		sig  Signal
		ttfb time.Duration
		want int
	}{
		{"congestion multiplies", AIMDConfig{Initial: 10, Factor: 0.5}, Congestion, 0, 5},
		{"default factor 0.7", AIMDConfig{Initial: 10}, Congestion, 0, 7},
		{"at least one slot", AIMDConfig{Initial: 2, Factor: 0.9}, Congestion, 0, 1},
		{"floor", AIMDConfig{Initial: 3, Min: 2, Factor: 0.1}, Congestion, 0, 2},
		{"slow first byte is congestion", AIMDConfig{Initial: 10, Factor: 0.5, TargetTTFB: time.Second}, Success, 2 * time.Second, 5},
		{"fast first byte is success", AIMDConfig{Initial: 10, Factor: 0.5, TargetTTFB: time.Second, IncreaseEvery: 1}, Success, 500 * time.Millisecond, 11},
		{"neutral changes nothing", AIMDConfig{Initial: 10, IncreaseEvery: 1}, Neutral, 0, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := NewAIMD(tc.cfg)
			if got := a.Record(t0, tc.sig, tc.ttfb); got != tc.want {
				t.Fatalf("limit %d, want %d", got, tc.want)
			}
		})
	}
}

// TestAIMDCooldown: a burst of failures (the requests that were in flight
// when congestion began) cuts the limit once; after the cooldown the next
// failure cuts it again.
func TestAIMDCooldown(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		g := NewGate(GateConfig{Limit: 1})
		a := NewAIMD(AIMDConfig{Initial: 32, Max: 64, Factor: 0.5, Cooldown: 5 * time.Second, Target: g})
		if g.Limit() != 32 {
			t.Fatalf("gate limit %d, want the initial 32", g.Limit())
		}
		for range 20 {
			a.Record(time.Now(), Congestion, 0)
			time.Sleep(100 * time.Millisecond)
		}
		if got := a.Limit(); got != 16 {
			t.Fatalf("after a 2 s burst: limit %d, want one cut to 16", got)
		}
		time.Sleep(3 * time.Second) // 5 s after the first cut
		a.Record(time.Now(), Congestion, 0)
		if got := a.Limit(); got != 8 || g.Limit() != 8 {
			t.Fatalf("after the cooldown: limit %d (gate %d), want 8", got, g.Limit())
		}
		// Successes after a cut start counting afresh.
		for range 7 {
			a.Record(time.Now(), Success, 0)
		}
		if got := a.Record(time.Now(), Success, 0); got != 9 || g.Limit() != 9 {
			t.Fatalf("after 8 successes: limit %d (gate %d), want 9", got, g.Limit())
		}
	})
}

// A refusal for capacity is a measurement: the limit drops below what was
// in flight at once, however recent the last cut, never below Min; growing
// past it again waits for Cooldown.
func TestAIMDRefused(t *testing.T) {
	t.Parallel()
	g := NewGate(GateConfig{Limit: 16})
	a := NewAIMD(AIMDConfig{Initial: 16, Min: 1, Max: 16, IncreaseEvery: 1, Cooldown: 2 * time.Second, Target: g})
	t0 := time.Unix(1000, 0)
	a.Record(t0, Congestion, 0) // a cut just now: the cooldown does not hold back a refusal
	if got := a.Refused(t0, 3); got != 2 || g.Limit() != 2 {
		t.Fatalf("refused at 3 in flight: limit %d (gate %d), want 2", got, g.Limit())
	}
	if got := a.Refused(t0, 9); got != 2 {
		t.Errorf("a refusal at more in flight raised the limit to %d", got)
	}
	for i := range 5 {
		if got := a.Record(t0.Add(time.Duration(i)*100*time.Millisecond), Success, 0); got != 2 {
			t.Fatalf("grew past the refused level to %d within the cooldown", got)
		}
	}
	if got := a.Record(t0.Add(2*time.Second), Success, 0); got != 3 {
		t.Errorf("after the cooldown: limit %d, want 3", got)
	}
	if got := a.Record(t0.Add(2*time.Second), Success, 0); got != 4 {
		t.Errorf("past the refused level: limit %d, want 4", got)
	}
	if got := a.Refused(t0.Add(5*time.Second), 1); got != 1 {
		t.Errorf("refused alone, long after: limit %d, want Min", got)
	}
}
