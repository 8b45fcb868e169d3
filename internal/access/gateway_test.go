package access

import (
	"errors"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/apiary-dev/apiary/internal/attempt"
	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/gateway"
	"github.com/apiary-dev/apiary/internal/llmfake"
)

// TestDirect: every attempt gets the one base URL and the configured key,
// or the key KeyFor derives from its task; its usage is never known.
func TestDirect(t *testing.T) {
	t.Parallel()
	d := Direct{BaseURL: "http://127.0.0.1:1", Key: "k"}
	a, err := d.Grant(t.Context(), attempt.TaskRef{Task: "x"}, envelope.Budget{USD: 1})
	if err != nil || a.BaseURL != "http://127.0.0.1:1" || a.APIKey != "k" || a.KeyID != "" {
		t.Errorf("grant %+v %v", a, err)
	}
	if u, err := d.Usage(t.Context(), a.KeyID); err != nil || u.Known {
		t.Errorf("usage %+v %v: a direct connection cannot know", u, err)
	}
	d.KeyFor = func(r attempt.TaskRef) string { return r.Role + "-" + r.Task }
	if a, _ := d.Grant(t.Context(), attempt.TaskRef{Task: "mul", Role: attempt.RoleWorker}, envelope.Budget{}); a.APIKey != attempt.RoleWorker+"-mul" {
		t.Errorf("derived key %q", a.APIKey)
	}
}

// TestStartGateway: a run gateway in front of llmfake gives each attempt
// a key of its own whose usage it meters; a revoked key is refused; no
// real key is no gateway; after stop nothing listens.
func TestStartGateway(t *testing.T) {
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
	var nk *gateway.NoKeyError
	if _, _, err := StartGateway(t.Context(), filepath.Join(dir, "nokey.db"), fake.URL, "", io.Discard); !errors.As(err, &nk) {
		t.Fatalf("without a real key: %v", err)
	}
	gw, stop, err := StartGateway(t.Context(), RunLedger(dir), fake.URL, "upstream-key", io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	a, err := gw.Grant(t.Context(), attempt.TaskRef{Run: "r1", Task: "build", Attempt: 2, Role: attempt.RoleWorker}, envelope.Budget{USD: 1})
	if err != nil || a.BaseURL != gw.URL() || a.KeyID == "" || a.APIKey == "upstream-key" {
		t.Fatalf("grant %+v %v", a, err)
	}
	if code := sendMessage(t, a, "claude-sonnet-4-5", 50); code != http.StatusOK {
		t.Fatalf("request: %d", code)
	}
	if u, err := gw.Usage(t.Context(), a.KeyID); err != nil || !u.Known || u.InputTokens <= 0 || u.OutputTokens <= 0 {
		t.Errorf("usage %+v %v", u, err)
	}
	keys, err := gateway.ListKeys(t.Context(), gw.DB())
	if err != nil || len(keys) != 1 || keys[0].Agent != "r1/build/a2" {
		t.Errorf("keys %+v %v", keys, err)
	}
	if err := gw.Revoke(t.Context(), a.KeyID); err != nil {
		t.Fatal(err)
	}
	if code := sendMessage(t, a, "claude-sonnet-4-5", 50); code != http.StatusUnauthorized {
		t.Errorf("a revoked key: %d", code)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get(gw.URL() + "/v1/models"); err == nil {
		t.Error("the gateway listens after stop")
	}
}

// sendMessage sends one Messages request with a's key and returns the
// status.
func sendMessage(t *testing.T, a attempt.Access, model string, maxTokens int) int {
	t.Helper()
	body := `{"model":"` + model + `","max_tokens":` + strconv.Itoa(maxTokens) + `,"messages":[{"role":"user","content":"hello"}]}`
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, a.BaseURL+"/v1/messages", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Api-Key", a.APIKey)
	req.Header.Set("Anthropic-Version", "2023-06-01")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}
