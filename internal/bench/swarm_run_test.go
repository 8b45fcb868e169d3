//go:build unix

package bench_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/apiary-dev/apiary/internal/bench"
	"github.com/apiary-dev/apiary/internal/board/connect"
)

// localBenchAt returns a SwarmRunConfig.Open on the local board at dsn.
func localBenchAt(t *testing.T, dsn string) func(ctx context.Context) (bench.SwarmClient, error) {
	return func(ctx context.Context) (bench.SwarmClient, error) {
		st, m, err := connect.OpenMetered(ctx, dsn, connect.Options{})
		if err != nil {
			return bench.SwarmClient{}, err
		}
		t.Cleanup(func() { st.Close() })
		return bench.SwarmClient{Store: st, Counts: m.Counts}, nil
	}
}

// TestBenchSwarmSmall drains a small simulated run both ways on the local
// board with two board clients (hosts): every task is worked exactly once,
// and the traffic is counted. It is kept tiny — SQLite under the race
// detector is slow; `apiary bench swarm` measures the real sizes.
func TestBenchSwarmSmall(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{bench.SwarmSelf, bench.SwarmCentral} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			dsn := "local:" + filepath.Join(t.TempDir(), "state.db")
			res, err := bench.RunSwarm(t.Context(), bench.SwarmRunConfig{Mode: mode, Workers: 4, HostSize: 2, Tasks: 12,
				Work: 5 * time.Millisecond, Shards: 2, Open: localBenchAt(t, dsn), Timeout: 2 * time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			if !res.ExactlyOnce || res.Missing != 0 || res.Duplicated != 0 {
				t.Fatalf("not exactly once: %+v", res)
			}
			if res.MessagesPerTask <= 0 || res.Counts.Txn == 0 || res.Hosts != 2 {
				t.Fatalf("traffic not counted: %+v", res)
			}
			// The run's keys are gone, so the next run starts on an empty board.
			st, err := connect.Open(t.Context(), dsn, connect.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			if kvs, _, err := st.List(t.Context(), ""); err != nil || len(kvs) != 0 {
				var keys []string
				for _, kv := range kvs {
					keys = append(keys, kv.Key)
				}
				t.Fatalf("left on the board after the run: %v (%v)", keys, err)
			}
			t.Logf("%s: drain %.2fs, %.1f claims/s, %.1f messages/task", mode, res.DrainS, res.ClaimsPerS, res.MessagesPerTask)
		})
	}
}
