package cli

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

// gatewayAccess is attempt.ModelAccess through a gateway started in-process
// for the run: every attempt gets its own virtual key carrying the task's
// budget, which the gateway maps to the real key (agents never see it), and
// the attempt's usage is read back from the gateway's ledger by key.
type gatewayAccess struct {
	url    string // the gateway's base URL
	gw     *gateway.Gateway
	db     *sql.DB
	ledger *gateway.Ledger
	now    func() time.Time
}

var (
	_ attempt.ModelAccess   = (*gatewayAccess)(nil)
	_ attempt.AccessRevoker = (*gatewayAccess)(nil)
)

// Revoke ends an attempt's key: refused from now on, its requests in
// flight aborted upstream.
func (a *gatewayAccess) Revoke(ctx context.Context, keyID string) error {
	_, err := a.gw.RevokeKey(ctx, keyID)
	return err
}

func (a *gatewayAccess) Grant(ctx context.Context, ref attempt.TaskRef, b envelope.Budget) (attempt.Access, error) {
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

func (a *gatewayAccess) Usage(ctx context.Context, keyID string) (attempt.Usage, error) {
	if err := a.ledger.Flush(ctx); err != nil {
		return attempt.Usage{}, err
	}
	u, err := gateway.UsageOfKey(ctx, a.db, keyID)
	if err != nil {
		return attempt.Usage{}, err
	}
	return attempt.Usage{Known: true, InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, USD: float64(u.MicroUSD) / 1e6}, nil
}

// defaultModelURL is where a run's gateway sends the agents' requests when
// neither --model-url nor $ANTHROPIC_BASE_URL says otherwise.
const defaultModelURL = "https://api.anthropic.com"

// startRunGateway starts a gateway on loopback in front of upstream (with
// the real key), its virtual keys and ledger in ledgerPath, and returns the
// run's model access and a stop function that drains it and closes the
// ledger. Warnings go to logw.
func startRunGateway(ctx context.Context, ledgerPath, upstream, key string, logw io.Writer) (*gatewayAccess, func() error, error) {
	if upstream == "" {
		upstream = defaultModelURL
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
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		g.Close()
		ledger.Close()
		db.Close()
		return nil, nil, err
	}
	srv := &http.Server{Handler: g, ReadHeaderTimeout: 30 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	stop := func() error {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		err := srv.Shutdown(sctx)
		if serr := <-served; !errors.Is(serr, http.ErrServerClosed) && err == nil {
			err = serr
		}
		if cerr := g.Close(); err == nil {
			err = cerr
		}
		if cerr := ledger.Close(); err == nil {
			err = cerr
		}
		if cerr := db.Close(); err == nil {
			err = cerr
		}
		return err
	}
	return &gatewayAccess{url: "http://" + l.Addr().String(), gw: g, db: db, ledger: ledger, now: time.Now}, stop, nil
}

// runGatewayLedger is where a repository's run gateway keeps its keys and
// ledger (`apiary gateway usage --ledger` reads it).
func runGatewayLedger(root string) string {
	return rundir.State(root, "gateway.db")
}
