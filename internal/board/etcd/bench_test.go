package etcd

import (
	"testing"

	"github.com/apiary-dev/apiary/internal/board"
	"github.com/apiary-dev/apiary/internal/board/boardtest"
	"github.com/apiary-dev/apiary/internal/board/etcd/etcdtest"
	"github.com/apiary-dev/apiary/internal/envtest"
)

// BenchmarkEtcd runs the board benchmarks on a 3-member cluster:
// go test -run '^$' -bench . ./internal/board/etcd/
func BenchmarkEtcd(b *testing.B) {
	c := etcdtest.Start(b, envtest.Command(b, "etcd"), 3)
	boardtest.Bench(b, func() *board.Store {
		s, err := Open(b.Context(), c.Endpoints(), Options{Prefix: "bench/"})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		return s
	})
}
