package llmfake

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Options are the Server's injected dependencies.
type Options struct {
	// Now is the clock for rate limits, headers and stats; nil means
	// time.Now. Latency waits use real timers (virtual under
	// testing/synctest).
	Now func() time.Time
	// Seed seeds the one RNG all faults and output lengths are drawn from.
	Seed uint64
	// Logger receives one debug record per model request; nil discards.
	Logger *slog.Logger
}

// Server is the fake model server. It is an http.Handler, safe for
// concurrent use; its Config can be replaced live.
type Server struct {
	cfg   atomic.Pointer[Config]
	now   func() time.Time
	log   *slog.Logger
	words wordCache
	ids   idGen

	rngMu sync.Mutex
	rng   *rand.Rand

	mu          sync.Mutex
	epoch       time.Time
	keys        map[string]*keyState
	total       counters
	inFlight    int
	maxInFlight int

	sess sessions
}

var _ http.Handler = (*Server)(nil)

// New returns a Server for cfg.
func New(cfg Config, opts Options) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Server{
		now:   opts.Now,
		log:   opts.Logger,
		words: newWordCache(4096),
		rng:   rand.New(rand.NewPCG(opts.Seed, opts.Seed^0x6c6c6d66616b65)),
		keys:  map[string]*keyState{},
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.ids.salt = splitmix(opts.Seed)
	s.epoch = s.now()
	c := cfg
	s.cfg.Store(&c)
	return s, nil
}

// Config returns the current configuration.
func (s *Server) Config() Config { return *s.cfg.Load() }

// SetConfig replaces the configuration for requests that arrive from now
// on. Changing the window kind, window length or time scale restarts the
// rate-limit windows (usage is cleared, window 0 starts now); changing only
// the limits keeps each key's usage.
func (s *Server) SetConfig(cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.cfg.Load()
	if old.window() != cfg.window() || (old.Limits.Window == WindowBucket) != (cfg.Limits.Window == WindowBucket) {
		s.epoch = s.now()
		for _, k := range s.keys {
			k.meters = [numDims]meter{}
			k.windows = [windowHistory]windowCount{}
		}
	}
	c := cfg
	s.cfg.Store(&c)
	return nil
}

// Reset clears all counters, rate-limit state and script sessions; window
// 0 starts now. Requests in flight finish normally.
func (s *Server) Reset() {
	s.mu.Lock()
	s.epoch = s.now()
	s.keys = map[string]*keyState{}
	s.total = counters{}
	s.maxInFlight = s.inFlight
	s.mu.Unlock()
	s.sess.reset()
}

// Stats returns a snapshot of the traffic so far.
func (s *Server) Stats() Stats {
	cfg := s.cfg.Load()
	s.mu.Lock()
	defer s.mu.Unlock()
	v := newRateView(cfg, s.epoch, s.now())
	st := Stats{
		Now: v.now, Epoch: s.epoch, Window: v.window.String(), InFlight: s.inFlight, MaxInFlight: s.maxInFlight,
		Total: s.total.export(), Keys: make(map[string]KeyStats, len(s.keys)),
	}
	for k, ks := range s.keys {
		st.Keys[k] = ks.export(&v)
	}
	return st
}

// key returns the state of one API key; s.mu must be held.
func (s *Server) key(k string) *keyState {
	ks := s.keys[k]
	if ks == nil {
		ks = &keyState{}
		s.keys[k] = ks
	}
	return ks
}

// ServeHTTP routes a request to the control endpoints or to a provider.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/_") {
		s.control(w, r)
		return
	}
	cfg := s.cfg.Load()
	rt := route(r, cfg.Format)
	x := &exchange{s: s, w: w, r: r, cfg: cfg, d: rt.d, ep: rt.ep, model: rt.model, start: s.now()}
	x.key = apiKey(r)
	x.newRequestID()
	switch {
	case rt.ep == epNone:
		x.reject(&failure{status: http.StatusNotFound, msg: notFoundMessage(rt.d, r)})
	case cfg.Format != "" && cfg.Format != FormatAuto && rt.d.String() != string(cfg.Format):
		x.d = formatDialect(cfg.Format)
		x.newRequestID()
		x.reject(&failure{status: http.StatusNotFound, msg: notFoundMessage(x.d, r)})
	case rt.ep == epResponses && isWebSocket(r) && cfg.RequireKey && x.key == "":
		x.reject(&failure{status: http.StatusUnauthorized, msg: authMessage(rt.d)})
	case rt.ep == epResponses && isWebSocket(r):
		s.serveResponsesWS(w, r, rt.model)
	case rt.ep.isPost() && r.Method != http.MethodPost:
		x.reject(&failure{status: http.StatusMethodNotAllowed, msg: "Method Not Allowed: " + r.Method + " " + r.URL.Path})
	case !rt.ep.isPost() && r.Method != http.MethodGet:
		x.reject(&failure{status: http.StatusMethodNotAllowed, msg: "Method Not Allowed: " + r.Method + " " + r.URL.Path})
	case cfg.RequireKey && x.key == "":
		x.reject(&failure{status: http.StatusUnauthorized, msg: authMessage(rt.d)})
	default:
		x.serve()
	}
}

func formatDialect(f Format) dialect {
	switch f {
	case FormatOpenAI:
		return dOpenAI
	case FormatGemini:
		return dGemini
	case FormatOllama:
		return dOllama
	default:
		return dAnthropic
	}
}

func notFoundMessage(d dialect, r *http.Request) string {
	switch d {
	case dAnthropic:
		return "Not Found"
	case dOpenAI:
		return "Invalid URL (" + r.Method + " " + r.URL.Path + ")"
	case dGemini:
		return "Requested entity was not found."
	default:
		return "" // Ollama answers a plain-text 404
	}
}

func authMessage(d dialect) string {
	switch d {
	case dAnthropic:
		return "x-api-key header is required"
	case dOpenAI:
		return "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY)."
	case dGemini:
		return "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API."
	default:
		return "unauthorized"
	}
}

// apiKey finds the caller's API key the way each provider sends it.
func apiKey(r *http.Request) string {
	h := r.Header
	for _, name := range []string{"X-Api-Key", "Api-Key", "X-Goog-Api-Key"} {
		if v := h.Get(name); v != "" {
			return v
		}
	}
	if v := h.Get("Authorization"); v != "" {
		if tok, ok := strings.CutPrefix(v, "Bearer "); ok {
			return strings.TrimSpace(tok)
		}
		return v
	}
	if strings.Contains(r.URL.RawQuery, "key=") {
		return r.URL.Query().Get("key")
	}
	return ""
}

// control serves the /_ endpoints.
func (s *Server) control(w http.ResponseWriter, r *http.Request) {
	writeJSON := func(status int, v any) {
		b, _ := json.MarshalIndent(v, "", "  ")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		w.Write(append(b, '\n'))
	}
	fail := func(status int, msg string) { writeJSON(status, map[string]string{"error": msg}) }
	route := r.Method + " " + r.URL.Path
	switch route {
	case "GET /_health":
		writeJSON(http.StatusOK, map[string]any{"status": "ok"})
	case "GET /_stats":
		writeJSON(http.StatusOK, s.Stats())
	case "POST /_reset":
		s.Reset()
		writeJSON(http.StatusOK, map[string]any{"status": "reset"})
	case "GET /_config":
		writeJSON(http.StatusOK, s.Config())
	case "POST /_config":
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			fail(http.StatusBadRequest, err.Error())
			return
		}
		cfg := s.Config()
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&cfg); err != nil {
			fail(http.StatusBadRequest, "bad config patch: "+err.Error())
			return
		}
		if err := s.SetConfig(cfg); err != nil {
			fail(http.StatusBadRequest, err.Error())
			return
		}
		writeJSON(http.StatusOK, s.Config())
	default:
		switch r.URL.Path {
		case "/_health", "/_stats", "/_reset", "/_config":
			fail(http.StatusMethodNotAllowed, "method not allowed: "+route)
		default:
			fail(http.StatusNotFound, "no control endpoint "+r.URL.Path+" (want /_health, /_stats, /_reset, /_config)")
		}
	}
}
