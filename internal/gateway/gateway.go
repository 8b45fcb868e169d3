// Package gateway is apiary's scheduling proxy in front of LLM APIs. Agents
// point ANTHROPIC_BASE_URL / OPENAI_BASE_URL (or any provider's base URL) at it
// and change nothing else; the gateway keeps every one of them alive on a
// shared rate limit.
//
// A request goes through, in order: routing to an upstream; identification of
// the agent (virtual key, X-Apiary-Agent, X-Claude-Code-Session-Id, else a
// hash of the presented key); a budget reservation priced pessimistically
// (input estimate plus max_tokens), so concurrent requests can never
// overshoot a budget; then, per attempt, the circuit breaker, rate-limit
// pacing (token buckets that reserve before sending and reconcile with the
// real usage after) and admission (a priority queue with aging and per-agent
// fair share, resized by AIMD). A request sleeping in pacing or in a retry
// backoff holds no admission slot. Retryable failures (429 rate limits, 5xx,
// 529, resets, timeouts before the first byte) are retried transparently
// while nothing has reached the client; after the first byte an upstream
// failure reaches the client as one well-formed terminal error in its own
// protocol, never as a stream that ends as if it were complete.
//
// Bodies pass through untouched, with two documented edits: the gateway asks
// upstreams for an uncompressed body (so it can meter usage), and, unless
// Config.NoIncludeUsage is set, it adds stream_options.include_usage to
// OpenAI chat streams that lack it and removes the extra usage chunk before
// the client sees the stream. Every request leaves one ledger row.
//
// A WebSocket upgrade (the Responses API over a WebSocket, as Codex opens
// it) is proxied as it is, without pacing or retries, and without the
// client's compression offer; each response on it is metered from the
// server's frames and leaves a ledger row of its own, charged to the
// budgets as it ends, and the session one more (see serveUpgrade).
//
// The gateway's own endpoints are GET /_apiary/stats (JSON), GET
// /_apiary/health and GET /metrics (Prometheus).
package gateway

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apiary-dev/apiary/internal/llmapi"
)

// Config configures a Gateway. The zero value of every field is a sensible
// default; only Upstreams is required.
type Config struct {
	Upstreams []Upstream
	// Agents sets priorities, concurrency caps and budgets by agent name.
	Agents map[string]AgentPolicy
	// Prices is the price table for budgets and accounting; nil means
	// llmapi.DefaultPrices().
	Prices *llmapi.PriceTable
	// DB holds virtual keys and, unless Ledger is nil, where spend is
	// restored from at start. Nil disables virtual keys.
	DB *sql.DB
	// Ledger records one row per request; nil records nothing.
	Ledger *Ledger
	// Quotas puts upstreams (by name) under cluster-wide slices shared
	// with other gateways (cluster.go).
	Quotas map[string]ClusterQuota
	// RequireAPIKeys makes New refuse (with a *NoKeyError) an upstream
	// without a real key: set it whenever virtual keys are in use.
	RequireAPIKeys bool
	// Authority, if set, verifies the agent's capability on every request
	// and lets a revocation abort its requests in flight (authority.go).
	Authority *Authority

	// MaxQueue bounds the admission wait queue per upstream (default 4096).
	MaxQueue int
	// AgingStep raises a waiting request's priority class by one per step
	// (default 2s), so no class starves.
	AgingStep time.Duration

	// MaxAttempts bounds attempts per request (default 10); NoRetry sends
	// each request once.
	MaxAttempts int
	NoRetry     bool
	// RetryBase and RetryCap shape the full-jitter exponential backoff
	// (defaults 250ms and 20s); MaxRetryWait bounds the total time one
	// request waits between attempts, and a server's retry-after beyond it
	// is passed to the client at once (default 2m).
	RetryBase, RetryCap, MaxRetryWait time.Duration

	// NoAIMD fixes each upstream's concurrency at MaxConcurrency.
	NoAIMD bool
	// AIMDMin is the concurrency floor (default 1); AIMDFactor the
	// decrease factor (default 0.7); AIMDCooldown the least time between
	// two decreases (default 2s); TTFBTarget counts a slower time to first
	// byte as congestion (default 0: off).
	AIMDMin      int
	AIMDFactor   float64
	AIMDCooldown time.Duration
	TTFBTarget   time.Duration

	// NoBreaker disables the circuit breakers. BreakerFailFast answers at
	// once with a typed error while a breaker is open instead of waiting
	// for it to half-open.
	NoBreaker        bool
	BreakerFailFast  bool
	BreakerRate      float64       // default 0.5
	BreakerMin       int           // default 20
	BreakerWindow    time.Duration // default 30s
	BreakerOpenFor   time.Duration // default 5s
	BreakerMaxOpen   time.Duration // default 1m
	BreakerProbes    int           // default 1
	BreakerProbeWait time.Duration // default 1m

	// NoRateLimit disables pacing by rate limits (configured and learned).
	NoRateLimit bool
	// NoAdmission disables the admission gate (unbounded concurrency).
	NoAdmission bool

	// NoIncludeUsage leaves OpenAI chat stream bodies exactly as sent.
	NoIncludeUsage bool
	// NoResume ends a broken Anthropic text stream with an error frame
	// instead of continuing it with a prefill request (see resume.go).
	NoResume bool
	// ClientPatience is how long clients are expected to wait for an
	// answer before they give up (default 60 s, a common SDK read
	// timeout). A request whose projected pacing wait exceeds it is logged
	// at warn.
	ClientPatience time.Duration
	// KeepAlive is the interval of the ping events that keep a client's
	// stream alive while a continuation waits for the upstream (default 5s).
	KeepAlive time.Duration
	// MaxBody bounds request bodies (default 32 MiB).
	MaxBody int64
	// HeaderTimeout bounds the wait for an upstream's response headers per
	// attempt; a timeout is retried (default 10m).
	HeaderTimeout time.Duration
	// DefaultMaxTokens is assumed for budget reservations when a request
	// sets no output limit (default 4096).
	DefaultMaxTokens int64

	Logger *slog.Logger
	// Now is the clock; nil means time.Now. Rand seeds backoff jitter; nil
	// means a random seed.
	Now  func() time.Time
	Rand *rand.Rand
	// Transport sends requests upstream; nil means a tuned http.Transport.
	Transport http.RoundTripper
}

// Upstream is one model API.
type Upstream struct {
	Name string
	URL  string
	// Provider fixes the wire format; zero means detect per request.
	Provider llmapi.Provider
	// APIKey is the real key substituted for virtual keys; agents never
	// see it. APIKeyEnv names the environment variable it comes from, for
	// the error when it is missing (see CheckAPIKeys).
	APIKey    string
	APIKeyEnv string
	// MaxConcurrency is the admission limit and AIMD's ceiling (default 16).
	MaxConcurrency int
	// AgentMaxConcurrency caps one agent's requests in flight (0: no cap).
	AgentMaxConcurrency int
	// RPM, TPM, ITPM and OTPM are known limits per Window; zero means
	// unknown (limits are also learned from response headers).
	RPM, TPM, ITPM, OTPM int64
	// Window is the period of those configured limits (default one minute,
	// as every provider's RPM/TPM). It is never given to limits learned
	// from headers: their period is learned from the server's resets.
	Window time.Duration
}

// AgentPolicy is what the gateway enforces for one agent.
type AgentPolicy struct {
	Priority       int
	MaxConcurrency int
	BudgetMicroUSD int64 // 0: none
	BudgetTokens   int64 // 0: none
}

// Gateway is the proxy; it is an http.Handler.
type Gateway struct {
	cfg       Config
	log       *slog.Logger
	now       func() time.Time
	upstreams []*upstream
	byName    map[string]*upstream
	prices    *llmapi.PriceTable
	keys      *keyring
	flights   keyFlights // requests being served by virtual key
	budgets   *budgets
	metrics   *metrics
	proxy     *httputil.ReverseProxy
	reqSeq    atomic.Uint64
	reqPrefix string
}

var _ http.Handler = (*Gateway)(nil)

// Errors returned by New.
var (
	ErrNoUpstreams = errors.New("gateway: no upstreams configured")
	ErrBadUpstream = errors.New("gateway: bad upstream")
)

// New builds a Gateway. It restores budget spend from cfg.DB's ledger, so a
// restarted gateway does not hand out a budget twice.
func New(ctx context.Context, cfg Config) (*Gateway, error) {
	if len(cfg.Upstreams) == 0 {
		return nil, ErrNoUpstreams
	}
	if cfg.RequireAPIKeys {
		if err := CheckAPIKeys(cfg.Upstreams); err != nil {
			return nil, err
		}
	}
	cfg.setDefaults()
	withCluster(&cfg)
	g := &Gateway{cfg: cfg, log: cfg.Logger, now: cfg.Now, prices: cfg.Prices, byName: map[string]*upstream{}}
	g.reqPrefix = fmt.Sprintf("req_%08x", rand.Uint32())
	g.keys = &keyring{db: cfg.DB}
	g.metrics = newMetrics()
	for i, u := range cfg.Upstreams {
		up, err := newUpstream(&g.cfg, u, g.metrics)
		if err != nil {
			return nil, fmt.Errorf("%w: upstreams[%d] (%s): %v", ErrBadUpstream, i, u.Name, err)
		}
		if g.byName[u.Name] != nil {
			return nil, fmt.Errorf("%w: duplicate name %q", ErrBadUpstream, u.Name)
		}
		g.upstreams = append(g.upstreams, up)
		g.byName[u.Name] = up
	}
	var err error
	g.budgets, err = newBudgets(ctx, cfg.DB, cfg.Ledger != nil, cfg.Agents)
	if err != nil {
		return nil, err
	}
	g.proxy = &httputil.ReverseProxy{
		Rewrite:        g.rewrite,
		Transport:      roundTripFunc(g.roundTrip),
		FlushInterval:  -1,
		ModifyResponse: g.modifyResponse,
		ErrorHandler:   g.errorHandler,
		BufferPool:     bufferPool{},
		ErrorLog:       nil,
	}
	return g, nil
}

func (c *Config) setDefaults() {
	if c.Prices == nil {
		c.Prices = llmapi.DefaultPrices()
	}
	if c.MaxQueue == 0 {
		c.MaxQueue = 4096
	}
	if c.AgingStep == 0 {
		c.AgingStep = 2 * time.Second
	}
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = 10
	}
	if c.NoRetry {
		c.MaxAttempts = 1
	}
	if c.RetryBase <= 0 {
		c.RetryBase = 250 * time.Millisecond
	}
	if c.RetryCap <= 0 {
		c.RetryCap = 20 * time.Second
	}
	if c.MaxRetryWait <= 0 {
		c.MaxRetryWait = 2 * time.Minute
	}
	if c.AIMDMin <= 0 {
		c.AIMDMin = 1
	}
	if c.AIMDFactor <= 0 || c.AIMDFactor >= 1 {
		c.AIMDFactor = 0.7
	}
	if c.AIMDCooldown <= 0 {
		c.AIMDCooldown = 2 * time.Second
	}
	if c.BreakerRate <= 0 {
		c.BreakerRate = 0.5
	}
	if c.BreakerMin <= 0 {
		c.BreakerMin = 20
	}
	if c.BreakerWindow <= 0 {
		c.BreakerWindow = 30 * time.Second
	}
	if c.BreakerOpenFor <= 0 {
		c.BreakerOpenFor = 5 * time.Second
	}
	if c.BreakerMaxOpen <= 0 {
		c.BreakerMaxOpen = time.Minute
	}
	if c.BreakerProbes <= 0 {
		c.BreakerProbes = 1
	}
	if c.BreakerProbeWait <= 0 {
		c.BreakerProbeWait = time.Minute
	}
	if c.MaxBody <= 0 {
		c.MaxBody = 32 << 20
	}
	if c.HeaderTimeout <= 0 {
		c.HeaderTimeout = 10 * time.Minute
	}
	if c.ClientPatience <= 0 {
		c.ClientPatience = time.Minute
	}
	if c.KeepAlive <= 0 {
		c.KeepAlive = 5 * time.Second
	}
	if c.DefaultMaxTokens <= 0 {
		c.DefaultMaxTokens = 4096
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Rand == nil {
		c.Rand = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	if c.Transport == nil {
		c.Transport = &http.Transport{
			Proxy:                 nil,
			DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			ForceAttemptHTTP2:     true,
			MaxIdleConns:          4096,
			MaxIdleConnsPerHost:   1024,
			IdleConnTimeout:       90 * time.Second,
			TLSHandshakeTimeout:   10 * time.Second,
			ResponseHeaderTimeout: c.HeaderTimeout,
			DisableCompression:    true,
		}
	}
}

// Close releases the gateway's idle upstream connections. Stop the HTTP
// server in front of it first (its Shutdown lets requests in flight
// finish); the caller closes the Ledger afterwards.
func (g *Gateway) Close() error {
	if t, ok := g.cfg.Transport.(interface{ CloseIdleConnections() }); ok {
		t.CloseIdleConnections()
	}
	return nil
}

// ServeHTTP proxies one request, or serves the gateway's own endpoints.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/_apiary/health":
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"ok":true}` + "\n"))
		return
	case "/_apiary/stats":
		g.serveStats(w, r)
		return
	case "/_apiary/cluster":
		g.serveCluster(w, r)
		return
	case "/metrics":
		g.metrics.handler().ServeHTTP(w, r)
		return
	}
	g.serveProxy(w, r)
}

// route picks the upstream for r and returns the path to forward. A path
// that starts with /<upstream name>/ goes to that upstream (the prefix is
// stripped); otherwise the provider detected from the request picks the
// first upstream of that provider; a single upstream takes everything.
func (g *Gateway) route(r *http.Request) (*upstream, string, llmapi.Provider) {
	path := r.URL.Path
	if rest, ok := strings.CutPrefix(path, "/"); ok {
		name, tail, _ := strings.Cut(rest, "/")
		if up := g.byName[name]; up != nil && name != "" {
			p := up.provider
			if p == 0 {
				p = llmapi.Detect(r)
			}
			return up, "/" + tail, p
		}
	}
	detected := llmapi.Detect(r)
	for _, up := range g.upstreams {
		if up.provider != 0 && up.provider == detected {
			return up, path, detected
		}
	}
	if len(g.upstreams) == 1 {
		up := g.upstreams[0]
		p := up.provider
		if p == 0 {
			p = detected
		}
		return up, path, p
	}
	for _, up := range g.upstreams {
		if up.provider == 0 && up.guess == detected {
			return up, path, detected
		}
	}
	return nil, path, detected
}

// roundTripFunc adapts a function to http.RoundTripper.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// bufferPool recycles the proxy's copy buffers.
type bufferPool struct{}

var copyBuffers = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

func (bufferPool) Get() []byte  { return *(copyBuffers.Get().(*[]byte)) }
func (bufferPool) Put(b []byte) { copyBuffers.Put(&b) }

// guessProvider infers an upstream's provider from its host when the
// configuration does not say.
func guessProvider(u *url.URL) llmapi.Provider {
	h := u.Hostname()
	switch {
	case strings.HasSuffix(h, "anthropic.com"):
		return llmapi.Anthropic
	case strings.HasSuffix(h, "openai.azure.com"):
		return llmapi.Azure
	case strings.HasSuffix(h, "openai.com"):
		return llmapi.OpenAI
	case strings.HasSuffix(h, "googleapis.com"):
		return llmapi.Gemini
	case u.Port() == "11434":
		return llmapi.Ollama
	}
	return 0
}
