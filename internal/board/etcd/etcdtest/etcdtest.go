// Package etcdtest starts a real etcd cluster for tests: etcdproc's cluster
// of N member processes on free loopback ports, with data under
// t.TempDir(), stopped in t.Cleanup (and killed by the kernel if the test
// process dies first), so nothing outlives the test. Raft timing is
// shortened (50 ms heartbeat, 500 ms election) so that failover and lease
// expiry (minimum TTL 1 s) are quick. Callers find the binary with
// envtest.Command(t, "etcd"), which fails the test under CI=true when etcd
// is missing and skips it otherwise. It is imported only from _test.go
// files.
package etcdtest

import (
	"testing"
	"time"

	"github.com/apiary-dev/apiary/internal/board/etcd/etcdproc"
)

// Cluster is a running etcd cluster.
type Cluster = etcdproc.Cluster

// Member is one etcd process.
type Member = etcdproc.Member

// Start launches an n-member cluster of the etcd server at bin and waits
// until every member reports healthy; the test fails if it does not.
func Start(t testing.TB, bin string, n int) *Cluster {
	t.Helper()
	c, err := etcdproc.Start(t.Context(), etcdproc.Options{
		Bin: bin, Members: n, Dir: t.TempDir(),
		Heartbeat: 50 * time.Millisecond, Election: 500 * time.Millisecond,
	})
	if err != nil {
		t.Fatalf("etcdtest: start %d-member cluster: %v", n, err)
	}
	t.Cleanup(func() { c.Stop() })
	return c
}
