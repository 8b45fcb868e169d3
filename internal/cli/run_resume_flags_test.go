package cli

import (
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apiary-dev/apiary/internal/rundir"
	"github.com/apiary-dev/apiary/internal/runs"
)

// TestResumeRecordedFlags: what `apiary run` was started with — the model
// URL, the gateway choice, the dashboard address and the agent
// executables — is recorded in run.json, and `apiary run --resume`
// reuses each unless given again: a flag given again wins, even empty or
// false, and an --agent-bin replaces the recorded executable of its kind
// only.
func TestResumeRecordedFlags(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	repoDir, planPath := filepath.Join(dir, "repo"), filepath.Join(dir, "plan.yaml")
	gitInit(t, repoDir)
	plan := `version: 1
agents:
  sh: {kind: command, argv: [sh, -c, "echo d > d.txt"]}
tasks:
  - {id: d, objective: d, agent: sh, write_scope: [d.txt]}
`
	if err := os.WriteFile(planPath, []byte(plan), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := Main(t.Context(), []string{"run", "--repo", repoDir, "--json", "--no-gateway", "--model-url", "http://127.0.0.1:9",
		"--dash", "127.0.0.1:0", "--agent-bin", "claude=/bin/true", "--agent-bin", "codex=/bin/echo", planPath},
		strings.NewReader(""), &stdout, &stderr)
	var rep runs.Report
	if err := json.Unmarshal(stdout.Bytes(), &rep); code != 0 || err != nil || !rep.OK() {
		t.Fatalf("run: exit %d, %v\nstdout: %s\nstderr: %s", code, err, stdout.String(), stderr.String())
	}
	rec, err := rundir.Open(repoDir, rep.RunID).Record()
	if err != nil {
		t.Fatal(err)
	}
	if o := rec.Options; o.ModelURL != "http://127.0.0.1:9" || !o.NoGateway || o.Dash != "127.0.0.1:0" ||
		o.AgentBin["claude"] != "/bin/true" || o.AgentBin["codex"] != "/bin/echo" || len(o.AgentBin) != 2 {
		t.Fatalf("run.json options %+v", o)
	}
	recordedBins := []string{"claude=/bin/true", "codex=/bin/echo"}
	for _, c := range []struct {
		name      string
		args      []string
		modelURL  string
		noGateway bool
		dash      string
		bins      []string
	}{
		{"nothing given", nil, "http://127.0.0.1:9", true, "127.0.0.1:0", recordedBins},
		{"given again", []string{"--model-url", "http://127.0.0.1:8", "--dash", "127.0.0.1:7421", "--agent-bin", "codex=/usr/local/bin/codex"},
			"http://127.0.0.1:8", true, "127.0.0.1:7421", []string{"claude=/bin/true", "codex=/usr/local/bin/codex"}},
		{"another kind", []string{"--agent-bin", "gemini=/opt/gemini"},
			"http://127.0.0.1:9", true, "127.0.0.1:0", []string{"claude=/bin/true", "codex=/bin/echo", "gemini=/opt/gemini"}},
		{"turned off", []string{"--dash=", "--no-gateway=false", "--model-url="}, "", false, "", recordedBins},
	} {
		t.Run(c.name, func(t *testing.T) {
			fs := flag.NewFlagSet("run", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			var f runFlags
			f.register(fs)
			if err := fs.Parse(append([]string{"--resume", rep.RunID}, c.args...)); err != nil {
				t.Fatal(err)
			}
			f.given(fs)
			if err := f.recorded(repoDir); err != nil {
				t.Fatal(err)
			}
			bins := slices.Sorted(slices.Values(f.agentBins))
			if f.modelURL != c.modelURL || f.noGateway != c.noGateway || f.dash != c.dash || !slices.Equal(bins, c.bins) {
				t.Errorf("resume with %q: model URL %q, no gateway %v, dash %q, agent bins %v; want %q, %v, %q, %v",
					c.args, f.modelURL, f.noGateway, f.dash, bins, c.modelURL, c.noGateway, c.dash, c.bins)
			}
		})
	}
}
