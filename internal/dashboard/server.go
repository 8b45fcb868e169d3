package dashboard

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
)

//go:embed assets
var assetFS embed.FS

// Assets returns the page's embedded files (index.html, app.js, app.css,
// ...): everything the browser loads from the dashboard besides the API.
func Assets() fs.FS {
	sub, err := fs.Sub(assetFS, "assets")
	if err != nil {
		panic(err) // the directory is embedded: unreachable
	}
	return sub
}

// Config configures a Server. Every field but Sources has a sensible zero
// value, and every Source may be nil.
type Config struct {
	Sources
	// Reviewer is recorded as who reviewed a hint or decided an escrow
	// request; "" is "dashboard".
	Reviewer string
	// Interval is how often an open stream re-reads what it shows when
	// nothing called Notify; 0 is 500 ms.
	Interval time.Duration
	// SampleEvery is the gateway sampling period; 0 is 1 s. HistoryLen is
	// how many samples per upstream are kept; 0 is 300.
	SampleEvery time.Duration
	HistoryLen  int
	// Hosts are Host header names accepted besides the loopback names and
	// addresses (localhost, 127.0.0.0/8, ::1); "*" accepts every host, for
	// a dashboard listening on a public interface on purpose.
	Hosts []string
	// Now is the clock of samples; nil is time.Now.
	Now func() time.Time
	// Location is the time zone of the charts' clock axes; nil is
	// time.Local.
	Location *time.Location
	// Logger receives diagnostics; nil discards them.
	Logger *slog.Logger
}

// Server is the dashboard: an http.Handler plus the goroutine that samples
// the gateway (see Run and Serve). It is safe for concurrent use.
type Server struct {
	src       Sources
	reviewer  string
	interval  time.Duration
	sampleDur time.Duration
	histLen   int
	hosts     []string
	now       func() time.Time
	loc       *time.Location
	log       *slog.Logger
	handler   http.Handler

	mu      sync.Mutex    // guards the fields below
	changed chan struct{} // closed and replaced by Notify
	gw      GatewayView
}

// New returns a Server.
func New(cfg Config) (*Server, error) {
	if cfg.Interval < 0 || cfg.SampleEvery < 0 || cfg.HistoryLen < 0 {
		return nil, fmt.Errorf("%w: negative Interval, SampleEvery or HistoryLen", ErrInvalid)
	}
	s := &Server{src: cfg.Sources, reviewer: cfg.Reviewer, interval: cfg.Interval, sampleDur: cfg.SampleEvery,
		histLen: cfg.HistoryLen, hosts: cfg.Hosts, now: cfg.Now, loc: cfg.Location, log: cfg.Logger, changed: make(chan struct{})}
	if s.reviewer == "" {
		s.reviewer = "dashboard"
	}
	if s.interval == 0 {
		s.interval = 500 * time.Millisecond
	}
	if s.sampleDur == 0 {
		s.sampleDur = time.Second
	}
	if s.histLen == 0 {
		s.histLen = 300
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.loc == nil {
		s.loc = time.Local
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.gw = GatewayView{Connected: s.src.Gateway != nil, History: map[string][]GatewayPoint{}}
	s.handler = s.guard(s.routes())
	return s, nil
}

// Handler returns the dashboard's HTTP handler. The gateway panel shows
// samples only while Run (or Serve) runs.
func (s *Server) Handler() http.Handler { return s.handler }

// Notify tells open streams that something changed (a run event, say), so
// they re-read now instead of at their next interval. It never blocks.
func (s *Server) Notify() {
	s.mu.Lock()
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
}

func (s *Server) changes() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}

// Run samples the gateway every Config.SampleEvery until ctx ends.
func (s *Server) Run(ctx context.Context) {
	if s.src.Gateway == nil {
		<-ctx.Done()
		return
	}
	t := time.NewTicker(s.sampleDur)
	defer t.Stop()
	for {
		s.sample(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Serve serves the dashboard on l and samples the gateway until ctx ends,
// then shuts the server down (open streams end with ctx) and returns. It
// closes l.
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	hs := &http.Server{Handler: s.handler, ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	var wg sync.WaitGroup
	wg.Go(func() { s.Run(ctx) })
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(l) }()
	var err error
	select {
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		err = hs.Shutdown(sctx)
		cancel()
		<-errc
	case err = <-errc:
	}
	wg.Wait()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

func (s *Server) routes() *http.ServeMux {
	mux := http.NewServeMux()
	static := http.FileServerFS(Assets())
	mux.Handle("GET /", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" && !strings.HasPrefix(r.URL.Path, "/assets/") {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Cache-Control", "no-cache")
		if r.URL.Path == "/" {
			static.ServeHTTP(w, r)
			return
		}
		http.StripPrefix("/assets", static).ServeHTTP(w, r)
	}))
	mux.HandleFunc("GET /api/runs", s.getRuns)
	mux.HandleFunc("GET /api/runs/{run}", s.getRun)
	mux.HandleFunc("GET /api/runs/{run}/tasks/{task}", s.getTask)
	mux.HandleFunc("GET /api/gateway", s.getGateway)
	mux.HandleFunc("GET /api/gateway/chart.svg", s.getGatewayChart)
	mux.HandleFunc("GET /api/board", s.getBoard)
	mux.HandleFunc("GET /api/escrow", s.getEscrow)
	mux.HandleFunc("GET /api/reviews", s.getReviews)
	mux.HandleFunc("GET /api/plots", s.getPlots)
	mux.HandleFunc("GET /api/plots/{name...}", s.getPlot)
	mux.HandleFunc("GET /api/stream", s.serveStream)
	mux.HandleFunc("POST /api/runs/{run}/cancel", s.postCancel)
	mux.HandleFunc("POST /api/runs/{run}/tasks/{task}/cancel", s.postCancel)
	mux.HandleFunc("POST /api/hints/{type}/{verdict}", s.postHint)
	mux.HandleFunc("POST /api/escrow/{id}/{verdict}", s.postEscrow)
	if s.src.Metrics != nil {
		mux.Handle("GET /metrics", s.src.Metrics)
	}
	return mux
}

// guard sets the security headers and refuses requests that did not come
// from the dashboard's own page: a foreign Host (DNS rebinding), and, for
// actions, a foreign Origin or a missing X-Apiary-Dashboard header (which
// no cross-site form can set without a preflight the dashboard never
// grants).
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
		if !s.hostAllowed(r.Host) {
			writeError(w, http.StatusForbidden, "host "+r.Host+" is not this dashboard's")
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			if o := r.Header.Get("Origin"); o != "" {
				if u, err := url.Parse(o); err != nil || u.Host != r.Host {
					writeError(w, http.StatusForbidden, "cross-origin request refused")
					return
				}
			}
			if r.Header.Get("Sec-Fetch-Site") == "cross-site" || r.Header.Get("X-Apiary-Dashboard") != "1" {
				writeError(w, http.StatusForbidden, "actions need the X-Apiary-Dashboard: 1 header of the dashboard's page")
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// hostAllowed reports whether a Host header names this dashboard.
func (s *Server) hostAllowed(host string) bool {
	if slices.Contains(s.hosts, "*") {
		return true
	}
	name := host
	if h, _, err := net.SplitHostPort(host); err == nil {
		name = h
	}
	name = strings.TrimSuffix(strings.Trim(name, "[]"), ".")
	if strings.EqualFold(name, "localhost") || slices.Contains(s.hosts, name) || slices.Contains(s.hosts, host) {
		return true
	}
	ip := net.ParseIP(name)
	return ip != nil && ip.IsLoopback()
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

func writeError(w http.ResponseWriter, status int, msg string) {
	b, _ := json.Marshal(map[string]string{"error": msg})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// statusOf maps an error to the HTTP status the sentinel it wraps names.
func statusOf(err error) int {
	switch {
	case errors.Is(err, ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, ErrConflict):
		return http.StatusConflict
	case errors.Is(err, ErrUnavailable):
		return http.StatusNotImplemented
	case errors.Is(err, ErrInvalid):
		return http.StatusBadRequest
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	st := statusOf(err)
	if st == http.StatusInternalServerError {
		s.log.Warn("dashboard request failed", "path", r.URL.Path, "err", err)
	}
	writeError(w, st, readable(err))
}

// readable is an error as the page shows it: the page is the dashboard,
// so the sentinels' package prefix says nothing there.
func readable(err error) string {
	return strings.NewReplacer("dashboard: not found: ", "", "dashboard: conflict: ", "", "dashboard: invalid: ", "",
		"dashboard: not connected: ", "not connected: ", "dashboard: ", "").Replace(err.Error())
}

// AllowedHosts are the Host names a dashboard listening on addr must
// accept (Config.Hosts): nil, the loopback names only, for a loopback
// address; every name otherwise — then whoever reaches the address can
// press its buttons, which the caller should say.
func AllowedHosts(addr string) []string {
	host, _, _ := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); host == "localhost" || ip != nil && ip.IsLoopback() {
		return nil
	}
	return []string{"*"}
}

// Start serves on l in the background (see Serve) until ctx ends or stop
// is called; stop waits for it. An error that ends serving goes to onErr.
func (s *Server) Start(ctx context.Context, l net.Listener, onErr func(error)) (stop func()) {
	sctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := s.Serve(sctx, l); err != nil {
			onErr(err)
		}
	})
	return func() {
		cancel()
		wg.Wait()
	}
}
