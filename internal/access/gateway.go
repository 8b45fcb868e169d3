// Package access is how an attempt reaches the models
// (attempt.ModelAccess): directly, with one key for every attempt; through
// a run gateway started in-process, one virtual key per attempt carrying
// its budget and its usage read back from the gateway's ledger; or, for an
// evaluation, through a gateway per arm whose keys all draw on the arm's
// one budget.
package access

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/apiary-dev/apiary/internal/attempt"
	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/gateway"
	"github.com/apiary-dev/apiary/internal/rundir"
)

// Gateway is attempt.ModelAccess through a gateway started in-process for
// a run (StartGateway): every attempt gets its own virtual key carrying the task's
// budget, which the gateway maps to the real key (agents never see it), and
// the attempt's usage is read back from the gateway's ledger by key.
type Gateway struct {
	url    string // the gateway's base URL
	gw     *gateway.Gateway
	db     *sql.DB
	ledger *gateway.Ledger
	now    func() time.Time
}

var (
	_ attempt.ModelAccess   = (*Gateway)(nil)
	_ attempt.AccessRevoker = (*Gateway)(nil)
)

// Revoke ends an attempt's key: refused from now on, its requests in
// flight aborted upstream.
func (a *Gateway) Revoke(ctx context.Context, keyID string) error {
	_, err := a.gw.RevokeKey(ctx, keyID)
	return err
}

func (a *Gateway) Grant(ctx context.Context, ref attempt.TaskRef, b envelope.Budget) (attempt.Access, error) {
	task := ref.Task
	if task == "" {
		task = ref.Role
	}
	agent := ref.Run + "/" + task + "/a" + strconv.Itoa(ref.Attempt)
	var tokens int64
	if b.InputTokens > 0 && b.OutputTokens > 0 {
		tokens = b.InputTokens + b.OutputTokens
	}
	secret, k, err := gateway.CreateKey(ctx, a.db, agent, int64(math.Round(b.USD*1e6)), tokens, 0, a.now())
	if err != nil {
		return attempt.Access{}, err
	}
	return attempt.Access{BaseURL: a.url, APIKey: secret, KeyID: k.ID}, nil
}

// keyIdleWait bounds how long Usage waits for a key's last requests to be
// recorded; a request still served after it (an upstream that ignores the
// abort) is in the ledger later but not in this usage.
const keyIdleWait = 5 * time.Second

// Usage is what keyID spent according to the ledger. It first waits (up
// to keyIdleWait) until the gateway serves no request of the key, so a
// stream cut by the attempt's end counts: the attempt calls it after its
// agent exited and its key was revoked.
func (a *Gateway) Usage(ctx context.Context, keyID string) (attempt.Usage, error) {
	wctx, stop := context.WithTimeout(ctx, keyIdleWait)
	werr := a.gw.WaitKeyIdle(wctx, keyID)
	stop()
	if werr != nil && ctx.Err() != nil {
		return attempt.Usage{}, werr
	}
	if err := a.ledger.Flush(ctx); err != nil {
		return attempt.Usage{}, err
	}
	u, err := gateway.UsageOfKey(ctx, a.db, keyID)
	if err != nil {
		return attempt.Usage{}, err
	}
	return attempt.Usage{Known: true, InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, USD: float64(u.MicroUSD) / 1e6}, nil
}

// URL is the gateway's base URL.
func (a *Gateway) URL() string { return a.url }

// DB is the gateway's ledger database; the gateway owns it.
func (a *Gateway) DB() *sql.DB { return a.db }

// Flush writes the ledger rows the gateway buffered.
func (a *Gateway) Flush(ctx context.Context) error { return a.ledger.Flush(ctx) }

// DefaultModelURL is where a run's gateway sends the agents' requests when
// neither --model-url nor $ANTHROPIC_BASE_URL says otherwise.
const DefaultModelURL = "https://api.anthropic.com"

// StartGateway starts a gateway on loopback in front of upstream (with
// the real key), its virtual keys and ledger in ledgerPath, and returns the
// run's model access and a stop function that drains it and closes the
// ledger. Warnings go to logw.
func StartGateway(ctx context.Context, ledgerPath, upstream, key string, logw io.Writer) (*Gateway, func() error, error) {
	if upstream == "" {
		upstream = DefaultModelURL
	}
	db, err := gateway.OpenDB(ledgerPath)
	if err != nil {
		return nil, nil, err
	}
	ledger := gateway.NewLedger(db)
	g, err := gateway.New(ctx, gateway.Config{
		Upstreams: []gateway.Upstream{{Name: "models", URL: upstream, APIKey: key, APIKeyEnv: "APIARY_MODEL_KEY or ANTHROPIC_API_KEY"}},
		// Agents hold virtual keys only: without the real key every request
		// would fail (and agent CLIs retry for minutes), so refuse to start.
		RequireAPIKeys: true,
		DB:             db, Ledger: ledger,
		Logger: slog.New(slog.NewTextHandler(logw, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		ledger.Close()
		db.Close()
		var nk *gateway.NoKeyError
		if errors.As(err, &nk) {
			return nil, nil, nk
		}
		return nil, nil, fmt.Errorf("run gateway: %w", err)
	}
	url, drain, err := serveLoopback(g)
	if err != nil {
		g.Close()
		ledger.Close()
		db.Close()
		return nil, nil, err
	}
	stop := func() error {
		err := drain()
		for _, c := range []func() error{g.Close, ledger.Close, db.Close} {
			if cerr := c(); err == nil {
				err = cerr
			}
		}
		return err
	}
	return &Gateway{url: url, gw: g, db: db, ledger: ledger, now: time.Now}, stop, nil
}

// RunLedger is where a repository's run gateway keeps its keys and ledger
// (`apiary gateway usage --ledger` reads it).
func RunLedger(root string) string {
	return rundir.State(root, "gateway.db")
}

// Direct is attempt.ModelAccess without a gateway: every attempt gets the
// same base URL, and a key that is either Key or one derived from the task
// (KeyFor, when set); usage is unknown, so the run falls back on the
// agents' own reports. A Gateway replaces it with one virtual key per
// attempt and its ledger.
type Direct struct {
	BaseURL string
	Key     string
	KeyFor  func(attempt.TaskRef) string
}

var _ attempt.ModelAccess = Direct{}

func (d Direct) Grant(_ context.Context, ref attempt.TaskRef, _ envelope.Budget) (attempt.Access, error) {
	key := d.Key
	if d.KeyFor != nil {
		key = d.KeyFor(ref)
	}
	return attempt.Access{BaseURL: d.BaseURL, APIKey: key}, nil
}

func (d Direct) Usage(context.Context, string) (attempt.Usage, error) {
	return attempt.Usage{}, nil
}

// serveLoopback serves g on a free loopback port and returns its base URL
// and drain, which stops taking requests and waits (up to 10 s) for those
// in flight.
func serveLoopback(g *gateway.Gateway) (url string, drain func() error, err error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: g, ReadHeaderTimeout: 30 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	return "http://" + l.Addr().String(), func() error {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		err := srv.Shutdown(sctx)
		if serr := <-served; !errors.Is(serr, http.ErrServerClosed) && err == nil {
			err = serr
		}
		return err
	}, nil
}
