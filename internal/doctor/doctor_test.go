package doctor

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apiary-dev/apiary/internal/access"
	"github.com/apiary-dev/apiary/internal/agent"
)

// TestSmokeFails: a Claude Code that exits 1 fails its smoke test, with
// its exit status and the tail of its log as the reason, and the table
// shows it.
func TestSmokeFails(t *testing.T) {
	t.Parallel()
	broken := filepath.Join(t.TempDir(), "claude")
	if err := os.WriteFile(broken, []byte("#!/bin/sh\necho broken >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	gw, stop, err := access.StartGateway(t.Context(), filepath.Join(t.TempDir(), "gw.db"), "http://127.0.0.1:1", "k", &log)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	r := Result{Kind: agent.KindClaude, CLI: "Claude Code", Path: broken}
	Smoke(t.Context(), gw, t.TempDir(), 0, &r)
	if r.Smoke != "failed" || !strings.Contains(r.Reason, "exit 1") || !strings.Contains(r.Reason, "broken") {
		t.Errorf("a failing CLI: %+v", r)
	}
	rs := []Result{r, {Kind: agent.KindAider, CLI: "aider", Smoke: "not installed"}}
	if !Failed(rs) || Failed(rs[1:]) {
		t.Errorf("Failed(%+v) = %v, Failed of a CLI not installed = %v", rs, Failed(rs), Failed(rs[1:]))
	}
	var table bytes.Buffer
	if err := WriteTable(&table, rs); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(table.String()), "\n")
	if len(lines) != 3 || !strings.Contains(lines[1], "failed: exit 1") || !strings.Contains(lines[2], "not installed") {
		t.Errorf("table:\n%s", table.String())
	}
}

// TestSmokeNoProfile: a kind without a built-in profile is not run.
func TestSmokeNoProfile(t *testing.T) {
	t.Parallel()
	r := Result{Kind: "nonesuch"}
	Smoke(t.Context(), nil, t.TempDir(), 0, &r)
	if r.Smoke != "not run" || r.Reason != "no built-in profile" {
		t.Errorf("%+v", r)
	}
}
