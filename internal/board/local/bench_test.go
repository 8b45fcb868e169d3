package local

import (
	"path/filepath"
	"testing"

	"github.com/apiary-dev/apiary/internal/board"
	"github.com/apiary-dev/apiary/internal/board/boardtest"
)

// BenchmarkLocal: go test -run '^$' -bench . ./internal/board/local/
func BenchmarkLocal(b *testing.B) {
	path := filepath.Join(b.TempDir(), "state.db")
	boardtest.Bench(b, func() *board.Store {
		s, err := Open(b.Context(), path, Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		return s
	})
}
