package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apiary-dev/apiary/internal/gateway"
	"github.com/apiary-dev/apiary/internal/llmapi"
	"github.com/apiary-dev/apiary/internal/llmfake"
)

// Scenario is one row of HIVEMIND's evaluation table.
type Scenario struct {
	Name     string  `json:"name"`
	Agents   int     `json:"agents"`
	Turns    int     `json:"turns"`
	RPM      int64   `json:"rpm"`
	TPM      int64   `json:"tpm"`
	Err502   float64 `json:"err_502_rate"`
	Reset    float64 `json:"reset_rate"`
	BaseMS   float64 `json:"base_ms"`
	JitterMS float64 `json:"jitter_ms"`
	Spike    float64 `json:"spike_rate"`
	UpConc   int     `json:"upstream_max_concurrency"` // 0: unlimited
	GwConc   int     `json:"gateway_max_concurrency"`
}

var Scenarios = []Scenario{
	{"micro-5", 5, 8, 50, 100_000, 0, 0, 80, 50, 0, 0, 5},
	{"micro-10", 10, 8, 50, 100_000, 0, 0, 80, 50, 0, 0, 5},
	{"micro-20", 20, 8, 50, 100_000, 0, 0, 80, 50, 0, 0, 5},
	{"micro-50", 50, 6, 50, 100_000, 0, 0, 80, 50, 0, 0, 5},
	{"replay-11", 11, 8, 60, 200_000, 0.08, 0.05, 120, 60, 0, 5, 5},
	{"stress", 20, 10, 20, 50_000, 0.10, 0.05, 200, 50, 0.1, 3, 3},
	{"latency-spike", 10, 10, 60, 100_000, 0, 0, 100, 30, 0.2, 0, 5},
}

// Variants are the stronger variants of the scenarios.
var Variants = []string{"base", "stream", "bucket", "resets", "cuts", "charged"}

// Ablations names the primitives a mode gateway-no-NAME turns off.
var Ablations = []string{"retry", "admission", "aimd", "ratelimit", "breaker"}

// ScenarioResult is one scenario run in one mode.
type ScenarioResult struct {
	Scenario     string  `json:"scenario"`
	Variant      string  `json:"variant"`
	Mode         string  `json:"mode"` // direct, gateway, gateway-no-<primitive>
	Agents       int     `json:"agents"`
	FailedAgents int     `json:"failed_agents"`
	FailureRate  float64 `json:"failure_rate"`
	Requests     int64   `json:"requests_ok"`
	WastedTokens int64   `json:"wasted_tokens"`
	WallS        float64 `json:"wall_s"`
	Throughput   float64 `json:"throughput_req_s"`
	Upstream429  int64   `json:"upstream_429"`
	Upstream5xx  int64   `json:"upstream_5xx"`
	Resets       int64   `json:"upstream_resets"`
	Cuts         int64   `json:"upstream_cuts"`
	Admitted     int64   `json:"upstream_admitted"` // attempts the upstream charged to the rate limit
	LowerBoundS  float64 `json:"lower_bound_s"`
	Ratio        float64 `json:"wall_over_bound"`
	TurnP50S     float64 `json:"turn_p50_s"`
	TurnP99S     float64 `json:"turn_p99_s"`
	TurnMaxS     float64 `json:"turn_max_s"`
	// Windows is the upstream's admitted requests in each rate-limit
	// window, oldest first (all agents share one key).
	Windows    []int64 `json:"windows,omitempty"`
	FirstError string  `json:"first_error,omitempty"`
}

// RunScenario runs one scenario in one mode (direct, gateway or
// gateway-no-PRIMITIVE) on a fresh llmfake (and a fresh gateway), with every
// duration multiplied by scale.
func RunScenario(ctx context.Context, sc Scenario, variant, mode string, scale float64, seed uint64, progress io.Writer) (ScenarioResult, error) {
	stream := variant == "stream" || variant == "cuts"
	ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	fcfg := llmfake.Config{
		Format:        llmfake.FormatAnthropic,
		MaxConcurrent: sc.UpConc,
		TimeScale:     scale,
		Limits:        llmfake.Limits{RPM: sc.RPM, TPM: sc.TPM, Window: llmfake.WindowFixed},
		// The scenarios' 502s and resets happen at the edge, in front of
		// the API's rate limiter (the "charged" variant counts them).
		Faults: llmfake.Faults{Edge: variant != "charged", ErrorRate: sc.Err502, ErrorStatuses: []int{502}, ResetRate: sc.Reset,
			Latency: ms(sc.BaseMS), Jitter: ms(sc.JitterMS), SpikeRate: sc.Spike, SpikeMult: 5},
		Output: llmfake.Output{TokensMean: 150, TokensStd: 50},
	}
	switch variant {
	case "bucket":
		fcfg.Limits.Window = llmfake.WindowBucket
	case "resets":
		fcfg.Faults.ResetRate = max(0.05, 2*sc.Reset)
	case "cuts":
		fcfg.Faults.CutRate = 0.05
	}
	fake, err := llmfake.New(fcfg, llmfake.Options{Seed: seed})
	if err != nil {
		return ScenarioResult{}, err
	}
	fl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return ScenarioResult{}, err
	}
	fsrv := llmfake.Serve(fl, fake)
	defer fsrv.Close()
	target := fsrv.URL
	if mode != "direct" {
		gcfg := gateway.Config{
			// The gateway learns the limits and their period from llmfake's
			// headers: nothing of them is configured.
			Upstreams: []gateway.Upstream{{Name: "anthropic", URL: fsrv.URL, Provider: llmapi.Anthropic, MaxConcurrency: sc.GwConc}},
			Logger:    slog.New(slog.DiscardHandler),
			// The gateway's own clocks run at the scenario's scale too.
			RetryBase:      scaled(250*time.Millisecond, scale),
			RetryCap:       scaled(20*time.Second, scale),
			MaxRetryWait:   scaled(2*time.Minute, scale),
			AIMDCooldown:   scaled(2*time.Second, scale),
			BreakerWindow:  scaled(30*time.Second, scale),
			BreakerOpenFor: scaled(5*time.Second, scale),
			BreakerMaxOpen: scaled(time.Minute, scale),
			KeepAlive:      scaled(5*time.Second, scale),
		}
		switch strings.TrimPrefix(mode, "gateway-no-") {
		case "retry":
			gcfg.NoRetry = true
		case "admission":
			gcfg.NoAdmission = true
		case "aimd":
			gcfg.NoAIMD = true
		case "ratelimit":
			gcfg.NoRateLimit = true
		case "breaker":
			gcfg.NoBreaker = true
		}
		g, err := gateway.New(ctx, gcfg)
		if err != nil {
			return ScenarioResult{}, err
		}
		gl, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return ScenarioResult{}, err
		}
		gsrv := &http.Server{Handler: g}
		go func() { _ = gsrv.Serve(gl) }()
		defer func() {
			_ = gsrv.Close()
			_ = g.Close()
		}()
		target = "http://" + gl.Addr().String()
	}

	timeout := max(5*time.Second, time.Duration(float64(120*time.Second)*scale))
	res := ScenarioResult{Scenario: sc.Name, Variant: variant, Mode: mode, Agents: sc.Agents}
	var (
		wg       sync.WaitGroup
		okReqs   atomic.Int64
		wasted   atomic.Int64
		failed   atomic.Int64
		mu       sync.Mutex
		firstErr string
		turns    []time.Duration
	)
	startT := time.Now()
	done := make(chan struct{})
	go func() { // progress
		t := time.NewTicker(10 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				fmt.Fprintf(progress, "bench gateway:   %s %s: %d/%d turns done, %d agents dead, %.0fs\n", sc.Name, mode,
					okReqs.Load(), int64(sc.Agents*sc.Turns), failed.Load(), time.Since(startT).Seconds())
			}
		}
	}()
	for a := range sc.Agents {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// A read timeout, as HIVEMIND's agents have: the answer must
			// start within it, and a stream must not go silent longer.
			tr := &http.Transport{MaxIdleConnsPerHost: 1, DisableCompression: true, ResponseHeaderTimeout: timeout}
			defer tr.CloseIdleConnections()
			client := &http.Client{Transport: tr}
			var spent int64
			for range sc.Turns {
				t0 := time.Now()
				u, err := mockTurn(ctx, client, target, fmt.Sprintf("agent-%d", a), stream, timeout)
				mu.Lock()
				turns = append(turns, time.Since(t0))
				mu.Unlock()
				if err != nil {
					failed.Add(1)
					wasted.Add(spent)
					mu.Lock()
					if firstErr == "" {
						firstErr = err.Error()
					}
					mu.Unlock()
					return
				}
				spent += u.TotalInput() + u.OutputTokens
				okReqs.Add(1)
			}
		}()
	}
	wg.Wait()
	close(done)
	wall := time.Since(startT)
	st := fake.Stats()
	res.FailedAgents = int(failed.Load())
	res.FailureRate = float64(res.FailedAgents) / float64(sc.Agents)
	res.Requests = okReqs.Load()
	res.WastedTokens = wasted.Load()
	res.WallS = wall.Seconds()
	res.Throughput = float64(res.Requests) / wall.Seconds()
	res.Upstream429 = st.Total.RateLimited
	res.Upstream5xx = st.Total.ServerErrors
	res.Resets = st.Total.Resets
	res.Cuts = st.Total.Cuts
	res.FirstError = firstErr
	for _, ks := range st.Keys {
		for _, w := range ks.Windows {
			res.Windows = append(res.Windows, w.Requests)
			res.Admitted += w.Requests
		}
	}
	window := time.Duration(float64(time.Minute) * scale)
	// The expected latency of one attempt: no client can make the
	// upstream answer faster.
	meanLat := (sc.BaseMS + sc.JitterMS/2) * (1 + sc.Spike*4)
	res.LowerBoundS = lowerBound(sc, res.Admitted, window, ms(meanLat), scale, fcfg.Limits.Window).Seconds()
	res.Ratio = res.WallS / res.LowerBoundS
	if len(turns) > 0 {
		slices.Sort(turns)
		q := func(p float64) float64 { return turns[min(len(turns)-1, int(p*float64(len(turns))))].Seconds() }
		res.TurnP50S, res.TurnP99S, res.TurnMaxS = q(0.5), q(0.99), turns[len(turns)-1].Seconds()
	}
	return res, nil
}

func scaled(d time.Duration, scale float64) time.Duration {
	return max(time.Millisecond, time.Duration(float64(d)*scale))
}

// lowerBound is the least wall time any client could need: the admitted
// attempts cannot outrun the rate limit, and no agent can finish its turns
// faster than turns × the upstream's mean latency (base).
func lowerBound(sc Scenario, admitted int64, window, base time.Duration, scale float64, kind llmfake.Window) time.Duration {
	base = time.Duration(float64(base) * scale)
	chain := time.Duration(sc.Turns) * base
	var rate time.Duration
	if sc.RPM > 0 && admitted > 0 {
		if kind == llmfake.WindowBucket {
			// A full bucket of RPM, refilled continuously.
			extra := max(0, admitted-sc.RPM)
			rate = time.Duration(float64(extra)/float64(sc.RPM)*float64(window)) + base
		} else {
			windows := int64(math.Ceil(float64(admitted)/float64(sc.RPM))) - 1
			rate = time.Duration(windows)*window + base
		}
	}
	return max(chain, rate)
}

// mockTurn is one agent turn: one request, no retry. It fails on any error
// status, transport error, or a stream that does not end with message_stop.
func mockTurn(ctx context.Context, c *http.Client, target, agent string, stream bool, readTimeout time.Duration) (llmapi.Usage, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	body := fmt.Sprintf(`{"model":"claude-sonnet-4-5","max_tokens":1024,"stream":%v,"messages":[{"role":"user","content":%q}]}`, stream, benchMessage)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target+"/v1/messages", strings.NewReader(body))
	if err != nil {
		return llmapi.Usage{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Api-Key", "bench-shared-key")
	req.Header.Set("Anthropic-Version", "2023-06-01")
	req.Header.Set("X-Apiary-Agent", agent)
	resp, err := c.Do(req)
	if err != nil {
		return llmapi.Usage{}, err
	}
	defer resp.Body.Close()
	idle := time.AfterFunc(readTimeout, cancel)
	b, err := io.ReadAll(&idleReader{r: resp.Body, t: idle, d: readTimeout})
	idle.Stop()
	if err != nil {
		return llmapi.Usage{}, fmt.Errorf("reading body (read timeout %v): %w", readTimeout, err)
	}
	if resp.StatusCode != http.StatusOK {
		return llmapi.Usage{}, fmt.Errorf("status %d: %s", resp.StatusCode, bytes.TrimSpace(b[:min(len(b), 200)]))
	}
	if !stream {
		var m struct {
			Usage *json.RawMessage `json:"usage"`
		}
		if json.Unmarshal(b, &m) != nil || m.Usage == nil {
			return llmapi.Usage{}, errors.New("response without usage")
		}
		return llmapi.UsageFromJSON(llmapi.Anthropic, llmapi.EndpointMessages, b)
	}
	meter := llmapi.NewStreamMeter(llmapi.RequestInfo{Provider: llmapi.Anthropic, Endpoint: llmapi.EndpointMessages, Stream: true, Framing: llmapi.FramingSSE})
	meter.Feed(b)
	r := meter.Finish(true)
	if r.Outcome != llmapi.OutcomeComplete {
		return llmapi.Usage{}, fmt.Errorf("stream %s: %s %s", r.Outcome, r.ErrorType, r.ErrorMessage)
	}
	return r.Usage, nil
}
