package gateway

import (
	"testing"
	"time"

	"github.com/apiary-dev/apiary/internal/sched"
)

// TestKeepPlace: an uncharged attempt's reservation is kept for the retry
// against fixed windows, and returned to a continuous bucket.
func TestKeepPlace(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name       string
		refill     sched.Refill
		continuous bool
		kept       bool
	}{
		{"fixed windows keep the place", sched.Step, false, true},
		{"a continuous bucket gets it back", sched.Continuous, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			lim := sched.NewLimiter(sched.LimiterConfig{Requests: sched.Rate{Limit: 10, Per: time.Minute}, Refill: tc.refill})
			up := &upstream{}
			up.continuous.Store(tc.continuous)
			res := lim.Reserve(now, sched.Cost{Requests: 1})
			res.Sent()
			got := keepPlace(up, &res, now)
			if (got != nil) != tc.kept {
				t.Fatalf("kept = %v, want %v", got != nil, tc.kept)
			}
			avail := lim.Stats(sched.Requests, now).Available
			want := 9.0
			if !tc.kept {
				want = 10
			}
			if avail != want {
				t.Errorf("available after keepPlace = %v, want %v", avail, want)
			}
		})
	}
	if keepPlace(&upstream{}, nil, now) != nil {
		t.Error("a nil reservation came back non-nil")
	}
}
