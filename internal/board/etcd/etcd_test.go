package etcd

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/apiary-dev/apiary/internal/board"
	"github.com/apiary-dev/apiary/internal/board/boardtest"
	"github.com/apiary-dev/apiary/internal/board/etcd/etcdtest"
	"github.com/apiary-dev/apiary/internal/envtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// connector returns a boardtest NewBoard on cluster c: each case gets its own
// key namespace (its test name), so the cases share the cluster but not keys.
func connector(c *etcdtest.Cluster) func(t *testing.T) func() *board.Store {
	return func(t *testing.T) func() *board.Store {
		prefix := "conformance/" + t.Name() + "/"
		return func() *board.Store {
			s, err := Open(t.Context(), c.Endpoints(), Options{Prefix: prefix})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}
	}
}

// TestConformance runs the board conformance suite against a real 3-member
// etcd cluster.
func TestConformance(t *testing.T) {
	t.Parallel()
	c := etcdtest.Start(t, envtest.Command(t, "etcd"), 3)
	boardtest.Run(t, boardtest.Harness{NewBoard: connector(c)})
}
