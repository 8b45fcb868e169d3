package supervise

import (
	"errors"
	"slices"
	"testing"
	"time"
)

// TestQuorum: N attempts, continue after K pass, lose as soon as K cannot
// pass; outcomes after the verdict change nothing.
func TestQuorum(t *testing.T) {
	t.Parallel()
	type step struct {
		pass bool
		i    int
		want Verdict
	}
	tests := []struct {
		name   string
		n, k   int
		steps  []step
		passed []int
	}{
		{"first of one", 1, 1, []step{{true, 0, Reached}}, []int{0}},
		{"two of three", 3, 2, []step{{true, 2, Pending}, {false, 0, Pending}, {true, 1, Reached}, {true, 0, Reached}}, []int{2, 1}},
		{"lost early", 3, 2, []step{{false, 0, Pending}, {false, 1, Lost}}, nil},
		{"hedge: second wins", 2, 1, []step{{true, 1, Reached}, {false, 0, Reached}}, []int{1}},
		{"duplicate outcome ignored", 2, 2, []step{{true, 0, Pending}, {true, 0, Pending}, {true, 1, Reached}}, []int{0, 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			q, err := NewQuorum(tc.n, tc.k)
			if err != nil {
				t.Fatal(err)
			}
			for range tc.n {
				if _, ok := q.Start(); !ok {
					t.Fatal("could not start n attempts")
				}
			}
			if _, ok := q.Start(); ok {
				t.Error("started more than n")
			}
			for j, s := range tc.steps {
				var got Verdict
				if s.pass {
					got = q.Pass(s.i)
				} else {
					got = q.Fail(s.i)
				}
				if got != s.want {
					t.Errorf("step %d: %s, want %s", j, got, s.want)
				}
			}
			if !slices.Equal(q.Passed(), tc.passed) {
				t.Errorf("passed %v, want %v", q.Passed(), tc.passed)
			}
		})
	}
	for _, nk := range [][2]int{{1, 0}, {1, 2}} {
		if _, err := NewQuorum(nk[0], nk[1]); !errors.Is(err, ErrInvalid) {
			t.Errorf("NewQuorum(%d, %d): %v", nk[0], nk[1], err)
		}
	}
	q, _ := NewQuorum(1, 1)
	q.Start()
	q.Grow()
	if i, ok := q.Start(); !ok || i != 1 {
		t.Errorf("Grow: start %d %v", i, ok)
	}
}

func TestHedgeDelay(t *testing.T) {
	t.Parallel()
	var obs Durations
	h := Hedge{Fallback: 90 * time.Second}
	if d, ok := h.Delay(&obs); !ok || d != 90*time.Second {
		t.Errorf("no samples: %s %v", d, ok)
	}
	for i := 1; i <= 10; i++ {
		obs.Observe(time.Duration(i) * time.Second)
	}
	if d, ok := h.Delay(&obs); !ok || d != 9*time.Second {
		t.Errorf("p90 of 1..10 s: %s %v", d, ok)
	}
	if d, ok := (Hedge{After: 3 * time.Second}).Delay(&obs); !ok || d != 3*time.Second {
		t.Errorf("fixed: %s %v", d, ok)
	}
	if _, ok := (Hedge{}).Delay(nil); ok {
		t.Error("hedged with no rule")
	}
	small := Durations{keep: 4}
	for i := 1; i <= 6; i++ {
		small.Observe(time.Duration(i) * time.Second)
	}
	if d, n, ok := small.Quantile(1); !ok || n != 4 || d != 6*time.Second {
		t.Errorf("ring keeps the last 4: max %s of %d", d, n)
	}
	if d, _, _ := small.Quantile(0.25); d != 3*time.Second {
		t.Errorf("ring min %s, want 3s (1 s and 2 s were overwritten)", d)
	}
}
