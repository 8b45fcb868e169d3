package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
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
	"text/tabwriter"
	"time"

	"github.com/apiary-dev/apiary/internal/gateway"
	"github.com/apiary-dev/apiary/internal/llmapi"
	"github.com/apiary-dev/apiary/internal/llmfake"
)

// gwScenario is one row of HIVEMIND's evaluation table (issue 3).
type gwScenario struct {
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

var gwScenarios = []gwScenario{
	{"micro-5", 5, 8, 50, 100_000, 0, 0, 80, 50, 0, 0, 5},
	{"micro-10", 10, 8, 50, 100_000, 0, 0, 80, 50, 0, 0, 5},
	{"micro-20", 20, 8, 50, 100_000, 0, 0, 80, 50, 0, 0, 5},
	{"micro-50", 50, 6, 50, 100_000, 0, 0, 80, 50, 0, 0, 5},
	{"replay-11", 11, 8, 60, 200_000, 0.08, 0.05, 120, 60, 0, 5, 5},
	{"stress", 20, 10, 20, 50_000, 0.10, 0.05, 200, 50, 0.1, 3, 3},
	{"latency-spike", 10, 10, 60, 100_000, 0, 0, 100, 30, 0.2, 0, 5},
}

// gwVariants are the stronger variants of the scenarios.
var gwVariants = []string{"base", "stream", "bucket", "resets", "cuts", "charged"}

// ablations names the primitive each --ablate value turns off.
var ablations = []string{"retry", "admission", "aimd", "ratelimit", "breaker"}

// benchGWResult is one scenario run in one mode.
type benchGWResult struct {
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

func benchGatewayCommand() *command {
	return &command{
		name:    "gateway",
		summary: "reproduce HIVEMIND's evaluation: agents on a shared rate limit, direct and through the gateway",
		help: `gateway runs each scenario of HIVEMIND's evaluation (issue 3's table) twice on a
fresh in-process llmfake: once with the mock agents talking to it directly and
once through an in-process gateway. Mock agents make sequential turns (a
200-character message, max_tokens 1024, output ~ N(150, 50)), use no client-side
retry, have a 120 s read timeout and die on their first unrecovered error.
llmfake counts fixed 60-second windows per API key; all agents share one key.

For each run it reports the agent failure rate, the tokens of agents that died,
wall time, throughput, the upstream's 429/5xx/reset/cut counts, and the
rate-limit lower bound on wall time: the last of the A admitted attempts (every
attempt the upstream charged, including ones that then failed by an injected
fault, which no client can avoid) cannot start before the start of window
ceil(A/RPM), nor can an agent finish its turns faster than turns × the
upstream's mean latency.

--time-scale shrinks every duration (windows, latencies, the read timeout) so
the suite runs quickly; 1 is the evaluation's real time. Variants: stream
(streaming requests), bucket (continuous token buckets with Anthropic's
headers), resets (twice the TCP-reset rate, at least 5%), cuts (streaming, 5% of
streams cut mid-way). --ablate turns exactly one gateway primitive off.`,
		setup: func(fs *flag.FlagSet) runFunc {
			names := fs.String("scenario", "all", "comma-separated scenario `NAMES` (micro-5, micro-10, micro-20, micro-50, replay-11, stress, latency-spike) or all")
			variants := fs.String("variant", "base", "comma-separated `VARIANTS`: base, stream, bucket, resets, cuts, or all")
			ablate := fs.String("ablate", "", "also run the gateway with one `PRIMITIVE` off: retry, admission, aimd, ratelimit or breaker")
			scale := fs.Float64("time-scale", 1, "`FACTOR` applied to every duration; 0.1 runs a 60 s window in 6 s")
			noDirect := fs.Bool("no-direct", false, "skip the direct runs")
			seed := fs.Uint64("seed", 1, "llmfake's `SEED`")
			asJSON := fs.Bool("json", false, "print the results as JSON")
			return func(ctx context.Context, e *env, args []string) error {
				if err := noArgs(args); err != nil {
					return err
				}
				scs, err := selectScenarios(*names)
				if err != nil {
					return err
				}
				vs := strings.Split(*variants, ",")
				if *variants == "all" {
					vs = gwVariants
				}
				for _, v := range vs {
					if !slices.Contains(gwVariants, v) {
						return usagef("--variant %q: want %s or all", v, strings.Join(gwVariants, ", "))
					}
				}
				if *ablate != "" && !slices.Contains(ablations, *ablate) {
					return usagef("--ablate %q: want %s", *ablate, strings.Join(ablations, ", "))
				}
				if *scale <= 0 || *scale > 1 {
					return usagef("--time-scale must be in (0, 1]")
				}
				modes := []string{"gateway"}
				if !*noDirect {
					modes = append([]string{"direct"}, modes...)
				}
				if *ablate != "" {
					modes = append(modes, "gateway-no-"+*ablate)
				}
				var results []benchGWResult
				for _, v := range vs {
					for _, sc := range scs {
						for _, mode := range modes {
							fmt.Fprintf(e.stderr, "bench gateway: %s/%s %s ...\n", sc.Name, v, mode)
							r, err := runGWScenario(ctx, sc, v, mode, *scale, *seed, e.stderr)
							if err != nil {
								return err
							}
							fmt.Fprintf(e.stderr, "bench gateway: %s/%s %s: %d/%d agents failed, wall %.1fs (bound %.1fs, ×%.3f)\n",
								sc.Name, v, mode, r.FailedAgents, r.Agents, r.WallS, r.LowerBoundS, r.Ratio)
							results = append(results, r)
						}
					}
				}
				if *asJSON {
					return writeJSON(e.stdout, results)
				}
				printGWResults(e.stdout, results)
				return nil
			}
		},
	}
}

func selectScenarios(names string) ([]gwScenario, error) {
	if names == "all" {
		return gwScenarios, nil
	}
	var out []gwScenario
	for _, n := range strings.Split(names, ",") {
		i := slices.IndexFunc(gwScenarios, func(s gwScenario) bool { return s.Name == n })
		if i < 0 {
			return nil, usagef("--scenario %q: unknown scenario", n)
		}
		out = append(out, gwScenarios[i])
	}
	return out, nil
}

func printGWResults(w io.Writer, rs []benchGWResult) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SCENARIO\tVARIANT\tMODE\tFAILED\tWASTED TOK\tWALL s\tREQ/s\t429\t5XX\tRESETS\tCUTS\tBOUND s\tWALL/BOUND")
	for _, r := range rs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d/%d (%.0f%%)\t%d\t%.1f\t%.2f\t%d\t%d\t%d\t%d\t%.1f\t%.3f\n", r.Scenario, r.Variant, r.Mode,
			r.FailedAgents, r.Agents, 100*r.FailureRate, r.WastedTokens, r.WallS, r.Throughput, r.Upstream429, r.Upstream5xx, r.Resets, r.Cuts, r.LowerBoundS, r.Ratio)
	}
	tw.Flush()
}

// benchMessage is the mock agents' 200-character user message.
var benchMessage = strings.Repeat("Please review this change and say what to do next. ", 4)[:200]

// runGWScenario runs one scenario in one mode on a fresh llmfake (and a fresh
// gateway).
func runGWScenario(ctx context.Context, sc gwScenario, variant, mode string, scale float64, seed uint64, progress io.Writer) (benchGWResult, error) {
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
		return benchGWResult{}, err
	}
	fl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return benchGWResult{}, err
	}
	fsrv := llmfake.Serve(fl, fake)
	defer fsrv.Close()
	target := fsrv.URL
	if mode != "direct" {
		gcfg := gateway.Config{
			// The gateway learns the limits from llmfake's headers; only the
			// window length is given, because time is scaled.
			Upstreams: []gateway.Upstream{{Name: "anthropic", URL: fsrv.URL, Provider: llmapi.Anthropic, MaxConcurrency: sc.GwConc,
				Window: time.Duration(float64(time.Minute) * scale)}},
			Logger: slog.New(slog.DiscardHandler),
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
			return benchGWResult{}, err
		}
		gl, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return benchGWResult{}, err
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
	res := benchGWResult{Scenario: sc.Name, Variant: variant, Mode: mode, Agents: sc.Agents}
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
	res.LowerBoundS = gwLowerBound(sc, res.Admitted, window, ms(meanLat), scale, fcfg.Limits.Window).Seconds()
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

// gwLowerBound is the least wall time any client could need: the admitted
// attempts cannot outrun the rate limit, and no agent can finish its turns
// faster than turns × the upstream's mean latency (base).
func gwLowerBound(sc gwScenario, admitted int64, window, base time.Duration, scale float64, kind llmfake.Window) time.Duration {
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

// idleReader restarts t (which cancels the request) whenever bytes arrive:
// a read timeout, not a deadline on the whole answer.
type idleReader struct {
	r io.Reader
	t *time.Timer
	d time.Duration
}

func (ir *idleReader) Read(p []byte) (int, error) {
	n, err := ir.r.Read(p)
	if n > 0 {
		ir.t.Reset(ir.d)
	}
	return n, err
}
