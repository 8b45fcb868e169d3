package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/apiary-dev/apiary/internal/agent"
	"github.com/apiary-dev/apiary/internal/doctor"
	"github.com/apiary-dev/apiary/internal/envtest"
)

// TestDoctor runs `apiary doctor --json` with the pinned CLIs installed:
// each is found with its pinned version and passes the smoke test through
// the gateway, which metered its tokens; aider, which this machine cannot
// install, is reported as not installed. (A CLI that fails: see package
// doctor's tests.)
func TestDoctor(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{agent.KindClaude, agent.KindCodex, agent.KindGemini, agent.KindOpenCode} {
		facts, _ := agent.FactsOf(kind)
		envtest.NodeBin(t, facts.Bin)
	}
	var stdout, stderr bytes.Buffer
	code := Main(t.Context(), []string{"doctor", "--json"}, strings.NewReader(""), &stdout, &stderr)
	var res []doctor.Result
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatalf("doctor JSON (exit %d): %v\n%s\n%s", code, err, stdout.String(), stderr.String())
	}
	if code != 0 {
		t.Errorf("exit %d with every CLI installed\n%s", code, stdout.String())
	}
	seen := map[string]doctor.Result{}
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
}
