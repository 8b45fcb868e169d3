package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apiary-dev/apiary/internal/gateway"
	"github.com/apiary-dev/apiary/internal/llmapi"
)

// ZooOptions configures a zoo run.
type ZooOptions struct {
	Seeds []uint64
	// Timeout is the agents' read timeout (default 60 s): an answer must
	// start within it, and a stream must not go silent longer.
	Timeout time.Duration
	// Parallel seeds run at once (default 8); each has its own upstream
	// and gateway.
	Parallel int
	// Direct runs the agents against the upstream itself, for comparison.
	Direct bool
	// Lead, in (0, 1), starts every seed's agents this far through a
	// window instead of at the seed's own lead (0: the seed's own), to
	// sweep the length of the first window.
	Lead     float64
	Progress io.Writer
	// Logger receives the gateways' logs (nil: discarded).
	Logger *slog.Logger
}

// ZooResult is one seed's run.
type ZooResult struct {
	Model  ZooModel `json:"model"`
	Mode   string   `json:"mode"` // gateway or direct
	Agents int      `json:"agents"`
	Turns  int      `json:"turns"`
	Stream bool     `json:"stream"`
	// Fits says the load fits the limit within the agents' timeout: each
	// agent's turn, waiting its share of windows, starts within it.
	Fits     bool     `json:"fits"`
	Dead     int      `json:"dead"`
	Requests int64    `json:"requests_ok"`
	Upstream ZooStats `json:"upstream"`
	WallS    float64  `json:"wall_s"`
	BoundS   float64  `json:"bound_s"`
	Ratio    float64  `json:"wall_over_bound"`
	// MaxTurnS bounds the longest pacing wait: a turn's whole time.
	MaxTurnS   float64 `json:"max_turn_s"`
	FirstError string  `json:"first_error,omitempty"`
	// Windows are, for fixed windows, the requests the upstream admitted in
	// each window from the one the run started in; BoundWindows are the
	// oracle's. Where they part is where the run lost time to the bound.
	Windows      []int64 `json:"windows,omitempty"`
	BoundWindows []int64 `json:"bound_windows,omitempty"`
}

// RateLimitedShare is the upstream's 429s per successful request.
func (r ZooResult) RateLimitedShare() float64 {
	if r.Requests == 0 {
		return 0
	}
	return float64(r.Upstream.RateLimited) / float64(r.Requests)
}

// RunZoo runs every seed and returns the results in seed order.
func RunZoo(ctx context.Context, o ZooOptions) ([]ZooResult, error) {
	if o.Timeout <= 0 {
		o.Timeout = time.Minute
	}
	if o.Parallel <= 0 {
		o.Parallel = 8
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	modes := []string{"gateway"}
	if o.Direct {
		modes = append(modes, "direct")
	}
	type job struct {
		i    int
		seed uint64
		mode string
	}
	var jobs []job
	for _, s := range o.Seeds {
		for _, m := range modes {
			jobs = append(jobs, job{len(jobs), s, m})
		}
	}
	res := make([]ZooResult, len(jobs))
	errs := make([]error, len(jobs))
	sem := make(chan struct{}, o.Parallel)
	var wg sync.WaitGroup
	var done atomic.Int64
	for _, j := range jobs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			res[j.i], errs[j.i] = runZooSeed(ctx, j.seed, j.mode, o.Lead, o.Timeout, o.Logger)
			n := done.Add(1)
			if o.Progress != nil {
				r := res[j.i]
				fmt.Fprintf(o.Progress, "bench zoo: [%d/%d] seed %d %s (%s): %d/%d dead, wall %.1fs, bound %.1fs (×%.3f), %d 429s, fits %v\n",
					n, len(jobs), j.seed, j.mode, r.Model, r.Dead, r.Agents, r.WallS, r.BoundS, r.Ratio, r.Upstream.RateLimited, r.Fits)
				if r.Ratio > 1.1 && len(r.Windows) > 0 {
					fmt.Fprintf(o.Progress, "bench zoo:   seed %d admitted per window %v, the oracle's %v\n", j.seed, r.Windows, r.BoundWindows)
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return res, err
		}
	}
	return res, ctx.Err()
}

func runZooSeed(ctx context.Context, seed uint64, mode string, lead float64, timeout time.Duration, logger *slog.Logger) (ZooResult, error) {
	m := NewZooModel(seed)
	if lead > 0 && lead < 1 {
		m.Lead = time.Duration(lead * float64(m.Period))
	}
	res := newZooSeedParams(seed, m)
	res.Mode = mode
	res.Fits = time.Duration(math.Ceil(float64(res.Agents)/float64(m.Limit)))*m.Period+2*m.Latency+time.Second < timeout

	up := newZooUpstream(m)
	ul, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return res, err
	}
	usrv := &http.Server{Handler: up}
	go func() { _ = usrv.Serve(ul) }()
	defer usrv.Close()
	target := "http://" + ul.Addr().String()
	prov := llmapi.Anthropic
	if m.Format == "openai" {
		prov = llmapi.OpenAI
	}
	if mode == "gateway" {
		// Nothing of the model is configured: limits, periods, reset styles
		// and the cap are the gateway's to learn.
		g, err := gateway.New(ctx, gateway.Config{
			Upstreams: []gateway.Upstream{{Name: "zoo", URL: target, Provider: prov}},
			Logger:    logger,
		})
		if err != nil {
			return res, err
		}
		gl, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return res, err
		}
		gsrv := &http.Server{Handler: g}
		go func() { _ = gsrv.Serve(gl) }()
		defer func() {
			_ = gsrv.Close()
			_ = g.Close()
		}()
		target = "http://" + gl.Addr().String()
	}

	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		turns    []time.Duration
		firstErr string
		dead     atomic.Int64
		ok       atomic.Int64
	)
	start := time.Now()
	up.anchor(start)
	res.Model.Phase = up.m.Phase
	for a := range res.Agents {
		wg.Go(func() {
			tr := &http.Transport{MaxIdleConnsPerHost: 1, DisableCompression: true, ResponseHeaderTimeout: timeout}
			defer tr.CloseIdleConnections()
			client := &http.Client{Transport: tr}
			for range res.Turns {
				t0 := time.Now()
				err := agentTurn(ctx, client, target, prov, fmt.Sprintf("agent-%d", a), res.Stream, timeout)
				mu.Lock()
				turns = append(turns, time.Since(t0))
				if err != nil && firstErr == "" {
					firstErr = err.Error()
				}
				mu.Unlock()
				if err != nil {
					dead.Add(1)
					return
				}
				ok.Add(1)
			}
		})
	}
	wg.Wait()
	wall := time.Since(start)
	res.Dead, res.Requests, res.FirstError = int(dead.Load()), ok.Load(), firstErr
	res.Upstream = up.stats()

	res.WallS = wall.Seconds()
	bound, oracle := zooBound(m, up, start, res.Agents, res.Turns, res.Upstream.Admitted)
	res.BoundS = bound.Seconds()
	if m.Kind != "bucket" {
		res.Windows, res.BoundWindows = up.windowCounts(start), perWindow(up.window(start), oracle)
	}
	if res.BoundS > 0 {
		res.Ratio = res.WallS / res.BoundS
	}
	if len(turns) > 0 {
		res.MaxTurnS = slices.Max(turns).Seconds()
	}
	return res, ctx.Err()
}

// newZooSeedParams draws the seed's load: a few windows' worth of requests
// (fewer for long periods) from agents that mostly fit in one window.
func newZooSeedParams(seed uint64, m ZooModel) ZooResult {
	r := rand.New(rand.NewPCG(seed, 0x202))
	res := ZooResult{Model: m, Stream: r.IntN(2) == 0}
	// Enough windows that one spilled request (a whole window more) is a
	// small part of the run, fewer for long periods to bound its time.
	var windows int64
	switch {
	case m.Period <= 5*time.Second:
		windows = 6 + r.Int64N(5)
	case m.Period <= 20*time.Second:
		windows = 4 + r.Int64N(3)
	case m.Period <= time.Minute:
		windows = 2 + r.Int64N(2)
	default:
		windows = 2
	}
	res.Agents = 2 + r.IntN(int(min(m.Limit, 12)-1))
	if r.IntN(5) == 0 {
		res.Agents = int(m.Limit) + 1 + r.IntN(int(m.Limit)) // more agents than a window holds
	}
	res.Turns = max(2, int(math.Ceil(float64(windows*m.Limit)/float64(res.Agents))))
	return res
}

// zooBound is the least wall time any client could need, by the schedule of
// an oracle that knows the model: each agent's turns go one after another,
// each as soon as the limit has room (in the window of its start, or in a
// bucket holding a request) and fewer than the cap are in flight, each
// taking the mean latency. Attempts the
// upstream charged beyond the agents' turns (a cut stream's continuation)
// are added to the agents in turn. It returns the bound and, for fixed
// windows, the oracle's requests per window.
func zooBound(m ZooModel, u *zooUpstream, start time.Time, agents, turns int, admitted int64) (time.Duration, map[int64]int64) {
	extra := max(int(admitted)-agents*turns, 0)
	left := make([]int, agents)
	free := make([]time.Time, agents)
	for i := range left {
		left[i] = turns
		if i < extra%agents {
			left[i]++
		}
		left[i] += extra / agents
		free[i] = start
	}
	counts := map[int64]int64{}
	level, levelAt := float64(m.Limit), start
	rate := float64(m.Limit) / float64(m.Period)
	end := start
	var busy []time.Time // ends of the requests in flight, for the cap
	for {
		i := -1
		for j := range free {
			if left[j] > 0 && (i < 0 || free[j].Before(free[i])) {
				i = j
			}
		}
		if i < 0 {
			break
		}
		t := free[i]
		if m.Cap > 0 {
			for {
				busy = slices.DeleteFunc(busy, func(e time.Time) bool { return !e.After(t) })
				if len(busy) < m.Cap {
					break
				}
				t = slices.MinFunc(busy, func(a, b time.Time) int { return a.Compare(b) })
			}
		}
		if m.Kind == "bucket" {
			l := min(float64(m.Limit), level+rate*float64(t.Sub(levelAt)))
			if l < 1 {
				t = t.Add(time.Duration((1 - l) / rate))
				l = 1
			}
			level, levelAt = l-1, t
		} else {
			for counts[u.window(t)] >= m.Limit {
				t = u.windowEnd(u.window(t))
			}
			counts[u.window(t)]++
		}
		free[i] = t.Add(m.Latency)
		if m.Cap > 0 {
			busy = append(busy, free[i])
		}
		left[i]--
		if free[i].After(end) {
			end = free[i]
		}
	}
	return end.Sub(start), counts
}

// perWindow lists counts by window from first to the last window counted.
func perWindow(first int64, counts map[int64]int64) []int64 {
	var out []int64
	for w, n := range counts {
		if w < first {
			continue
		}
		for int64(len(out)) <= w-first {
			out = append(out, 0)
		}
		out[w-first] = n
	}
	return out
}

// agentTurn is one turn of a mock agent: one request, no retry. It fails on
// any error status, a transport error, or a stream without its terminal
// frame.
func agentTurn(ctx context.Context, c *http.Client, target string, prov llmapi.Provider, agent string, stream bool, timeout time.Duration) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	path, body := "/v1/messages", fmt.Sprintf(`{"model":"claude-sonnet-4-5","max_tokens":512,"stream":%v,"messages":[{"role":"user","content":%q}]}`, stream, benchMessage)
	key, keyHeader := "zoo-key", "X-Api-Key"
	if prov == llmapi.OpenAI {
		path, body = "/v1/chat/completions", fmt.Sprintf(`{"model":"gpt-4o","max_tokens":512,"stream":%v,"messages":[{"role":"user","content":%q}]}`, stream, benchMessage)
		key, keyHeader = "Bearer zoo-key", "Authorization"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target+path, stringsReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(keyHeader, key)
	req.Header.Set("Anthropic-Version", "2023-06-01")
	req.Header.Set("X-Apiary-Agent", agent)
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	idle := time.AfterFunc(timeout, cancel)
	b, err := io.ReadAll(&idleReader{r: resp.Body, t: idle, d: timeout})
	idle.Stop()
	if err != nil {
		return fmt.Errorf("reading body: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d: %s", resp.StatusCode, b[:min(len(b), 200)])
	}
	if !stream {
		return nil
	}
	info := llmapi.RequestInfo{Provider: prov, Endpoint: llmapi.EndpointMessages, Stream: true, Framing: llmapi.FramingSSE}
	if prov == llmapi.OpenAI {
		info.Endpoint = llmapi.EndpointChat
	}
	meter := llmapi.NewStreamMeter(info)
	meter.Feed(b)
	if r := meter.Finish(true); r.Outcome != llmapi.OutcomeComplete {
		return fmt.Errorf("stream %s: %s %s", r.Outcome, r.ErrorType, r.ErrorMessage)
	}
	return nil
}

// ZooSummary is the zoo's criteria over its gateway runs.
type ZooSummary struct {
	Seeds, Fitting                   int
	AgentsFitting, DeadFitting       int
	SeedsWithDeaths                  int
	AgentsNotFitting, DeadNotFitting int
	RatioMedian, RatioP90, RatioMax  float64
	Above115                         int
	MaxTurnS, TimeoutS               float64
	RateLimited, Requests            int64
	RateLimitedShare                 float64
}

// SummarizeZoo computes the zoo's criteria over the gateway runs of rs.
func SummarizeZoo(rs []ZooResult, timeout time.Duration) ZooSummary {
	s := ZooSummary{TimeoutS: timeout.Seconds()}
	var ratios []float64
	for _, r := range rs {
		if r.Mode != "gateway" {
			continue
		}
		s.Seeds++
		s.RateLimited += r.Upstream.RateLimited
		s.Requests += r.Requests
		if !r.Fits {
			s.AgentsNotFitting += r.Agents
			s.DeadNotFitting += r.Dead
			continue
		}
		s.Fitting++
		s.AgentsFitting += r.Agents
		s.DeadFitting += r.Dead
		if r.Dead > 0 {
			s.SeedsWithDeaths++
		}
		ratios = append(ratios, r.Ratio)
		if r.Ratio > 1.15 {
			s.Above115++
		}
		s.MaxTurnS = max(s.MaxTurnS, r.MaxTurnS)
	}
	if len(ratios) > 0 {
		slices.Sort(ratios)
		s.RatioMedian = ratios[len(ratios)/2]
		s.RatioP90 = ratios[min(len(ratios)-1, len(ratios)*9/10)]
		s.RatioMax = ratios[len(ratios)-1]
	}
	if s.Requests > 0 {
		s.RateLimitedShare = float64(s.RateLimited) / float64(s.Requests)
	}
	return s
}
