package gateway

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/apiary-dev/apiary/internal/llmfake"
)

// TestRevokeKeyAbortsInFlight: revoking a virtual key (a cancelled task's)
// aborts its request in flight — the model server sees it end — and refuses
// the key from then on, while another key's request is untouched.
func TestRevokeKeyAbortsInFlight(t *testing.T) {
	t.Parallel()
	srv, upURL := fake(t, llmfake.Config{Faults: llmfake.Faults{Latency: time.Minute}})
	g := start(t, Config{Upstreams: []Upstream{{Name: "a", URL: upURL, APIKey: "real"}}, NoRetry: true})
	victim, vk, err := CreateKey(t.Context(), g.DB, "victim", 0, 0, 0, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	other, _, err := CreateKey(t.Context(), g.DB, "other", 0, 0, 0, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	call := func(ctx context.Context, key string) (int, string) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, g.URL+"/v1/messages", strings.NewReader(smallBody))
		req.Header.Set("anthropic-version", "2023-06-01")
		req.Header.Set("x-api-key", key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	type res struct {
		status int
		body   string
	}
	done := make(chan res, 1)
	go func() {
		s, b := call(context.Background(), victim)
		done <- res{s, b}
	}()
	otherCtx, stopOther := context.WithCancel(t.Context())
	defer stopOther()
	otherDone := make(chan struct{})
	go func() {
		defer close(otherDone)
		call(otherCtx, other) // ends when the test stops waiting
	}()
	deadline := time.Now().Add(30 * time.Second)
	for srv.Stats().InFlight < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("requests never reached the upstream: %d", srv.Stats().InFlight)
		}
		time.Sleep(5 * time.Millisecond)
	}
	n, err := g.RevokeKey(t.Context(), vk.ID)
	if err != nil || n != 1 {
		t.Fatalf("RevokeKey aborted %d requests (%v), want 1", n, err)
	}
	r := <-done
	if r.status != http.StatusForbidden || !strings.Contains(r.body, "revoked") {
		t.Errorf("aborted request: %d %s", r.status, r.body)
	}
	for time.Now().Before(deadline) && srv.Stats().InFlight != 1 {
		time.Sleep(5 * time.Millisecond)
	}
	if n := srv.Stats().InFlight; n != 1 {
		t.Errorf("upstream still has %d requests in flight, want only the other key's", n)
	}
	// The revoked key is refused at once, without reaching the upstream.
	before := srv.Stats().Total.Requests
	if s, b := call(t.Context(), victim); s != http.StatusUnauthorized && s != http.StatusForbidden {
		t.Errorf("revoked key: %d %s", s, b)
	}
	if after := srv.Stats().Total.Requests; after != before {
		t.Errorf("a revoked key's request reached the upstream")
	}
	stopOther()
	<-otherDone
	if _, err := g.RevokeKey(t.Context(), "vk_nope"); err == nil {
		t.Error("revoking an unknown key succeeded")
	}
}
