package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/runs"
)

// spawningAgent finds apiary on its PATH and asks for a child with an
// envelope that has no task_id, waiting for its receipt.
const spawningAgent = `set -e
command -v apiary > "$FLAGS/which"
printf '{"name":"kid","objective":"child","inputs":{"workspace":"git:%s"},"authority":{"write_scope":["p/kid/"]},"budget":{},"completion":{},"deps":[],"agent":{"profile":"kid"}}' "$APIARY_BASE" > "$FLAGS/kid.json"
apiary spawn --wait "$FLAGS/kid.json" > "$FLAGS/answer.json"
mkdir -p p && echo parent > p/done
`

// TestAgentRunsApiarySpawn: an agent of `apiary run --json` finds `apiary`
// on its PATH and spawns a child with `apiary spawn`, from an envelope
// without a task_id (apiary spawn gives it a UUIDv7); the child runs and
// its receipt comes back. With --json the report is the only thing on
// stdout and the progress is on stderr.
func TestAgentRunsApiarySpawn(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	repoDir, flags := filepath.Join(dir, "repo"), filepath.Join(dir, "flags")
	gitInit(t, repoDir)
	if err := os.Mkdir(flags, 0o755); err != nil {
		t.Fatal(err)
	}
	script, planPath := filepath.Join(dir, "agent.sh"), filepath.Join(dir, "plan.yaml")
	plan := `version: 1
agents:
  sh: {kind: command, argv: [sh, "` + script + `"], env: {FLAGS: "` + flags + `"}}
  kid: {kind: command, argv: [sh, -c, "mkdir -p p/kid && echo child > p/kid/out"]}
tasks:
  - {id: p, objective: parent, agent: sh, write_scope: [p/]}
`
	for p, s := range map[string]string{script: spawningAgent, planPath: plan} {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var stdout, stderr bytes.Buffer
	code := Main(t.Context(), []string{"run", "--repo", repoDir, "--json", "--no-gateway", "--model-url", "http://127.0.0.1:9",
		"--agent-bin", "claude=/bin/true", planPath}, strings.NewReader(""), &stdout, &stderr)
	var rep runs.Report
	if err := json.Unmarshal(stdout.Bytes(), &rep); code != 0 || err != nil || !rep.OK() {
		t.Fatalf("run: exit %d, %v\nstdout: %s\nstderr: %s", code, err, stdout.String(), stderr.String())
	}
	if rep.Task("kid") == nil || rep.Task("kid").Status != "succeeded" || rep.Task("kid").Parent != "p" {
		t.Errorf("the child: %+v", rep.Task("kid"))
	}
	which, _ := os.ReadFile(filepath.Join(flags, "which"))
	if !strings.HasSuffix(strings.TrimSpace(string(which)), filepath.Join(".apiary", "bin", "apiary")) {
		t.Errorf("apiary on the agent's PATH: %q", which)
	}
	var ans runs.SpawnResult
	b, _ := os.ReadFile(filepath.Join(flags, "answer.json"))
	if err := json.Unmarshal(b, &ans); err != nil || ans.Task != "kid" || !validTaskID(ans.TaskID) || len(ans.Receipt) == 0 {
		t.Errorf("apiary spawn answered %v: %s", err, b)
	}
	if !strings.Contains(stderr.String(), "run "+rep.RunID) || !strings.Contains(stderr.String(), "kid: ") {
		t.Errorf("--json printed no progress on stderr:\n%s", stderr.String())
	}
	// What a resume takes from run.json unless told otherwise.
	f := runFlags{resume: rep.RunID}
	if err := f.recorded(repoDir); err != nil {
		t.Fatal(err)
	}
	if f.modelURL != "http://127.0.0.1:9" || !f.noGateway || len(f.agentBins) != 1 || f.agentBins[0] != "claude=/bin/true" {
		t.Errorf("a resume would run with model URL %q, no gateway %v, agent bins %v", f.modelURL, f.noGateway, f.agentBins)
	}
	// Given again, they win; an --agent-bin of another kind is added to
	// the recorded one (see TestResumeRecordedFlags).
	f = runFlags{resume: rep.RunID, modelURL: "http://127.0.0.1:8", agentBins: stringList{"codex=/bin/false"}}
	if err := f.recorded(repoDir); err != nil || f.modelURL != "http://127.0.0.1:8" || !slices.Equal(f.agentBins, []string{"codex=/bin/false", "claude=/bin/true"}) {
		t.Errorf("flags given to the resume were overridden: %q %v %v", f.modelURL, f.agentBins, err)
	}
}

func validTaskID(s string) bool {
	_, err := envelope.ParseTaskID(s)
	return err == nil
}
