//go:build unix

package swarm

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apiary-dev/apiary/internal/access"
	"github.com/apiary-dev/apiary/internal/envtest"
	"github.com/apiary-dev/apiary/internal/git"
	"github.com/apiary-dev/apiary/internal/git/gittest"
	"github.com/apiary-dev/apiary/internal/llmfake"
	"github.com/apiary-dev/apiary/internal/swarm/layout"
)

// hedgeAgent asks the model once when it has model access; its first
// attempt then stalls (it records its pid and sleeps a minute); any later
// attempt writes the file at once: its attempt number, the profile's WHO
// if it sets one, and the model its profile names (APIARY_MODEL).
const hedgeAgent = `set -e
touch "$FLAGS/started-$APIARY_ATTEMPT"
if [ -n "$ANTHROPIC_BASE_URL" ]; then
  curl -sf -o /dev/null "$ANTHROPIC_BASE_URL/v1/messages" -H "x-api-key: $ANTHROPIC_API_KEY" \
    -H 'anthropic-version: 2023-06-01' -H 'content-type: application/json' \
    -d '{"model":"claude-sonnet-4-5","max_tokens":20,"messages":[{"role":"user","content":"attempt '"$APIARY_ATTEMPT"'"}]}'
fi
if [ "$APIARY_ATTEMPT" = 1 ]; then
  echo $$ > "$FLAGS/slow.pid"
  sleep 60
fi
echo "$APIARY_ATTEMPT${WHO:+ $WHO}${APIARY_MODEL:+ $APIARY_MODEL}" > a.txt
`

// TestSwarmSpeculative runs a one-task plan in swarm mode, hedged by the
// run-wide default (what `apiary run --mode swarm --hedge-after`
// publishes), by the task's own hedge with another agent profile
// (hedge_agent), or as a quorum of two of which one must pass: the first
// attempt stalls; the shard's gatekeeper announces a second claim of the
// same task — after the hedge delay, or at once for the quorum — another
// worker takes it under the task's fencing token and passes; its work is
// the one integrated, in exactly one commit on the branch; the stalled
// attempt is cancelled (its process is gone), and what both attempts spent
// is in the report, each attempt's share on its own with the profile and
// model it ran with (a hedge_agent's, whose model differs, for the hedge).
func TestSwarmSpeculative(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		opts   layout.Options
		fields string // the task's plan fields
		want   string // a.txt, as the winner wrote it
		// winner is the profile and model the winning attempt ran with
		// (the loser's are sh's: the workers').
		winner [2]string
		ledger bool // through a run gateway, checked against its ledger
	}{
		{name: "hedge", opts: layout.Options{Shards: 1, HedgeAfterS: 1, NoIntents: true}, want: "2 small-model\n", winner: [2]string{"sh", "small-model"}},
		{name: "hedge-agent", opts: layout.Options{Shards: 1, NoIntents: true}, fields: ", hedge_after_s: 1, hedge_agent: sh2", want: "2 sh2 big-model\n",
			winner: [2]string{"sh2", "big-model"}},
		{name: "quorum", opts: layout.Options{Shards: 1, NoIntents: true}, fields: ", quorum: {n: 2, k: 1}", want: "2 small-model\n", winner: [2]string{"sh", "small-model"}},
		{name: "hedge-ledger", opts: layout.Options{Shards: 1, HedgeAfterS: 1, NoIntents: true}, want: "2 small-model\n", winner: [2]string{"sh", "small-model"}, ledger: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			testSpeculative(t, tt.opts, tt.fields, tt.want, tt.winner, tt.ledger)
		})
	}
}

// testSpeculative runs the case; with ledger, the workers reach llmfake
// through a run gateway (a key per attempt), and each attempt's share of
// the report must be what the gateway's ledger metered for its key.
func testSpeculative(t *testing.T, opts layout.Options, fields, want string, winnerRan [2]string, ledger bool) {
	f := newSwarmFixture(t)
	var gw *access.Gateway
	if ledger {
		envtest.Command(t, "curl")
		fake, err := llmfake.ServeLoopback(llmfake.Config{}, llmfake.Options{Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { fake.Close() })
		g, stop, err := access.StartGateway(t.Context(), filepath.Join(t.TempDir(), "gateway.db"), fake.URL, "upstream-key", io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { stop() })
		gw, f.models = g, g
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	agentPath := filepath.Join(t.TempDir(), "hedge.sh")
	if err := os.WriteFile(agentPath, []byte(hedgeAgent), 0o644); err != nil {
		t.Fatal(err)
	}
	plan := strings.NewReplacer("AGENT", agentPath, "FLAGDIR", f.flags, "FIELDS", fields).Replace(`version: 1
agents:
  sh: {kind: command, argv: [sh, "AGENT"], env: {FLAGS: "FLAGDIR"}, model: small-model}
  sh2: {kind: command, argv: [sh, "AGENT"], env: {FLAGS: "FLAGDIR", WHO: sh2}, model: big-model}
tasks:
  - {id: a, objective: write a, agent: sh, write_scope: [a.txt]FIELDS}
`)
	r, err := Publish(ctx, PublishConfig{Store: f.st, Repo: f.repo, PlanFile: "plan.yaml", PlanData: []byte(plan), Options: opts})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Options.Speculative || r.Options.HedgeAfterS != opts.HedgeAfterS {
		t.Fatalf("published options %+v: want the run's hedge and speculative tracking", r.Options)
	}
	hctx, hcancel := context.WithCancel(ctx)
	defer func() { hcancel(); f.wg.Wait() }()
	// Leases long enough that a loaded machine (the race detector, other
	// tests) does not lapse a host mid-race: that is tested elsewhere.
	f.host(t, hctx, HostConfig{Host: "h1", Run: r.Run, TTL: 10 * time.Second, Workers: []WorkerSpec{
		{ID: "w1", Profile: "sh"}, {ID: "w2", Profile: "sh"}}})
	f.host(t, hctx, HostConfig{Host: "m", Run: r.Run, TTL: 10 * time.Second,
		Merge: &MergeConfig{Dir: filepath.Join(f.work, "merge"), Git: git.Options{Env: append(os.Environ(), gittest.Env...)}}})
	rep, err := WaitRun(ctx, f.st, r.Run, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		var b strings.Builder
		rep.WriteText(&b)
		t.Fatalf("run did not succeed:\n%s", b.String())
	}
	head, err := f.repo.RevParse(ctx, "refs/heads/main")
	if err != nil {
		t.Fatal(err)
	}
	log, err := f.repo.FirstParentLog(ctx, r.StartHead, head)
	if err != nil {
		t.Fatal(err)
	}
	if len(log) != 1 {
		t.Fatalf("%d commits on the branch; want exactly one integration", len(log))
	}
	if got := gittest.Show(t, f.repo, head, "a.txt"); got != want {
		t.Errorf("a.txt = %q; want the second attempt's work, %q", got, want)
	}
	a := rep.Task("a")
	if a.Attempts != 2 || a.Integrated == "" {
		t.Errorf("task a: %+v; want two attempts, integrated", a)
	}
	// Both attempts' spend: the loser's (cancelled, having run at least
	// until the hedge started) and the winner's.
	byOutcome := map[string]layout.AttemptSpend{}
	for _, s := range a.Spent {
		byOutcome[s.Outcome] = s
	}
	loser, winner := byOutcome[layout.SlotCancelled], byOutcome[layout.SlotPassed]
	if len(a.Spent) != 2 || loser.Attempt != "a" || winner.Attempt != "a~1" {
		t.Fatalf("spent %+v (notes %q); want the first attempt cancelled and the hedge (a~1) passed", a.Spent, a.Notes)
	}
	if loser.Usage.WallS <= 0 || loser.Usage.WallS < opts.HedgeAfterS*0.9 || winner.Usage.WallS <= 0 || loser.Worker == winner.Worker {
		t.Errorf("spent %+v; want the loser's time up to its cancellation and the winner's, on two workers", a.Spent)
	}
	// Each attempt names the profile it ran with and that profile's model.
	if loser.Profile != "sh" || loser.Model != "small-model" {
		t.Errorf("the loser ran with %q (%q); want sh (small-model), its worker's", loser.Profile, loser.Model)
	}
	if winner.Profile != winnerRan[0] || winner.Model != winnerRan[1] {
		t.Errorf("the winner ran with %q (%q); want %s (%s)", winner.Profile, winner.Model, winnerRan[0], winnerRan[1])
	}
	var text strings.Builder
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, row := range []string{"a cancelled w", "a~1 passed w"} {
		ran := "sh (small-model)"
		if strings.HasPrefix(row, "a~1") {
			ran = winnerRan[0] + " (" + winnerRan[1] + ")"
		}
		if !slices.ContainsFunc(strings.Split(text.String(), "\n"), func(l string) bool {
			f := strings.Fields(l)
			return len(f) > 4 && strings.HasPrefix(strings.Join(f[:3], " "), row) && strings.Join(f[3:5], " ") == ran
		}) {
			t.Errorf("the report has no row %q… %s:\n%s", row, ran, text.String())
		}
	}
	if sum := loser.Usage.WallS + winner.Usage.WallS; a.Usage.WallS < sum-1e-6 {
		t.Errorf("task usage %+v; want both attempts' %.3fs in it", a.Usage, sum)
	}
	if gw != nil {
		checkSpentAgainstLedger(t, gw, r.Run, loser, winner)
	}
	// The stalled attempt's process was ended with it.
	b, err := os.ReadFile(filepath.Join(f.flags, "slow.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
		if time.Now().After(deadline) {
			t.Fatalf("the cancelled attempt's process %d is still alive", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// checkSpentAgainstLedger: each attempt made one request under a key of
// its own, and the report's share of each is what the ledger holds for
// that key — the cancelled loser's spend is kept, not lost with it.
func checkSpentAgainstLedger(t *testing.T, gw *access.Gateway, run string, loser, winner layout.AttemptSpend) {
	t.Helper()
	if err := gw.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	rows, err := gw.DB().QueryContext(t.Context(), `SELECT agent, COUNT(*), SUM(input_tokens), SUM(output_tokens) FROM gateway_requests GROUP BY agent ORDER BY agent`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	type metered struct{ requests, in, out int64 }
	got := map[string]metered{}
	for rows.Next() {
		var agent string
		var m metered
		if err := rows.Scan(&agent, &m.requests, &m.in, &m.out); err != nil {
			t.Fatal(err)
		}
		got[agent] = m
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	first, second := got[run+"/a/a1"], got[run+"/a/a2"]
	if len(got) != 2 || first.requests != 1 || second.requests != 1 {
		t.Fatalf("ledger by key %+v; want one request for each of the two attempts' keys", got)
	}
	if loser.Usage.InputTokens != first.in || loser.Usage.OutputTokens != first.out || first.in == 0 {
		t.Errorf("the cancelled attempt's spend %+v; the ledger metered %+v for its key", loser.Usage, first)
	}
	if winner.Usage.InputTokens != second.in || winner.Usage.OutputTokens != second.out || second.in == 0 {
		t.Errorf("the winner's spend %+v; the ledger metered %+v for its key", winner.Usage, second)
	}
}
