package runview

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apiary-dev/apiary/internal/dashboard"
	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/rundir"
)

// TestFailureOf: a failed check's reason is its log's lines around the
// line the gate pointed at, without the log's echo of the command; a
// gate's is its file and line; logs outside .apiary are never read.
func TestFailureOf(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	cmd := `go test ./...`
	log := rundir.State(root, "runs", "r", "tasks", "t", "checks", "1.log")
	var b strings.Builder
	b.WriteString("$ " + cmd + "\n")
	for i := range 20 {
		b.WriteString("ok  \tpkg" + strconv.Itoa(i) + "\n")
	}
	b.WriteString("--- FAIL: TestPow (0.00s)\n    calc_test.go:9: Pow(2, 10) = 20, want 1024\nFAIL\nFAIL\tcalc\t0.01s\n\n")
	if err := os.MkdirAll(filepath.Dir(log), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(log, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	g := &envelope.GateReason{Gate: "check", File: log, Line: 22, Detail: "check " + strconv.Quote(cmd) + " exited 1 after 0.4s"}
	f := failureOf(root, dashboard.StatusFailed, g, "rejected", "")
	if f == nil || f.Kind != dashboard.FailCheck || f.Command != cmd || f.Summary != "the check exited 1 after 0.4s" {
		t.Fatalf("failure %+v", f)
	}
	if !slices.Contains(f.Lines, "    calc_test.go:9: Pow(2, 10) = 20, want 1024") || len(f.Lines) > failureLines || slices.Contains(f.Lines, "$ "+cmd) {
		t.Errorf("lines %q", f.Lines)
	}
	gate := failureOf(root, dashboard.StatusFailed, &envelope.GateReason{Gate: "forbidden", Pattern: "deleted-test", File: "calc_test.go", Line: 12, Detail: "a test was deleted"}, "", "")
	if gate.Summary != "gate forbidden (deleted-test) at calc_test.go:12: a test was deleted" || gate.File != "calc_test.go" || gate.Line != 12 {
		t.Errorf("gate failure %+v", gate)
	}
	outside := filepath.Join(t.TempDir(), "secret.log")
	if err := os.WriteFile(outside, []byte("secret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if f := failureOf(root, dashboard.StatusFailed, &envelope.GateReason{Gate: "check", File: outside, Detail: "check \"x\" exited 1 after 0s"}, "", ""); len(f.Lines) != 0 {
		t.Errorf("a log outside .apiary was read: %q", f.Lines)
	}
	if failureOf(root, dashboard.StatusSucceeded, g, "", "") != nil {
		t.Error("a succeeded task has a failure")
	}
}
