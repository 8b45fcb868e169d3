package bench

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// zooTestSeeds are seeds whose upstreams have short windows, so the zoo
// runs in seconds in make test; make bench runs 50 and more.
func zooTestSeeds(n int) []uint64 {
	var seeds []uint64
	for s := uint64(1); len(seeds) < n; s++ {
		if m := NewZooModel(s); m.Period >= 2*time.Second && m.Period <= 3*time.Second {
			seeds = append(seeds, s)
		}
	}
	return seeds
}

// TestZoo runs mock agents through the gateway against a few randomised
// upstreams it was not told anything about: wherever the load fits the
// limit within the agents' timeout no agent dies and no pacing wait reaches
// the timeout, and the upstream's 429s are at most 2 % of the requests.
// (Wall time against the rate-limit bound is a performance target: `apiary
// bench gateway --zoo` measures it over 50 seeds and more.)
func TestZoo(t *testing.T) {
	t.Parallel()
	seeds := zooTestSeeds(6)
	if s := os.Getenv("APIARY_ZOO_SEEDS"); s != "" {
		seeds = nil
		for _, f := range strings.Split(s, ",") {
			n, err := strconv.ParseUint(f, 10, 64)
			if err != nil {
				t.Fatalf("APIARY_ZOO_SEEDS: %v", err)
			}
			seeds = append(seeds, n)
		}
	}
	res, err := RunZoo(t.Context(), ZooOptions{Seeds: seeds, Timeout: time.Minute, Parallel: 6, Progress: testWriter{t}})
	if err != nil {
		t.Fatal(err)
	}
	var ok, r429 int64
	for _, r := range res {
		ok += r.Requests
		r429 += r.Upstream.RateLimited
		if r.Model.Kind != "bucket" {
			// The per-window counts account for every admitted request, the
			// oracle's for every turn, and neither exceeds the limit.
			if sum, most := sumMax(r.Windows); sum != r.Upstream.Admitted || most > r.Model.Limit {
				t.Errorf("seed %d: windows %v: %d admitted (upstream says %d), limit %d", r.Model.Seed, r.Windows, sum, r.Upstream.Admitted, r.Model.Limit)
			}
			if sum, most := sumMax(r.BoundWindows); sum != max(r.Upstream.Admitted, int64(r.Agents*r.Turns)) || most > r.Model.Limit {
				t.Errorf("seed %d: the oracle's windows %v for %d agents × %d turns (%d admitted), limit %d", r.Model.Seed, r.BoundWindows, r.Agents, r.Turns, r.Upstream.Admitted, r.Model.Limit)
			}
		}
		if !r.Fits {
			continue
		}
		if r.Dead > 0 {
			t.Errorf("seed %d (%s): %d of %d agents died: %s", r.Model.Seed, r.Model, r.Dead, r.Agents, r.FirstError)
		}
		if r.MaxTurnS >= time.Minute.Seconds() {
			t.Errorf("seed %d: a turn took %.1fs", r.Model.Seed, r.MaxTurnS)
		}
	}
	if share := float64(r429) / float64(max(ok, 1)); share > 0.02 {
		t.Errorf("upstream 429s: %d for %d requests (%.1f%%)", r429, ok, 100*share)
	}
}

func sumMax(ns []int64) (sum, most int64) {
	for _, n := range ns {
		sum += n
		most = max(most, n)
	}
	return sum, most
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// A seed's first window is as long on every run: the upstream's windows are
// placed at the run's start by the seed's lead, whenever the run starts.
func TestZooLead(t *testing.T) {
	t.Parallel()
	for _, s := range []uint64{1, 2, 3, 12, 34} {
		m := NewZooModel(s)
		if m.Lead < 0 || m.Lead >= m.Period {
			t.Fatalf("seed %d: lead %v outside its period %v", s, m.Lead, m.Period)
		}
		for _, start := range []time.Time{time.Unix(1_800_000_000, 123_456_789), time.Unix(1_800_000_007, 999_000_000)} {
			u := newZooUpstream(m)
			u.anchor(start)
			if left := u.windowEnd(u.window(start)).Sub(start); left != m.Period-m.Lead {
				t.Errorf("seed %d started at %v: %v of the first window left, want %v (period %v, lead %v)",
					s, start, left, m.Period-m.Lead, m.Period, m.Lead)
			}
		}
	}
}
