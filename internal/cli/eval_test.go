package cli

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apiary-dev/apiary/internal/envtest"
	"github.com/apiary-dev/apiary/internal/eval"
	"github.com/apiary-dev/apiary/internal/gateway/gatewaytest"
)

// runEval runs `apiary eval --json` and decodes its output.
func runEval(t *testing.T, args ...string) eval.Output {
	t.Helper()
	var res eval.Output
	if err := json.Unmarshal([]byte(mustApiary(t, append([]string{"eval", "--json"}, args...)...)), &res); err != nil {
		t.Fatal(err)
	}
	return res
}

// chainSet is testdata's task set: three text files, each after the one
// before, with shell checks.
func chainSet(t *testing.T) string {
	return filepath.Join("testdata", "eval", "chain")
}

// TestEvalCommandAgents runs `apiary eval` end to end with scripted
// command agents (real git, runtime and gates; the agents call no model):
// both arms behind their gateways, which see nothing, so cost and tokens
// are n/a and cost gives no verdict; both arms do the same, correct work
// and get full marks; on a chain the swarm can only be slower; the hidden
// checks never reach a repository; the chart has quality and time only.
func TestEvalCommandAgents(t *testing.T) {
	t.Parallel()
	envtest.Command(t, "git")
	dir, out := filepath.Join(t.TempDir(), "work"), t.TempDir()
	res := runEval(t, chainSet(t), "--budget-usd", "5", "--agent", "scripted-command", "--dir", dir, "--out", out)
	if res.Agents != "scripted-command" || res.Dir != dir || res.Inputs.Budget.USD != 5 || !res.Inputs.Metered ||
		res.Inputs.ScriptedTurnS == nil || *res.Inputs.ScriptedTurnS != 0.5 || res.Inputs.Seed == nil || len(res.Inputs.Grading) != 6 {
		t.Fatalf("inputs: %+v", res.Inputs)
	}
	for _, a := range []eval.ArmResult{res.Single, res.Swarm} {
		if a.Quality != 1 || a.Accepted != 3 || a.ChecksTotal != 6 || a.Status != "succeeded" {
			t.Errorf("%s: quality %g (%d/%d checks), %d accepted, %s", a.Arm, a.Quality, a.ChecksPassed, a.ChecksTotal, a.Accepted, a.Status)
		}
		if !a.Metered || a.Spend == nil || a.Spend.Requests != 0 || a.CostKnown || a.TokensKnown {
			t.Errorf("%s: metered %v, spend %+v, cost known %v", a.Arm, a.Metered, a.Spend, a.CostKnown)
		}
		noHidden(t, a.Repo, "wc -l")
	}
	if res.CostKnown || res.TokenAmplification != nil || !strings.HasPrefix(res.Reasons[2], "cost per accepted task: n/a, no verdict on this axis") {
		t.Errorf("cost: known %v, amplification %v, %q", res.CostKnown, res.TokenAmplification, res.Reasons)
	}
	if res.Verdict != eval.VerdictSingle || res.Swarm.TimeS <= res.Single.TimeS {
		t.Errorf("the chain: %q, %q", res.Verdict, res.Reasons)
	}
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
	// The text report states the inputs (here a --turn-s of its own) and
	// the axes.
	text := mustApiary(t, "eval", chainSet(t), "--budget-usd", "5", "--budget-tokens", "1000", "--agent", "scripted-command", "--turn-s", "0", "--seed", "7")
	for _, want := range []string{"budget per arm: $5.00 and 1000 tokens, one hard budget per arm held by the metering gateway",
		"scripted model turn 0.00s, seed 7", "max parallel: single 1, swarm 3", "the same 6 checks for both arms (2 visible, 4 hidden)",
		"cost per accepted task: n/a, no verdict on this axis", "verdict: "} {
		if !strings.Contains(text, want) {
			t.Errorf("the report lacks %q:\n%s", want, text)
		}
	}
}

// TestEvalScriptedClaudeThroughGateways: both arms are real Claude Code
// processes, scripted through llmfake, each arm behind its own gateway.
// Every model request of an arm is in that arm's ledger, under the arm's
// one gateway agent — one per scripted turn — and the report's cost and
// tokens are the ledger's. On the chain every swarm agent pays its own
// context, so the swarm spends more tokens than the single agent.
func TestEvalScriptedClaudeThroughGateways(t *testing.T) {
	t.Parallel()
	envtest.Command(t, "git")
	set := chainSet(t)
	dir := filepath.Join(t.TempDir(), "work")
	res := runEval(t, set, "--budget-usd", "5", "--budget-tokens", "5000000", "--agent", "scripted-claude", "--claude", envtest.Claude(t), "--dir", dir)
	ts, err := eval.Load(set)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []eval.ArmResult{res.Single, res.Swarm} {
		steps, err := ts.ScriptedSteps(a.Arm)
		if err != nil {
			t.Fatal(err)
		}
		turns := 0
		for _, s := range steps {
			turns += len(s) + 1
		}
		rows := gatewaytest.Requests(t, filepath.Join(dir, string(a.Arm), "gateway.db"))
		var scripted int
		var tokens int64
		for _, r := range rows {
			if r.Agent != "eval-"+string(a.Arm) || r.Outcome != "ok" {
				t.Errorf("%s ledger: %+v", a.Arm, r)
			}
			if r.Model == "claude-sonnet-4-5" {
				scripted++
			}
			tokens += r.Tokens
		}
		if scripted != turns || a.Spend.Requests != len(rows) || a.Spend.Refused != 0 || a.Tokens != tokens || !a.CostKnown || a.USD <= 0 {
			t.Errorf("%s: %d scripted requests in the ledger for %d turns; spend %+v, tokens %d (ledger %d), $%g",
				a.Arm, scripted, turns, a.Spend, a.Tokens, tokens, a.USD)
		}
		if a.Quality != 1 || a.Accepted != 3 {
			t.Errorf("%s: quality %g, %d accepted", a.Arm, a.Quality, a.Accepted)
		}
	}
	if !res.CostKnown || res.TokenAmplification == nil || *res.TokenAmplification <= 1 || res.Single.CostPerAccepted == nil {
		t.Errorf("costs: known %v, amplification %v", res.CostKnown, res.TokenAmplification)
	}
	if res.Verdict != eval.VerdictSingle || !strings.HasPrefix(res.Reasons[2], "cost per accepted task: swarm worse") {
		t.Errorf("verdict %q: %q", res.Verdict, res.Reasons)
	}
}

// TestEvalBudgetStopsArm: with a token budget smaller than the work, the
// gateway refuses the requests that could take an arm past it, before
// they are sent: each arm's ledger never adds up past the limit, and
// shows the refusals. (A request reserves its padded input and its
// max_tokens; Claude Code's first request alone reserves tens of
// thousands, so 60,000 tokens pays for one or two requests, not the
// three tasks.)
func TestEvalBudgetStopsArm(t *testing.T) {
	t.Parallel()
	envtest.Command(t, "git")
	const limit = 60_000
	dir := filepath.Join(t.TempDir(), "work")
	res := runEval(t, chainSet(t), "--budget-usd", "5", "--budget-tokens", "60000", "--agent", "scripted-claude", "--claude", envtest.Claude(t), "--dir", dir)
	if res.Inputs.Budget.Tokens != limit {
		t.Fatalf("budget %+v", res.Inputs.Budget)
	}
	for _, a := range []eval.ArmResult{res.Single, res.Swarm} {
		rows := gatewaytest.Requests(t, filepath.Join(dir, string(a.Arm), "gateway.db"))
		var spent int64
		sent, refused := 0, 0
		for i, r := range rows {
			if r.Outcome == "budget_exhausted" {
				refused++
				if r.Tokens != 0 {
					t.Errorf("%s: refused request %d carries %d tokens", a.Arm, i, r.Tokens)
				}
				continue
			}
			sent++
			if spent += r.Tokens; spent > limit {
				t.Errorf("%s: request %d takes the arm to %d tokens, past its budget of %d", a.Arm, i, spent, limit)
			}
		}
		t.Logf("%s: %d requests sent (%d tokens), %d refused", a.Arm, sent, spent, refused)
		if refused == 0 || a.Spend.Refused != refused || a.Spend.Requests != sent || a.Tokens != spent {
			t.Errorf("%s: %d refused and %d sent in the ledger; the report says %+v, %d tokens (ledger %d)", a.Arm, refused, sent, a.Spend, a.Tokens, spent)
		}
		if a.Quality == 1 {
			t.Errorf("%s finished everything on a budget that cannot pay for it", a.Arm)
		}
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
	set := chainSet(t)
	tests := []struct {
		args []string
		env  []string
		code int
		msg  string
	}{
		{[]string{"eval"}, nil, 2, "want TASKSET"},
		{[]string{"eval", set}, nil, 2, "--budget-usd must be a positive"},
		{[]string{"eval", set, "--budget-usd", "1", "--budget-tokens", "-5"}, nil, 2, "--budget-tokens must not be negative"},
		{[]string{"eval", set, "--budget-usd", "1", "--max-parallel", "-1"}, nil, 2, "--max-parallel must not be negative"},
		{[]string{"eval", set, "--budget-usd", "1", "--agent", "nosuch"}, nil, 2, `--agent "nosuch" is neither`},
		{[]string{"eval", set, "--budget-usd", "1", "--agent", "scripted-command", "--turn-s", "601"}, nil, 2, "want seconds in [0, 600]"},
		{[]string{"eval", set, "--budget-usd", "1", "--agent", "claude"}, []string{"APIARY_MODEL_KEY=", "ANTHROPIC_API_KEY="}, 1, "real agents need a model key"},
		{[]string{"eval", set, "--budget-usd", "1", "--agent", "claude", "--turn-s", "1"}, []string{"APIARY_MODEL_KEY=k"}, 2, "--turn-s sets"},
		{[]string{"eval", t.TempDir(), "--budget-usd", "1"}, nil, 1, "eval: bad task set"},
	}
	for _, tt := range tests {
		var stdout, stderr bytes.Buffer
		code := mainEnv(t, tt.env, tt.args, &stdout, &stderr)
		if code != tt.code || !strings.Contains(stderr.String(), tt.msg) {
			t.Errorf("apiary %v: exit %d, stderr %q; want %d and %q", tt.args, code, stderr.String(), tt.code, tt.msg)
		}
	}
}

// mainEnv is Main with the variables vars ("K=V") set over the process's
// environment.
func mainEnv(t *testing.T, vars []string, args []string, stdout, stderr *bytes.Buffer) int {
	t.Helper()
	set := map[string]string{}
	for _, kv := range vars {
		k, v, _ := strings.Cut(kv, "=")
		set[k] = v
	}
	e := &env{Stdin: strings.NewReader(""), Stdout: stdout, Stderr: stderr, Getenv: func(k string) string {
		if v, ok := set[k]; ok {
			return v
		}
		return os.Getenv(k)
	}}
	err := rootCommand().Execute(t.Context(), e, "apiary", args)
	var ue *usageError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ue):
		stderr.WriteString(ue.Msg)
		return exitUsage
	}
	stderr.WriteString(err.Error())
	return exitFailure
}
