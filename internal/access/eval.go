package access

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"math"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/apiary-dev/apiary/internal/attempt"
	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/eval"
	"github.com/apiary-dev/apiary/internal/gateway"
	"github.com/apiary-dev/apiary/internal/llmapi"
)

// Eval is eval.Gateway: each arm gets a gateway of its own on
// loopback, in front of the same upstream, its keys and ledger in
// DIR/ARM/gateway.db. Every key of an arm belongs to one gateway agent,
// eval-ARM, whose budget is the arm's: that is the arm's one hard budget,
// which the gateway reserves against before it sends a request.
type Eval struct {
	Dir      string    // the evaluation's work directory
	Upstream string    // the model API's base URL
	Key      string    // the real key the gateway sends upstream
	Log      io.Writer // the gateways' warnings
}

var (
	_ eval.Gateway          = (*Eval)(nil)
	_ attempt.AccessRevoker = (*evalAccess)(nil)
)

// evalLedger is where arm's gateway keeps its keys and ledger.
func evalLedger(dir string, arm eval.Arm) string {
	return filepath.Join(dir, string(arm), "gateway.db")
}

// evalAgent is the gateway agent every key of arm belongs to.
func evalAgent(arm eval.Arm) string { return "eval-" + string(arm) }

func (g *Eval) Open(ctx context.Context, arm eval.Arm, b eval.Budget) (eval.Meter, error) {
	db, err := gateway.OpenDB(evalLedger(g.Dir, arm))
	if err != nil {
		return nil, err
	}
	ledger := gateway.NewLedger(db)
	agent := evalAgent(arm)
	gw, err := gateway.New(ctx, gateway.Config{
		Upstreams: []gateway.Upstream{{Name: "models", URL: g.Upstream, APIKey: g.Key}},
		Agents:    map[string]gateway.AgentPolicy{agent: {BudgetMicroUSD: int64(math.Round(b.USD * 1e6)), BudgetTokens: b.Tokens}},
		DB:        db, Ledger: ledger,
		Logger: slog.New(slog.NewTextHandler(g.Log, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		ledger.Close()
		db.Close()
		return nil, fmt.Errorf("the %s arm's gateway: %w", arm, err)
	}
	url, drain, err := serveLoopback(gw)
	if err != nil {
		gw.Close()
		ledger.Close()
		db.Close()
		return nil, err
	}
	m := &evalMeter{ledger: ledger, db: db, access: &evalAccess{agent: agent,
		Gateway: &Gateway{url: url, gw: gw, db: db, ledger: ledger, now: time.Now}}}
	m.drain = sync.OnceValue(drain)
	m.stop = func() error {
		err := m.drain()
		for _, c := range []func() error{gw.Close, ledger.Close, db.Close} {
			if cerr := c(); err == nil {
				err = cerr
			}
		}
		return err
	}
	return m, nil
}

// evalAccess is the model access of one arm: a Gateway's, except that
// every attempt's key belongs to the arm's gateway agent, so that all of
// them draw on the arm's one budget; each key also carries the attempt's
// own envelope budget.
type evalAccess struct {
	*Gateway
	agent string
}

func (a *evalAccess) Grant(ctx context.Context, ref attempt.TaskRef, b envelope.Budget) (attempt.Access, error) {
	var tokens int64
	if b.InputTokens > 0 && b.OutputTokens > 0 {
		tokens = b.InputTokens + b.OutputTokens
	}
	secret, k, err := gateway.CreateKey(ctx, a.db, a.agent, int64(math.Round(b.USD*1e6)), tokens, 0, a.now())
	if err != nil {
		return attempt.Access{}, err
	}
	return attempt.Access{BaseURL: a.url, APIKey: secret, KeyID: k.ID}, nil
}

// evalMeter is eval.Meter over one arm's gateway.
type evalMeter struct {
	access *evalAccess
	ledger *gateway.Ledger
	db     *sql.DB
	drain  func() error // stops taking requests, waits for those in flight
	stop   func() error

	once sync.Once
	err  error
}

func (m *evalMeter) Access() attempt.ModelAccess { return m.access }

func (m *evalMeter) Close() error {
	m.once.Do(func() { m.err = m.stop() })
	return m.err
}

// answeredByGateway reports whether a ledger outcome is that of a request
// the gateway answered itself, without sending it.
func answeredByGateway(outcome string) bool {
	switch outcome {
	case "budget_exhausted", "rejected", "no_route", "capability_denied":
		return true
	}
	return false
}

// Spend sums the arm's ledger: requests sent and refused, tokens and
// dollars, and the models named, with those the price table lacks. It
// first stops the gateway taking requests and waits for those in flight,
// whose rows the gateway writes as they end.
func (m *evalMeter) Spend(ctx context.Context) (eval.Spend, error) {
	if err := m.drain(); err != nil {
		return eval.Spend{}, fmt.Errorf("the arm's gateway: %w", err)
	}
	if err := m.ledger.Flush(ctx); err != nil {
		return eval.Spend{}, err
	}
	rows, err := m.db.QueryContext(ctx, `SELECT outcome, provider, model, COUNT(*),
		COALESCE(SUM(input_tokens + cache_write_tokens + cache_read_tokens), 0), COALESCE(SUM(output_tokens), 0), COALESCE(SUM(usd_micro), 0)
		FROM gateway_requests GROUP BY outcome, provider, model ORDER BY model`)
	if err != nil {
		return eval.Spend{}, fmt.Errorf("eval: the arm's ledger: %w", err)
	}
	defer rows.Close()
	var sp eval.Spend
	var micro int64
	prices := llmapi.DefaultPrices()
	for rows.Next() {
		var outcome, provider, model string
		var n int
		var in, out, usd int64
		if err := rows.Scan(&outcome, &provider, &model, &n, &in, &out, &usd); err != nil {
			return eval.Spend{}, fmt.Errorf("eval: the arm's ledger: %w", err)
		}
		if outcome == "budget_exhausted" {
			sp.Refused += n
		}
		if answeredByGateway(outcome) {
			continue
		}
		sp.Requests += n
		sp.InputTokens += in
		sp.OutputTokens += out
		micro += usd
		if !slices.Contains(sp.Models, model) {
			sp.Models = append(sp.Models, model)
			prov, perr := llmapi.ParseProvider(provider)
			if _, ok := prices.CostFor(prov, model, llmapi.Usage{}); perr != nil || !ok {
				sp.Unpriced = append(sp.Unpriced, model)
			}
		}
	}
	if err := rows.Err(); err != nil {
		return eval.Spend{}, fmt.Errorf("eval: the arm's ledger: %w", err)
	}
	sp.USD = float64(micro) / 1e6
	return sp, nil
}
