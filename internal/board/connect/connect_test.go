package connect

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/apiary-dev/apiary/internal/board"
	"github.com/apiary-dev/apiary/internal/board/etcd/etcdtest"
	"github.com/apiary-dev/apiary/internal/envtest"
)

func TestOpen(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cluster := etcdtest.Start(t, envtest.Command(t, "etcd"), 1)
	for _, tc := range []struct {
		name, dsn string
		check     func(t *testing.T)
	}{
		{"local creates its directory", "local:" + filepath.Join(dir, "sub", "state.db"), func(t *testing.T) {
			if _, err := os.Stat(filepath.Join(dir, "sub", "state.db")); err != nil {
				t.Fatalf("database not created: %v", err)
			}
		}},
		{"etcd with a prefix", "etcd://" + strings.Join(cluster.Endpoints(), ",") + "/connect-test", func(t *testing.T) {
			// The prefix is a namespace: the key is under it, invisible to others.
			whole, err := Open(t.Context(), "etcd://"+cluster.Endpoints()[0], Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer whole.Close()
			if _, err := whole.Get(t.Context(), "connect-test/k"); err != nil {
				t.Fatalf("key not stored under the prefix: %v", err)
			}
			if _, err := whole.Get(t.Context(), "k"); !errors.Is(err, board.ErrNotFound) {
				t.Fatalf("key stored outside the prefix: %v", err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Open(t.Context(), tc.dsn, Options{})
			if err != nil {
				t.Fatalf("Open(%q): %v", tc.dsn, err)
			}
			defer s.Close()
			rev, err := s.Put(t.Context(), "k", []byte("v"), board.NoLease)
			if err != nil || rev <= 0 {
				t.Fatalf("Put: %d, %v", rev, err)
			}
			if kv, err := s.Get(t.Context(), "k"); err != nil || string(kv.Value) != "v" {
				t.Fatalf("Get: %+v, %v", kv, err)
			}
			if tc.check != nil {
				tc.check(t)
			}
		})
	}
	if _, err := Open(t.Context(), "redis://x:1", Options{}); !errors.Is(err, board.ErrInvalid) {
		t.Fatalf("Open of an unknown scheme: %v, want ErrInvalid", err)
	}
}

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
