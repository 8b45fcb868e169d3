package cli

import (
	"os"
	"testing"
)

func TestUserMessage(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ in, want string }{
		{"swarm: no such run on the board", "no such run on the board"},
		{"gateway: gateway: listen tcp 127.0.0.1:1: bind: permission denied", "listen tcp 127.0.0.1:1: bind: permission denied"},
		{"review failed: bad request: base \"main\": git: not found: revision \"main\"", "review failed: bad request: base \"main\": not found: revision \"main\""},
		{"ledger /x/state.db: stat /x/state.db: no such file or directory", "ledger /x/state.db: stat /x/state.db: no such file or directory"},
		{"plan.yaml:3: tasks[0].id: missing", "plan.yaml:3: tasks[0].id: missing"},
		{"the board: swarm", "the board: swarm"}, // a last link is text, not a prefix
		{"swarm", "swarm"},
		{"", ""},
	} {
		if got := userMessage(tt.in); got != tt.want {
			t.Errorf("userMessage(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestOurPackagesListed: every package directly under internal/ is one
// whose prefix userMessage drops.
func TestOurPackagesListed(t *testing.T) {
	t.Parallel()
	entries, err := os.ReadDir("..")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() && !ourPackages[e.Name()] {
			t.Errorf("package %s is not in ourPackages", e.Name())
		}
	}
	if len(entries) < 10 {
		t.Fatalf("only %d entries in internal/: run from internal/cli", len(entries))
	}
}
