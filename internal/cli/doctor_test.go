package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apiary-dev/apiary/internal/agent"
	"github.com/apiary-dev/apiary/internal/envtest"
)

// TestDoctor runs `apiary doctor --json` with the pinned CLIs installed:
// each is found with its pinned version and passes the smoke test through
// the gateway, which metered its tokens; aider, which this machine cannot
// install, is reported as not installed. A CLI that fails makes doctor
// exit 1.
func TestDoctor(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{agent.KindClaude, agent.KindCodex, agent.KindGemini, agent.KindOpenCode} {
		facts, _ := agent.FactsOf(kind)
		envtest.NodeBin(t, facts.Bin)
	}
	var stdout, stderr bytes.Buffer
	code := Main(t.Context(), []string{"doctor", "--json"}, strings.NewReader(""), &stdout, &stderr)
	var res []doctorResult
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatalf("doctor JSON (exit %d): %v\n%s\n%s", code, err, stdout.String(), stderr.String())
	}
	if code != 0 {
		t.Errorf("exit %d with every CLI installed\n%s", code, stdout.String())
	}
	seen := map[string]doctorResult{}
	for _, r := range res {
		seen[r.Kind] = r
	}
	for _, kind := range []string{agent.KindClaude, agent.KindCodex, agent.KindGemini, agent.KindOpenCode} {
		r := seen[kind]
		if r.Smoke != "ok" || r.TokensIn == 0 || !strings.Contains(r.Version, r.Checked) {
			t.Errorf("%s: %+v", kind, r)
		}
	}
	if a := seen[agent.KindAider]; a.Smoke != "not installed" && a.Path == "" {
		t.Errorf("aider: %+v", a)
	}

	// A broken CLI: a Claude Code that exits 1 fails its smoke test.
	broken := filepath.Join(t.TempDir(), "claude")
	if err := os.WriteFile(broken, []byte("#!/bin/sh\necho broken >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	r := doctorResult{Kind: agent.KindClaude, Path: broken}
	access, stop, err := startRunGateway(t.Context(), filepath.Join(t.TempDir(), "gw.db"), "http://127.0.0.1:1", "k", &stderr)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	doctorSmoke(t.Context(), access, t.TempDir(), 0, &r)
	if r.Smoke != "failed" || !strings.Contains(r.Reason, "exit 1") || !strings.Contains(r.Reason, "broken") {
		t.Errorf("a failing CLI: %+v", r)
	}
}
