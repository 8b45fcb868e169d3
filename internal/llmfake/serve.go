package llmfake

import (
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"sync"
	"time"
)

// HTTPServer serves a Server on a listener. Close stops it and waits for
// every handler to return.
type HTTPServer struct {
	// URL is the server's base URL, http://ADDR.
	URL string

	srv    *http.Server
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	closed bool
	err    error
	wg     sync.WaitGroup
}

// ServeLoopback builds a server from cfg and opts and serves it on a free
// port of 127.0.0.1 (the fake model server tools and tests start
// in-process).
func ServeLoopback(cfg Config, opts Options) (*HTTPServer, error) {
	s, err := New(cfg, opts)
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	return Serve(l, s), nil
}

// Serve starts serving s on l in a goroutine owned by the returned
// HTTPServer; l is closed by Close.
func Serve(l net.Listener, s *Server) *HTTPServer {
	ctx, cancel := context.WithCancel(context.Background())
	hs := &HTTPServer{URL: "http://" + l.Addr().String(), cancel: cancel, done: make(chan struct{})}
	hs.srv = &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hs.mu.Lock()
			if hs.closed {
				hs.mu.Unlock()
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
			hs.wg.Add(1)
			hs.mu.Unlock()
			defer hs.wg.Done()
			s.ServeHTTP(w, r)
		}),
		BaseContext:       func(net.Listener) context.Context { return ctx },
		ReadHeaderTimeout: 30 * time.Second,
		ErrorLog:          log.New(io.Discard, "", 0),
	}
	go func() {
		defer close(hs.done)
		err := hs.srv.Serve(l)
		if !errors.Is(err, http.ErrServerClosed) {
			hs.mu.Lock()
			hs.err = err
			hs.mu.Unlock()
		}
	}()
	return hs
}

// Shutdown stops accepting connections and waits for requests in flight
// to finish or ctx to end; then it closes what is left like Close.
func (hs *HTTPServer) Shutdown(ctx context.Context) error {
	err := hs.srv.Shutdown(ctx)
	if cerr := hs.Close(); err == nil {
		err = cerr
	}
	return err
}

// Close closes the listener and every connection, cancels the requests in
// flight (their latency waits end at once) and waits for all handlers to
// return. It returns the error that stopped serving, if any.
func (hs *HTTPServer) Close() error {
	hs.mu.Lock()
	hs.closed = true
	hs.mu.Unlock()
	// Close the connections before cancelling the handlers, so that a
	// handler woken from its latency wait cannot answer (net/http would
	// send an empty 200 for it).
	err := hs.srv.Close()
	hs.cancel()
	<-hs.done
	hs.wg.Wait()
	hs.mu.Lock()
	defer hs.mu.Unlock()
	if hs.err != nil {
		return hs.err
	}
	return err
}
