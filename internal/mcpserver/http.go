package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/apiary-dev/apiary/internal/durable"
)

// Body limits of HTTPHandler.
const (
	DefaultMaxBodyBytes  = mcp.DefaultMaxRequestBodyBytes // 4 MiB
	DefaultHardBodyBytes = 64 << 20
)

// HTTPOptions configure HTTPHandler. The zero value is usable.
type HTTPOptions struct {
	// MaxBodyBytes is the largest request served (default 4 MiB, the
	// SDK's). A larger tools/call is answered with a quota_exceeded/split
	// envelope telling the model to use rw.chunk_append; other large
	// requests get 413.
	MaxBodyBytes int64
	// HardBodyBytes is the most read to find out what a large request was
	// (default 64 MiB); beyond it the answer is a plain 413.
	HardBodyBytes int64
	// Logger receives transport logs. Default: discard.
	Logger *slog.Logger
}

// HTTPHandler serves srv as streamable HTTP at /mcp. It runs the SDK handler
// in stateless mode, which serves both the 2026-07-28 protocol and
// handshake-era clients (each request in a temporary session; no
// Mcp-Session-Id). Requests whose Origin is not this host or localhost get
// 403; the SDK also rejects non-localhost Host headers on loopback
// (DNS rebinding).
func HTTPHandler(srv *mcp.Server, o HTTPOptions) http.Handler {
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.HardBodyBytes < o.MaxBodyBytes {
		o.HardBodyBytes = max(DefaultHardBodyBytes, o.MaxBodyBytes)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{
		Stateless:           true,
		Logger:              o.Logger,
		MaxRequestBodyBytes: o.MaxBodyBytes,
	})
	mux := http.NewServeMux()
	mux.Handle("/mcp", &guard{next: sdk, o: o})
	return mux
}

// guard checks Origin and request size before the SDK sees a request.
type guard struct {
	next http.Handler
	o    HTTPOptions
}

func (g *guard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if origin := r.Header.Get("Origin"); origin != "" && !allowedOrigin(origin, r.Host) {
		http.Error(w, "forbidden origin", http.StatusForbidden)
		return
	}
	if r.Method != http.MethodPost || r.Body == nil {
		g.next.ServeHTTP(w, r)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, g.o.HardBodyBytes+1))
	r.Body.Close()
	if err != nil {
		http.Error(w, "cannot read request body", http.StatusBadRequest)
		return
	}
	if int64(len(body)) > g.o.MaxBodyBytes {
		if int64(len(body)) <= g.o.HardBodyBytes && g.tooLargeCall(w, body) {
			return
		}
		http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	g.next.ServeHTTP(w, r)
}

// tooLargeCall answers an oversized tools/call with a typed envelope.
func (g *guard) tooLargeCall(w http.ResponseWriter, body []byte) bool {
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Name string `json:"name"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &msg) != nil || msg.Method != "tools/call" || len(msg.ID) == 0 {
		return false
	}
	e := &durable.Error{Kind: durable.KindQuotaExceeded, Reason: durable.ReasonSizeLimit, Action: durable.ActionSplit, Context: map[string]any{
		"reason": "request_too_large", "request_bytes": len(body), "limit_bytes": g.o.MaxBodyBytes,
		"hint": "send the content in pieces with rw.chunk_append, then rw.chunk_compose",
	}}
	res, err := json.Marshal(envelopeResult(msg.Params.Name, e))
	if err != nil {
		return false
	}
	out, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": msg.ID, "result": json.RawMessage(res)})
	if err != nil {
		return false
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.Write(out)
	return true
}

// allowedOrigin accepts an Origin naming the request's own host or a
// loopback host.
func allowedOrigin(origin, host string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	if u.Host == host {
		return true
	}
	h := u.Hostname()
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// ServeHTTP serves h on ln until ctx ends, then shuts down gracefully:
// requests in flight (a write between its commit and its journal row)
// finish, for at most 10 seconds. Connections the client opened but never
// used are closed at once rather than waited for (net/http would wait 5 s).
func ServeHTTP(ctx context.Context, ln net.Listener, h http.Handler) error {
	var mu sync.Mutex
	fresh := map[net.Conn]bool{}
	hs := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ConnState: func(c net.Conn, s http.ConnState) {
			mu.Lock()
			defer mu.Unlock()
			if s == http.StateNew {
				fresh[c] = true
			} else {
				delete(fresh, c)
			}
		},
	}
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	shut := make(chan error, 1)
	go func() { shut <- hs.Shutdown(sctx) }()
	mu.Lock()
	for c := range fresh {
		c.Close()
	}
	mu.Unlock()
	err := <-shut
	if serr := <-done; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}
