package llmfake

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  Config
		want string // "" = valid
	}{
		{"zero", Config{}, ""},
		{"full", Config{Format: FormatGemini, Limits: Limits{RPM: 5, Window: WindowBucket}, Faults: Faults{ResetRate: 0.5, ErrorRate: 0.5}}, ""},
		{"format", Config{Format: "grpc"}, "format"},
		{"window", Config{Limits: Limits{Window: "sliding"}}, "limits.window"},
		{"rate", Config{Faults: Faults{CutRate: 1.5}}, "faults.cut_rate"},
		{"nan rate", Config{Faults: Faults{SpikeRate: nanFloat()}}, "faults.spike_rate"},
		{"sum", Config{Faults: Faults{ResetRate: 0.6, ErrorRate: 0.6}}, "reset_rate + error_rate"},
		{"status", Config{Faults: Faults{ErrorStatuses: []int{429}}}, "error_statuses"},
		{"negative rpm", Config{Limits: Limits{RPM: -1}}, "limits.rpm"},
		{"negative latency", Config{Faults: Faults{Latency: -time.Second}}, "faults.latency"},
		{"time scale", Config{TimeScale: -1}, "time_scale"},
	}
	for _, tt := range tests {
		err := tt.cfg.Validate()
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case tt.want != "" && (err == nil || !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: error %v, want one about %s", tt.name, err, tt.want)
		}
		if _, nerr := New(tt.cfg, Options{}); (nerr == nil) != (tt.want == "") {
			t.Errorf("%s: New error %v", tt.name, nerr)
		}
	}
}

func nanFloat() float64 {
	var z float64
	return z / z
}

func TestControlEndpoints(t *testing.T) {
	t.Parallel()
	s := newServer(t, Config{})
	if w := do(t, s, "GET", "/_health", ""); w.Code != 200 || !strings.Contains(w.Body.String(), `"ok"`) {
		t.Errorf("health %d %s", w.Code, w.Body)
	}
	do(t, s, "POST", "/v1/messages", anthSmall, "x-api-key", "a")
	var st Stats
	w := do(t, s, "GET", "/_stats", "")
	if err := json.Unmarshal(w.Body.Bytes(), &st); err != nil || st.Total.Requests != 1 || st.Keys["a"].TokensOut != defaultTokensMean {
		t.Fatalf("stats %s (%v)", w.Body, err)
	}
	// A live patch: durations as strings, merge with the current config.
	w = do(t, s, "POST", "/_config", `{"limits":{"rpm":1,"window_length":"2s"},"faults":{"latency":"5ms"}}`)
	if w.Code != 200 {
		t.Fatalf("config %d %s", w.Code, w.Body)
	}
	cfg := s.Config()
	if cfg.Limits.RPM != 1 || cfg.Limits.WindowLength != 2*time.Second || cfg.Faults.Latency != 5*time.Millisecond {
		t.Errorf("config after patch %+v", cfg)
	}
	do(t, s, "POST", "/_config", `{"faults":{"latency":"0s"}}`)
	if cfg := s.Config(); cfg.Limits.RPM != 1 || cfg.Faults.Latency != 0 {
		t.Errorf("second patch lost fields: %+v", cfg)
	}
	do(t, s, "POST", "/v1/messages", anthSmall, "x-api-key", "a")
	if w := do(t, s, "POST", "/v1/messages", anthSmall, "x-api-key", "a"); w.Code != 429 {
		t.Errorf("patched limit not applied: %d", w.Code)
	}
	for _, bad := range []string{`{"limits":{"rpm":-3}}`, `{"nope":1}`, `{"faults":{"latencyy":"1s"}}`, `{"faults":{"latency":"soon"}}`, `[`} {
		if w := do(t, s, "POST", "/_config", bad); w.Code != 400 {
			t.Errorf("patch %s: %d", bad, w.Code)
		}
	}
	if s.Config().Limits.RPM != 1 {
		t.Error("a rejected patch changed the config")
	}
	if w := do(t, s, "POST", "/_reset", ""); w.Code != 200 {
		t.Errorf("reset %d", w.Code)
	}
	if st := s.Stats(); st.Total.Requests != 0 || len(st.Keys) != 0 {
		t.Errorf("after reset %+v", st)
	}
	if w := do(t, s, "POST", "/v1/messages", anthSmall, "x-api-key", "a"); w.Code != 200 {
		t.Errorf("after reset the limit should be fresh: %d", w.Code)
	}
	if w := do(t, s, "GET", "/_nope", ""); w.Code != 404 {
		t.Errorf("unknown control endpoint %d", w.Code)
	}
	if w := do(t, s, "DELETE", "/_stats", ""); w.Code != 405 {
		t.Errorf("wrong method %d", w.Code)
	}
}

func TestServeCloseWaitsForHandlers(t *testing.T) {
	t.Parallel()
	s := newServer(t, Config{Faults: Faults{Latency: time.Hour}})
	hs := startHTTP(t, s)
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	errc := make(chan error, 1)
	go func() {
		resp, err := (&http.Client{Transport: tr}).Post(hs.URL+"/v1/messages", "application/json", strings.NewReader(anthSmall))
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	for s.Stats().InFlight == 0 {
		time.Sleep(time.Millisecond) // polling a condition, not a timing assumption
	}
	if err := hs.Close(); err != nil {
		t.Fatal(err)
	}
	// Close returned only after the handler did: nothing is in flight.
	if st := s.Stats(); st.InFlight != 0 || st.Total.Requests != 1 {
		t.Errorf("after Close: %+v", st)
	}
	if err := <-errc; err == nil {
		t.Error("the cancelled request succeeded")
	}
}
