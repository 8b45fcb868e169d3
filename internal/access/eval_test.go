package access

import (
	"io"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"testing"

	"github.com/apiary-dev/apiary/internal/attempt"
	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/eval"
	"github.com/apiary-dev/apiary/internal/gateway/gatewaytest"
	"github.com/apiary-dev/apiary/internal/llmfake"
)

// TestEvalMeter drives one arm's gateway with plain HTTP in front of
// llmfake: every attempt's key draws on the arm's one budget; a request
// that could take the arm past it is refused and never reaches the model;
// a model without a price makes the arm's cost unknown; and the arm's
// keys die with their attempts.
func TestEvalMeter(t *testing.T) {
	t.Parallel()
	srv, err := llmfake.New(llmfake.Config{}, llmfake.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fake := llmfake.Serve(l, srv)
	defer fake.Close()
	dir := t.TempDir()
	g := &Eval{Dir: dir, Upstream: fake.URL, Key: "upstream-key", Log: io.Discard}
	// 3,000 tokens for the arm; each key's own budget is the whole arm's.
	m, err := g.Open(t.Context(), eval.Swarm, eval.Budget{USD: 1, Tokens: 3000})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	access := m.Access()
	grant := func(task string) attempt.Access {
		a, err := access.Grant(t.Context(), attempt.TaskRef{Run: "r", Task: task, Attempt: 1, Role: attempt.RoleWorker}, envelope.Budget{USD: 1})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	a, b := grant("a"), grant("b")
	if code := sendMessage(t, a, "claude-sonnet-4-5", 1000); code != http.StatusOK {
		t.Fatalf("a's first request: %d", code)
	}
	// b's key has a budget of its own to spare, but the arm has not: with
	// a's spend, 2,990 more output tokens could take it past 3,000.
	if code := sendMessage(t, b, "claude-sonnet-4-5", 2990); code != http.StatusPaymentRequired {
		t.Fatalf("b's request past the arm's budget: %d, want 402", code)
	}
	if code := sendMessage(t, b, "mystery-model-1", 10); code != http.StatusOK {
		t.Fatalf("b's small request: %d", code)
	}
	if n := srv.Stats().Total.Requests; n != 2 {
		t.Errorf("llmfake saw %d requests, want the 2 the gateway let through", n)
	}
	// A key dies with its attempt.
	if err := access.(attempt.AccessRevoker).Revoke(t.Context(), a.KeyID); err != nil {
		t.Fatal(err)
	}
	if code := sendMessage(t, a, "claude-sonnet-4-5", 10); code != http.StatusUnauthorized {
		t.Errorf("a revoked key: %d, want 401", code)
	}
	sp, err := m.Spend(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if sp.Requests != 2 || sp.Refused != 1 || sp.InputTokens <= 0 || sp.OutputTokens <= 0 || sp.USD <= 0 ||
		!slices.Equal(sp.Models, []string{"claude-sonnet-4-5", "mystery-model-1"}) || !slices.Equal(sp.Unpriced, []string{"mystery-model-1"}) {
		t.Errorf("spend %+v", sp)
	}
	// Spend ended the gateway's intake, having counted all it took.
	if _, err := http.Get(a.BaseURL + "/v1/models"); err == nil {
		t.Error("the gateway still takes requests after Spend")
	}
	if u, err := access.Usage(t.Context(), b.KeyID); err != nil || !u.Known || u.InputTokens <= 0 {
		t.Errorf("b's usage %+v, %v", u, err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Errorf("a second Close: %v", err)
	}
	// The ledger: the arm's four requests, under its one agent but for
	// the revoked key's, which the gateway could not tie to anyone.
	var outcomes []string
	for _, r := range gatewaytest.Requests(t, filepath.Join(dir, "swarm", "gateway.db")) {
		outcomes = append(outcomes, r.Outcome)
		if r.Agent != "eval-swarm" && r.Outcome != "rejected" {
			t.Errorf("ledger row of agent %q: %+v", r.Agent, r)
		}
	}
	if !slices.Equal(outcomes, []string{"ok", "budget_exhausted", "ok", "rejected"}) {
		t.Errorf("ledger outcomes %v", outcomes)
	}
}
