package gateway

import (
	"context"
	"errors"
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

// TestWaitKeyIdleCountsCutStream revokes a key while its stream is being
// read: WaitKeyIdle holds until the cut stream's row is recorded, so the
// key's usage read after it counts what the stream sent.
func TestWaitKeyIdleCountsCutStream(t *testing.T) {
	t.Parallel()
	_, upURL := fake(t, llmfake.Config{Output: llmfake.Output{TokensMean: 200}, Faults: llmfake.Faults{EventDelay: 100 * time.Millisecond}})
	g := start(t, Config{Upstreams: []Upstream{{Name: "a", URL: upURL, APIKey: "real"}}, NoRetry: true})
	secret, vk, err := CreateKey(t.Context(), g.DB, "streamer", 0, 0, 0, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := g.WaitKeyIdle(t.Context(), vk.ID); err != nil {
		t.Fatalf("an unused key is not idle: %v", err)
	}
	body := `{"model": "claude-sonnet-4-5", "max_tokens": 400, "stream": true, "messages": [{"role": "user", "content": "Take your time."}]}`
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, g.URL+"/v1/messages", strings.NewReader(body))
	req.Header.Set("anthropic-version", "2023-06-01")
	req.Header.Set("x-api-key", secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	// Read until text arrives: the stream has output to charge.
	buf := make([]byte, 4096)
	var got strings.Builder
	for !strings.Contains(got.String(), "content_block_delta") {
		n, err := resp.Body.Read(buf)
		got.Write(buf[:n])
		if err != nil {
			t.Fatalf("the stream ended before any text: %v\n%s", err, got.String())
		}
	}
	short, stop := context.WithTimeout(t.Context(), 50*time.Millisecond)
	err = g.WaitKeyIdle(short, vk.ID)
	stop()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitKeyIdle with a stream in flight: %v, want the deadline", err)
	}
	if _, err := g.RevokeKey(t.Context(), vk.ID); err != nil {
		t.Fatal(err)
	}
	if err := g.WaitKeyIdle(t.Context(), vk.ID); err != nil {
		t.Fatal(err)
	}
	if err := g.Ledger.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	u, err := UsageOfKey(t.Context(), g.DB, vk.ID)
	if err != nil {
		t.Fatal(err)
	}
	if u.Requests != 1 || u.OutputTokens <= 0 || u.MicroUSD <= 0 {
		t.Errorf("usage of the revoked key right after WaitKeyIdle: %+v, want the cut stream's row with its output", u)
	}
}
