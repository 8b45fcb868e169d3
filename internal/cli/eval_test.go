package cli

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apiary-dev/apiary/internal/envtest"
	"github.com/apiary-dev/apiary/internal/eval"
)

// TestEvalShipped runs `apiary eval` end to end on the shipped task set,
// with its scripted agents as real Claude Code workers driven by llmfake,
// and as command agents.
func TestEvalShipped(t *testing.T) {
	t.Parallel()
	envtest.Command(t, "git")
	envtest.Command(t, "go")
	set := filepath.Join(envtest.ModuleRoot(t), "examples", "eval-textkit")
	for _, agent := range []string{"scripted-claude", "scripted-command"} {
		t.Run(agent, func(t *testing.T) {
			t.Parallel()
			dir, out := filepath.Join(t.TempDir(), "work"), t.TempDir()
			args := []string{"eval", set, "--budget-usd", "5", "--agent", agent, "--json", "--dir", dir, "--out", out}
			if agent == "scripted-claude" {
				args = append(args, "--claude", envtest.Claude(t))
			}
			var res evalOutput
			if err := json.Unmarshal([]byte(mustApiary(t, args...)), &res); err != nil {
				t.Fatal(err)
			}
			if res.Agents != agent || res.Dir != dir || res.Tasks != 4 || res.BudgetUSD != 5 {
				t.Fatalf("eval of %s with %s agents in %s: %+v", res.TaskSet, res.Agents, res.Dir, res.Result)
			}
			// The single agent writes all four correctly.
			if s := res.Single; s.Accepted != 4 || s.Quality != 1 || s.Status != "succeeded" {
				t.Errorf("single: %+v", s)
			}
			// In the swarm, words and topwords both declare Words: the one
			// integrated second no longer compiles and the gates reject it.
			sw := res.Swarm
			rejected := ""
			for _, task := range sw.Tasks {
				if task.Accepted {
					continue
				}
				if rejected != "" || (task.ID != "words" && task.ID != "topwords") || task.GateStatus != "failed" || !strings.HasPrefix(task.GateReason, "check") {
					t.Errorf("swarm task %+v", task)
				}
				rejected = task.ID
			}
			if sw.Accepted != 3 || sw.Quality != 0.75 || rejected == "" {
				t.Errorf("swarm: %+v", sw)
			}
			if res.Verdict != eval.VerdictSingle || !strings.HasPrefix(res.Reasons[0], "quality: swarm worse 0.75 vs single 1.00") {
				t.Errorf("verdict %q: %q", res.Verdict, res.Reasons)
			}
			if agent == "scripted-claude" {
				// Claude Code accounts for its usage: every agent of the
				// swarm pays its own context, so the swarm spends more.
				if !res.CostKnown || res.Single.USD <= 0 || res.Swarm.CostPerAccepted == nil || res.TokenAmplification == nil || *res.TokenAmplification <= 1 {
					t.Errorf("costs: known %v, single $%g, swarm per accepted %v, amplification %v",
						res.CostKnown, res.Single.USD, res.Swarm.CostPerAccepted, res.TokenAmplification)
				}
			} else if res.CostKnown || res.TokenAmplification != nil {
				t.Errorf("command agents report no cost, yet: known %v, amplification %v", res.CostKnown, res.TokenAmplification)
			}
			// The hidden checks never reached the agents.
			for _, arm := range []string{"single", "swarm"} {
				noHidden(t, filepath.Join(dir, arm, "repo"), "TestHidden")
			}
			// The chart.
			var root svgNode
			if data, err := os.ReadFile(filepath.Join(out, "eval.svg")); err != nil || xml.Unmarshal(data, &root) != nil {
				t.Fatalf("eval.svg: %v", err)
			}
			if legend := root.find(func(n *svgNode) bool { return n.attr("class") == "legend" }); len(legend) != 2 {
				t.Errorf("chart legend: %d entries", len(legend))
			}
			if f, err := os.Open(filepath.Join(out, "eval.png")); err != nil {
				t.Error(err)
			} else {
				_, err := png.Decode(f)
				f.Close()
				if err != nil {
					t.Errorf("eval.png: %v", err)
				}
			}
		})
	}
}

// noHidden fails if a file of the repository, or any of its git objects,
// holds marker.
func noHidden(t *testing.T, repo, marker string) {
	t.Helper()
	err := filepath.WalkDir(repo, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		if b, err := os.ReadFile(p); err == nil && bytes.Contains(b, []byte(marker)) {
			t.Errorf("%s holds %q", p, marker)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	objs, err := exec.Command("git", "-C", repo, "cat-file", "--batch-all-objects", "--batch").Output()
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) == 0 || bytes.Contains(objs, []byte(marker)) {
		t.Errorf("%s: %d bytes of git objects, holding %q: %v", repo, len(objs), marker, bytes.Contains(objs, []byte(marker)))
	}
}

// TestEvalUsage pins eval's command-line errors.
func TestEvalUsage(t *testing.T) {
	t.Parallel()
	set := filepath.Join(envtest.ModuleRoot(t), "examples", "eval-textkit")
	tests := []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"eval"}, 2, "want TASKSET"},
		{[]string{"eval", set}, 2, "--budget-usd must be a positive"},
		{[]string{"eval", set, "--budget-usd", "1", "--max-parallel", "-1"}, 2, "--max-parallel must not be negative"},
		{[]string{"eval", set, "--budget-usd", "1", "--agent", "nosuch"}, 2, `--agent "nosuch" is neither`},
		{[]string{"eval", t.TempDir(), "--budget-usd", "1"}, 1, "eval: bad task set"},
	}
	for _, tt := range tests {
		var stdout, stderr bytes.Buffer
		code := Main(t.Context(), tt.args, strings.NewReader(""), &stdout, &stderr)
		if code != tt.code || !strings.Contains(stderr.String(), tt.msg) {
			t.Errorf("apiary %v: exit %d, stderr %q; want %d and %q", tt.args, code, stderr.String(), tt.code, tt.msg)
		}
	}
}
