package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestMockllmServes runs `apiary mockllm` until its context is cancelled:
// the first stdout line names the address, the server answers with the
// configured limits, and cancelling shuts it down with exit 0.
func TestMockllmServes(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	pr, pw := io.Pipe()
	var stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		code := Main(ctx, []string{"mockllm", "--listen", "127.0.0.1:0", "--rpm", "5", "--format", "anthropic"}, strings.NewReader(""), pw, &stderr)
		pw.Close()
		done <- code
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("first line: %v", err)
	}
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on ")
	if !ok || !strings.HasPrefix(url, "http://127.0.0.1:") || strings.HasSuffix(url, ":0") {
		t.Fatalf("first line %q", line)
	}
	go io.Copy(io.Discard, pr)

	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	req, _ := http.NewRequestWithContext(t.Context(), "POST", url+"/v1/messages",
		strings.NewReader(`{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("x-api-key", "k")
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("anthropic-ratelimit-requests-limit") != "5" {
		t.Errorf("response %d %v", resp.StatusCode, resp.Header)
	}
	tr.CloseIdleConnections()
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("exit %d, stderr %s", code, stderr.String())
	}
}

func TestBenchLLMFake(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	code := Main(t.Context(), []string{"bench", "llmfake", "--duration", "300ms", "--concurrency", "4", "--json"},
		strings.NewReader(""), &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var res []struct {
		Phase    string  `json:"phase"`
		Stream   bool    `json:"stream"`
		Requests int64   `json:"requests"`
		Errors   int64   `json:"errors"`
		RPS      float64 `json:"req_per_s"`
		P50      int64   `json:"p50_ns"`
		P99      int64   `json:"p99_ns"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatalf("%v: %s", err, stdout.String())
	}
	if len(res) != 2 || res[0].Phase != "small" || !res[1].Stream {
		t.Fatalf("results %+v", res)
	}
	for _, r := range res {
		if r.Requests == 0 || r.Errors != 0 || r.RPS <= 0 || r.P50 <= 0 || r.P99 < r.P50 {
			t.Errorf("phase %+v", r)
		}
	}
	var stdout2 bytes.Buffer
	if code := Main(t.Context(), []string{"bench", "llmfake", "--phases", "warp"}, strings.NewReader(""), &stdout2, &stderr); code != exitUsage {
		t.Errorf("unknown phase: exit %d", code)
	}
}
