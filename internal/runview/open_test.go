package runview

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOpenRefuses: a plots path that is no directory, a gateway URL that
// is not one and a DSN that does not parse are OptionErrors; a local board
// that does not exist is not created; nothing at all is ErrNothing.
func TestOpenRefuses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "state.db")
	for _, tt := range []struct {
		name   string
		o      OpenOptions
		want   string
		option bool
	}{
		{"plots not a directory", OpenOptions{Root: dir, Plots: []string{file}}, "--plots " + file + ": not a directory", true},
		{"not a gateway URL", OpenOptions{Root: dir, Gateway: "127.0.0.1:7420"}, "--gateway", true},
		{"bad DSN", OpenOptions{Board: "nonsense://x"}, "--board: ", true},
		{"no local board", OpenOptions{Board: "local:" + missing}, "no board at " + missing, false},
		{"nothing", OpenOptions{}, "nothing to show", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, closeSrc, err := Open(t.Context(), tt.o)
			closeSrc()
			var oe *OptionError
			if err == nil || !strings.Contains(err.Error(), tt.want) || errors.As(err, &oe) != tt.option {
				t.Errorf("err = %v, want %q (an OptionError: %v)", err, tt.want, tt.option)
			}
		})
	}
	if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a local board was created: %v", err)
	}
	if _, _, err := Open(t.Context(), OpenOptions{}); !errors.Is(err, ErrNothing) {
		t.Errorf("nothing: %v, want ErrNothing", err)
	}
}

// TestOpenRepo: a repository without a board or a ledger file still shows
// its runs; the ledger file is not created.
func TestOpenRepo(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	ledger := filepath.Join(root, ".apiary", "gateway.db")
	src, closeSrc, err := Open(t.Context(), OpenOptions{Root: root, LedgerPath: ledger})
	if err != nil {
		t.Fatal(err)
	}
	defer closeSrc()
	if src.Runs == nil || src.Board != nil || src.Gateway != nil {
		t.Errorf("sources %+v", src)
	}
	if _, err := os.Stat(ledger); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the ledger was created: %v", err)
	}
}
