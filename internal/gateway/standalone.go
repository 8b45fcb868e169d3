package gateway

import (
	"context"
	"net"
	"net/http"
	"time"
)

// Standalone opens the ledger at path (creating it if need be) and starts
// a gateway with cfg over it, as apiary gateway runs one: cfg.DB and
// cfg.Ledger are set, and cfg.RequireAPIKeys when the ledger holds active
// virtual keys (the gateway then substitutes real keys, and without one
// must not start: every such request would fail). closeAll closes the
// gateway, the ledger (whose error it returns) and the database.
func Standalone(ctx context.Context, cfg Config, path string) (g *Gateway, closeAll func() error, err error) {
	db, err := OpenDB(path)
	if err != nil {
		return nil, nil, err
	}
	if cfg.RequireAPIKeys, err = HasActiveKeys(ctx, db); err != nil {
		db.Close()
		return nil, nil, err
	}
	ledger := NewLedger(db)
	cfg.DB, cfg.Ledger = db, ledger
	if g, err = New(ctx, cfg); err != nil {
		ledger.Close()
		db.Close()
		return nil, nil, err
	}
	return g, func() error {
		_ = g.Close()
		err := ledger.Close()
		db.Close()
		return err
	}, nil
}

// ServeUntil serves h on l until ctx ends, then shuts the server down,
// waiting up to 10 seconds for requests in flight; it returns the error
// that ends serving sooner.
func ServeUntil(ctx context.Context, l net.Listener, h http.Handler) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 30 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	select {
	case <-ctx.Done():
	case err := <-errc:
		return err
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	<-errc // Serve has returned http.ErrServerClosed
	return nil
}
