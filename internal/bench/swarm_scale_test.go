package bench_test

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apiary-dev/apiary/internal/bench"
	"github.com/apiary-dev/apiary/internal/board/connect"
	"github.com/apiary-dev/apiary/internal/board/etcd/etcdtest"
	"github.com/apiary-dev/apiary/internal/envtest"
)

// maxWritesPerTask is the claim path's budget of board writes per task:
// the claim (on the host's lease), the outcome with the claim's end, and
// one to spare for the claim request. Heartbeats are the hosts' session
// keep-alives, one per host, however many claims it holds.
const maxWritesPerTask = 3

// meteredClients is a SwarmRunConfig.Open that keeps every client it opens,
// in order: the benchmark's monitor first, then one per host (then the
// central scheduler's).
type meteredClients struct {
	t       *testing.T
	dsn     string
	mu      sync.Mutex
	clients []bench.SwarmClient
}

func (m *meteredClients) open(ctx context.Context) (bench.SwarmClient, error) {
	st, meter, err := connect.OpenMetered(ctx, m.dsn, connect.Options{})
	if err != nil {
		return bench.SwarmClient{}, err
	}
	m.t.Cleanup(func() { st.Close() })
	c := bench.SwarmClient{Store: st, Counts: meter.Counts}
	m.mu.Lock()
	m.clients = append(m.clients, c)
	m.mu.Unlock()
	return c, nil
}

// etcdBoard starts a real etcd (one member: the tests count requests,
// not fsyncs) and returns its DSN.
func etcdBoard(t *testing.T) string {
	c := etcdtest.Start(t, envtest.Command(t, "etcd"), 1)
	return "etcd://" + strings.Join(c.Endpoints(), ",") + "/scale"
}

// The scale tests are not parallel, so they run alone, before the
// package's parallel tests: on a loaded machine a host whose keep-alive does not get through
// loses its claims, and the re-run it causes is counted against
// exactly-once.

// TestSwarmWritesPerTask drains simulated tasks both ways, on etcd and
// (but under the race detector, where SQLite's several clients take
// minutes) the local board, with two hosts on clients of their own as two
// processes would be, and counts every request that may write the board — transactions,
// lease grants, keep-alives, revocations — from every client but the
// benchmark's own: at most three per task, and every task worked once.
func TestSwarmWritesPerTask(t *testing.T) {
	boards := map[string]string{"etcd": etcdBoard(t)}
	if !raceEnabled {
		boards["local"] = "local:" + filepath.Join(t.TempDir(), "state.db")
	}
	for name, dsn := range boards {
		t.Run(name, func(t *testing.T) {
			// One mode after the other: each run compacts the board's
			// history when it ends, which would cut the other's watches.
			for _, mode := range []string{bench.SwarmSelf, bench.SwarmCentral} {
				m := &meteredClients{t: t, dsn: dsn}
				res, err := bench.RunSwarm(t.Context(), bench.SwarmRunConfig{Mode: mode, Workers: 8, HostSize: 4, Tasks: 200,
					Work: 2 * time.Millisecond, Shards: 4, Open: m.open, Timeout: 4 * time.Minute})
				if err != nil {
					t.Fatal(err)
				}
				if !res.ExactlyOnce || res.Hosts != 2 || res.Counts.Txn == 0 {
					t.Fatalf("%s: %+v", mode, res)
				}
				if res.WritesPerTask > maxWritesPerTask {
					t.Errorf("%s: %.2f board writes per task (%+v); want at most %d", mode, res.WritesPerTask, res.Counts, maxWritesPerTask)
				}
				t.Logf("%s: %.2f writes/task, %.2f messages/task, drain %.2fs", mode, res.WritesPerTask, res.MessagesPerTask, res.DrainS)
			}
		})
	}
}

// TestSwarmFeedPerHost drains the same simulated tasks in self-organizing
// mode on etcd — the board for many machines — with one host of eight
// workers and with eight hosts of one: with the shards divided among the
// hosts, what each host receives shrinks as hosts are added — each of
// eight receives at most a quarter of what the one host does per task,
// where a host that followed the whole feed would receive about half. (The
// run's messages per task at 1 and 16 hosts are the benchmark's to
// measure: on a loaded machine they swing with re-sent requests.)
func TestSwarmFeedPerHost(t *testing.T) {
	for name, dsn := range map[string]string{"etcd": etcdBoard(t)} {
		t.Run(name, func(t *testing.T) {
			type result struct {
				total   float64 // messages per task, every client
				maxHost float64 // events received per task, the busiest host
			}
			measure := func(hostSize int) result {
				m := &meteredClients{t: t, dsn: dsn}
				const tasks = 240
				res, err := bench.RunSwarm(t.Context(), bench.SwarmRunConfig{Mode: bench.SwarmSelf, Workers: 8, HostSize: hostSize, Tasks: tasks,
					Work: 2 * time.Millisecond, Shards: 8, Open: m.open, Timeout: 4 * time.Minute})
				if err != nil {
					t.Fatal(err)
				}
				if !res.ExactlyOnce {
					t.Fatalf("not exactly once: %+v", res)
				}
				r := result{total: res.MessagesPerTask}
				for _, c := range m.clients[1:] { // the monitor's is not a host's
					r.maxHost = max(r.maxHost, float64(c.Counts().Events)/tasks)
				}
				return r
			}
			one, eight := measure(8), measure(1)
			t.Logf("1 host: %.2f messages/task, %.2f events/task received by the host; 8 hosts: %.2f messages/task, %.2f events/task by the busiest",
				one.total, one.maxHost, eight.total, eight.maxHost)
			// Eight hosts on eight shards follow one each: an eighth of the
			// one host's feed, give or take the host entries. A host that
			// followed every shard would receive every announcement — about
			// half of what the one host, also every shard's gatekeeper,
			// receives.
			if eight.maxHost > one.maxHost/4 {
				t.Errorf("a host of eight received %.2f events per task, the only host %.2f: the feed does not shrink with hosts", eight.maxHost, one.maxHost)
			}
		})
	}
}
