package llmfake

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/apiary-dev/apiary/internal/sse"
)

func TestFaultDraws(t *testing.T) {
	t.Parallel()
	cfg := Config{Faults: Faults{ResetRate: 0.05, ErrorRate: 0.1, EmptyBodyRate: 0.05, CutRate: 0.1, StreamErrorRate: 0.2,
		SpikeRate: 0.3, SlowFirstByteRate: 0.25, SlowFirstByte: time.Second, Latency: 100 * time.Millisecond, Jitter: 50 * time.Millisecond}}
	s := newServer(t, cfg)
	const n = 20000
	var reset, errs, empty, cut, streamErr, spike, slow int
	statuses := map[int]int{}
	for range n {
		p := s.draw(&cfg)
		switch p.pre {
		case 1:
			reset++
		case 2:
			errs++
			statuses[p.status]++
		case 3:
			empty++
		}
		switch p.stream {
		case 1:
			cut++
		case 2:
			streamErr++
		}
		if p.latency >= 500*time.Millisecond {
			spike++
		} else if p.latency < 100*time.Millisecond || p.latency >= 150*time.Millisecond {
			t.Fatalf("latency %v outside [100ms, 150ms)", p.latency)
		}
		if p.slow == time.Second {
			slow++
		}
	}
	within := func(name string, got int, p float64) {
		t.Helper()
		want := p * n
		if float64(got) < 0.85*want || float64(got) > 1.15*want {
			t.Errorf("%s: %d of %d, want about %.0f", name, got, n, want)
		}
	}
	within("reset", reset, 0.05)
	within("error", errs, 0.1)
	within("empty 502", empty, 0.05)
	within("cut", cut, 0.1)
	within("stream error", streamErr, 0.2)
	within("spike", spike, 0.3)
	within("slow first byte", slow, 0.25)
	for _, st := range []int{500, 502, 503} {
		within("status "+http.StatusText(st), statuses[st], 0.1/3)
	}
}

func TestFaultsReproducible(t *testing.T) {
	t.Parallel()
	cfg := Config{Faults: Faults{ErrorRate: 0.3, Jitter: time.Second}}
	seq := func(seed uint64) []plan {
		s, _ := New(cfg, Options{Seed: seed})
		var out []plan
		for range 50 {
			out = append(out, s.draw(&cfg))
		}
		return out
	}
	a, b, c := seq(7), seq(7), seq(8)
	if !equalPlans(a, b) {
		t.Error("same seed, different faults")
	}
	if equalPlans(a, c) {
		t.Error("different seeds, same faults")
	}
}

func equalPlans(a, b []plan) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return len(a) == len(b)
}

func TestInjectedErrors(t *testing.T) {
	t.Parallel()
	for _, st := range []int{500, 502, 503} {
		s := newServer(t, Config{Faults: Faults{ErrorRate: 1, ErrorStatuses: []int{st}}})
		w := do(t, s, "POST", "/v1/messages", anthSmall)
		m := decode(t, w.Body.String())
		if w.Code != st || m["type"] != "error" || path(m, "error", "message") == "" {
			t.Errorf("%d: got %d %s", st, w.Code, w.Body)
		}
		w = do(t, s, "POST", "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"x"}]}`)
		if w.Code != st || path(decode(t, w.Body.String()), "error", "message") == "" {
			t.Errorf("openai %d: got %d %s", st, w.Code, w.Body)
		}
	}
	s := newServer(t, Config{Faults: Faults{EmptyBodyRate: 1}})
	w := do(t, s, "POST", "/v1/messages", anthSmall)
	if w.Code != 502 || w.Body.Len() != 0 {
		t.Errorf("empty 502: %d %q", w.Code, w.Body)
	}
	if st := s.Stats().Total; st.ServerErrors != 1 || st.ByStatus["502"] != 1 || st.TokensIn != 3 {
		t.Errorf("stats %+v", st)
	}
}

func TestResetIsECONNRESET(t *testing.T) {
	t.Parallel()
	s := newServer(t, Config{Faults: Faults{ResetRate: 1}})
	hs := startHTTP(t, s)
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	req, _ := http.NewRequestWithContext(t.Context(), "POST", hs.URL+"/v1/messages", strings.NewReader(anthSmall))
	resp, err := client.Do(req)
	if err == nil {
		resp.Body.Close()
		t.Fatalf("got a response %d", resp.StatusCode)
	}
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("error %v is not ECONNRESET", err)
	}
	if st := s.Stats().Total; st.Resets != 1 || st.Requests != 1 {
		t.Errorf("stats %+v", st)
	}
}

func TestCutStream(t *testing.T) {
	t.Parallel()
	s := newServer(t, Config{Faults: Faults{CutRate: 1, AfterEvents: 3}})
	hs := startHTTP(t, s)
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	body := strings.Replace(anthSmall, `"max_tokens":100`, `"max_tokens":100,"stream":true`, 1)
	resp, err := client.Post(hs.URL+"/v1/messages", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	r := sse.NewReader(resp.Body)
	var types []string
	for {
		ev, err := r.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				t.Fatalf("stream ended cleanly after %v", types)
			}
			break // truncated: unexpected EOF from the chunked body
		}
		types = append(types, ev.Type)
	}
	if strings.Join(types, ",") != "message_start,content_block_start,ping" {
		t.Errorf("events before the cut: %v", types)
	}
	// A cut non-streaming body is short.
	resp2, err := client.Post(hs.URL+"/v1/messages", "application/json", strings.NewReader(anthSmall))
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.ReadAll(resp2.Body)
	resp2.Body.Close()
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("cut body read: %v", err)
	}
	if st := s.Stats().Total; st.Cuts != 2 {
		t.Errorf("cuts %d", st.Cuts)
	}
}

func TestStreamErrorEvent(t *testing.T) {
	t.Parallel()
	s := newServer(t, Config{Faults: Faults{StreamErrorRate: 1, AfterEvents: 2}})
	body := strings.Replace(anthSmall, `"max_tokens":100`, `"max_tokens":100,"stream":true`, 1)
	w := do(t, s, "POST", "/v1/messages", body)
	evs := events(t, w.Body.String())
	if w.Code != 200 || len(evs) != 3 || evs[2].Type != "error" || path(decode(t, evs[2].Data), "error", "type") != "overloaded_error" {
		t.Fatalf("%d %v", w.Code, evs)
	}
	if s.Stats().Total.StreamErrors != 1 {
		t.Error("stream error not counted")
	}
}

// timedWriter records when the headers and the first body byte were sent.
type timedWriter struct {
	*httptest.ResponseRecorder
	headerAt, bodyAt time.Time
}

func (w *timedWriter) WriteHeader(code int) {
	if w.headerAt.IsZero() {
		w.headerAt = time.Now()
	}
	w.ResponseRecorder.WriteHeader(code)
}

func (w *timedWriter) Write(b []byte) (int, error) {
	if w.headerAt.IsZero() {
		w.headerAt = time.Now()
	}
	if w.bodyAt.IsZero() {
		w.bodyAt = time.Now()
	}
	return w.ResponseRecorder.Write(b)
}

func TestLatency(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name              string
		faults            Faults
		scale             float64
		header, firstByte time.Duration // after the request
	}{
		{"base", Faults{Latency: 80 * time.Millisecond}, 0, 80 * time.Millisecond, 80 * time.Millisecond},
		{"spike", Faults{Latency: 80 * time.Millisecond, SpikeRate: 1}, 0, 400 * time.Millisecond, 400 * time.Millisecond},
		{"spike x3 scaled", Faults{Latency: 80 * time.Millisecond, SpikeRate: 1, SpikeMult: 3}, 0.5, 120 * time.Millisecond, 120 * time.Millisecond},
		{"slow first byte", Faults{Latency: 10 * time.Millisecond, SlowFirstByteRate: 1, SlowFirstByte: time.Second}, 0, 10 * time.Millisecond, 1010 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				s := newServer(t, Config{Faults: tt.faults, TimeScale: tt.scale})
				w := &timedWriter{ResponseRecorder: httptest.NewRecorder()}
				start := time.Now()
				s.ServeHTTP(w, httptest.NewRequest("POST", "/v1/messages", strings.NewReader(anthSmall)))
				if w.Code != 200 || w.headerAt.Sub(start) != tt.header || w.bodyAt.Sub(start) != tt.firstByte {
					t.Errorf("status %d, headers after %v, body after %v; want %v, %v", w.Code,
						w.headerAt.Sub(start), w.bodyAt.Sub(start), tt.header, tt.firstByte)
				}
			})
		})
	}
	t.Run("jitter", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			s := newServer(t, Config{Faults: Faults{Latency: 100 * time.Millisecond, Jitter: 50 * time.Millisecond}})
			seen := map[time.Duration]bool{}
			for range 20 {
				start := time.Now()
				do(t, s, "POST", "/v1/messages", anthSmall)
				d := time.Since(start)
				if d < 100*time.Millisecond || d >= 150*time.Millisecond {
					t.Errorf("latency %v outside [100ms, 150ms)", d)
				}
				seen[d] = true
			}
			if len(seen) < 10 {
				t.Errorf("jitter gave only %d distinct latencies", len(seen))
			}
		})
	})
}

func TestConcurrencyCap(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		s := newServer(t, Config{MaxConcurrent: 2, Faults: Faults{Latency: time.Second}})
		var wg sync.WaitGroup
		codes := make([]int, 2)
		for i := range 2 {
			wg.Go(func() { codes[i] = do(t, s, "POST", "/v1/messages", anthSmall).Code })
		}
		synctest.Wait() // both sleep in their latency
		w := do(t, s, "POST", "/v1/messages", anthSmall)
		if w.Code != 529 || path(decode(t, w.Body.String()), "error", "type") != "overloaded_error" {
			t.Errorf("third request: %d %s", w.Code, w.Body)
		}
		if w := do(t, s, "POST", "/api/chat", `{"model":"l","messages":[]}`); w.Code != 503 {
			t.Errorf("ollama over capacity: %d", w.Code)
		}
		wg.Wait()
		if codes[0] != 200 || codes[1] != 200 {
			t.Errorf("admitted requests: %v", codes)
		}
		st := s.Stats()
		if st.MaxInFlight != 2 || st.InFlight != 0 || st.Total.Overloaded != 2 || st.Total.ByStatus["529"] != 1 {
			t.Errorf("stats %+v", st)
		}
	})
}

func TestClientGoneDuringLatency(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		s := newServer(t, Config{Faults: Faults{Latency: time.Hour}})
		ctx, cancel := context.WithCancel(t.Context())
		req := httptest.NewRequestWithContext(ctx, "POST", "/v1/messages", strings.NewReader(anthSmall))
		done := make(chan struct{})
		go func() {
			s.ServeHTTP(httptest.NewRecorder(), req)
			close(done)
		}()
		synctest.Wait()
		cancel()
		<-done
		if st := s.Stats(); st.InFlight != 0 || st.Total.Requests != 1 || st.Total.TokensOut != 0 {
			t.Errorf("stats %+v", st)
		}
	})
}

// TestFaultsObservedByClients mixes faults over real connections: what a
// client sees must match the server's counts and the configured rates.
func TestFaultsObservedByClients(t *testing.T) {
	t.Parallel()
	s := newServer(t, Config{Faults: Faults{ResetRate: 0.1, ErrorRate: 0.1, ErrorStatuses: []int{502}, CutRate: 0.1}})
	hs := startHTTP(t, s)
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	body := strings.Replace(anthSmall, `"max_tokens":100`, `"max_tokens":100,"stream":true`, 1)
	const n = 300
	var resets, bad, cuts, ok int
	for range n {
		resp, err := client.Post(hs.URL+"/v1/messages", "application/json", strings.NewReader(body))
		if err != nil {
			if !errors.Is(err, syscall.ECONNRESET) {
				t.Fatalf("request error %v", err)
			}
			resets++
			continue
		}
		data, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		switch {
		case resp.StatusCode == 502:
			bad++
		case err != nil:
			cuts++
		case strings.HasSuffix(string(data), "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"):
			ok++
		default:
			t.Fatalf("unexpected response %d %q", resp.StatusCode, data)
		}
	}
	st := s.Stats().Total
	if int(st.Resets) != resets || int(st.ByStatus["502"]) != bad || int(st.Cuts) != cuts || int(st.ByStatus["200"]) != ok+cuts {
		t.Errorf("client saw resets %d, 502 %d, cuts %d, ok %d; server counted %+v", resets, bad, cuts, ok, st)
	}
	for name, got := range map[string]int{"resets": resets, "502s": bad, "cuts": cuts} {
		if got < 10 || got > 60 {
			t.Errorf("%s: %d of %d, want about 30", name, got, n)
		}
	}
}

// TestEdgeFaults: faults at the edge carry no rate-limit headers and are
// charged to no limit.
func TestEdgeFaults(t *testing.T) {
	t.Parallel()
	s, err := New(Config{Limits: Limits{RPM: 5}, Faults: Faults{Edge: true, ErrorRate: 1, ErrorStatuses: []int{502}}}, Options{Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	for range 8 {
		w := httptest.NewRecorder()
		r := httptest.NewRequest("POST", "/v1/messages", strings.NewReader(`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`))
		r.Header.Set("x-api-key", "k")
		s.ServeHTTP(w, r)
		if w.Code != 502 || w.Header().Get("anthropic-ratelimit-requests-remaining") != "" {
			t.Fatalf("status %d, headers %v", w.Code, w.Header())
		}
	}
	ks := s.Stats().Keys["k"]
	for _, win := range ks.Windows {
		if win.Requests != 0 {
			t.Errorf("window %+v charged edge faults", win)
		}
	}
}
