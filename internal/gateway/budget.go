package gateway

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"

	"github.com/apiary-dev/apiary/internal/llmapi"
	"github.com/apiary-dev/apiary/internal/sched"
)

// BudgetError is returned (and shown to the client in its provider's error
// shape) when a request does not fit an agent's or a key's budget. The
// request never reaches the upstream.
type BudgetError struct {
	Scope     string // "agent alice" or "key vk_0123abcd"
	Unit      string // "usd" or "tokens"
	Limit     int64  // micro-USD or tokens
	Spent     int64
	Reserved  int64
	Requested int64
}

// ErrBudgetExhausted matches every *BudgetError.
var ErrBudgetExhausted = errors.New("gateway: budget exhausted")

func (e *BudgetError) Error() string {
	f := func(v int64) string {
		if e.Unit == "usd" {
			return llmapi.MicroUSD(v).String()
		}
		return fmt.Sprintf("%d tokens", v)
	}
	return fmt.Sprintf("apiary budget exhausted: %s %s budget %s (spent %s, reserved by requests in flight %s, this request may need up to %s)",
		e.Scope, e.Unit, f(e.Limit), f(e.Spent), f(e.Reserved), f(e.Requested))
}

func (e *BudgetError) Unwrap() error { return ErrBudgetExhausted }

// account is the budgets of one agent or key; a nil budget is unlimited.
type account struct {
	usd    *sched.Budget
	tokens *sched.Budget
}

// budgets tracks spending per agent (from Config.Agents) and per virtual key
// (from the key's own budget). Spend recorded in the ledger before a restart
// is charged again at start, so a budget is never handed out twice.
type budgets struct {
	policies map[string]AgentPolicy

	mu         sync.Mutex
	agents     map[string]*account
	keys       map[string]*account
	spentAgent map[string]Spend
	spentKey   map[string]Spend
}

func newBudgets(ctx context.Context, db *sql.DB, restore bool, policies map[string]AgentPolicy) (*budgets, error) {
	b := &budgets{policies: policies, agents: map[string]*account{}, keys: map[string]*account{}}
	if db != nil && restore {
		var err error
		if b.spentAgent, err = SpendByAgent(ctx, db); err != nil {
			return nil, err
		}
		if b.spentKey, err = SpendByKey(ctx, db); err != nil {
			return nil, err
		}
	}
	return b, nil
}

func newAccount(usdLimit, tokenLimit int64, spent Spend) *account {
	a := &account{}
	if usdLimit > 0 {
		a.usd = preSpent(usdLimit, spent.MicroUSD)
	}
	if tokenLimit > 0 {
		a.tokens = preSpent(tokenLimit, spent.Tokens)
	}
	return a
}

// preSpent returns a budget of limit with spent already charged (capped at
// the limit).
func preSpent(limit, spent int64) *sched.Budget {
	b := sched.NewBudget(limit)
	if spent > 0 {
		if h, err := b.Reserve(min(spent, limit)); err == nil {
			h.Commit(min(spent, limit))
		}
	}
	return b
}

func (b *budgets) accountsFor(id *identity) (agent, key *account) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if p, ok := b.policies[id.agent]; ok && (p.BudgetMicroUSD > 0 || p.BudgetTokens > 0) {
		agent = b.agents[id.agent]
		if agent == nil {
			agent = newAccount(p.BudgetMicroUSD, p.BudgetTokens, b.spentAgent[id.agent])
			b.agents[id.agent] = agent
		}
	}
	if id.vkey != nil && (id.vkey.BudgetMicro > 0 || id.vkey.BudgetTokens > 0) {
		key = b.keys[id.keyID]
		if key == nil {
			key = newAccount(id.vkey.BudgetMicro, id.vkey.BudgetTokens, b.spentKey[id.keyID])
			b.keys[id.keyID] = key
		}
	}
	return agent, key
}

// holds are one request's reservations on every budget that applies.
type holds struct {
	h []*sched.Hold
	// unit per hold: true for USD, false for tokens.
	usd []bool
}

// reserve takes usd (micro) and tokens from the agent's and the key's
// budgets, all or nothing.
func (b *budgets) reserve(id *identity, usd, tokens int64) (*holds, error) {
	agent, key := b.accountsFor(id)
	hs := &holds{}
	try := func(bud *sched.Budget, amount int64, isUSD bool, scope string) error {
		if bud == nil {
			return nil
		}
		h, err := bud.Reserve(amount)
		if err != nil {
			var ee *sched.ExhaustedError
			if errors.As(err, &ee) {
				unit := "tokens"
				if isUSD {
					unit = "usd"
				}
				return &BudgetError{Scope: scope, Unit: unit, Limit: ee.Limit, Spent: ee.Spent, Reserved: ee.Reserved, Requested: ee.Requested}
			}
			return err
		}
		hs.h = append(hs.h, h)
		hs.usd = append(hs.usd, isUSD)
		return nil
	}
	for _, step := range []struct {
		acc   *account
		scope string
	}{{agent, "agent " + id.agent}, {key, "key " + id.keyID}} {
		if step.acc == nil {
			continue
		}
		if err := try(step.acc.usd, usd, true, step.scope); err != nil {
			hs.cancel()
			return nil, err
		}
		if err := try(step.acc.tokens, tokens, false, step.scope); err != nil {
			hs.cancel()
			return nil, err
		}
	}
	return hs, nil
}

// charge adds spend that was never reserved (a WebSocket response, metered
// as it ends) to every budget that applies. What does not fit a budget is
// its overrun, and the budget is left spent: the next reservation fails.
func (b *budgets) charge(id *identity, usd, tokens int64) {
	if hs, err := b.reserve(id, 0, 0); err == nil {
		hs.commit(usd, tokens)
	}
}

// commit settles every hold with the real spend.
func (hs *holds) commit(usd, tokens int64) {
	for i, h := range hs.h {
		if hs.usd[i] {
			h.Commit(usd)
		} else {
			h.Commit(tokens)
		}
	}
}

func (hs *holds) cancel() {
	for _, h := range hs.h {
		h.Cancel()
	}
}

// BudgetStatus is one budget as /_apiary/stats reports it.
type BudgetStatus struct {
	Scope     string `json:"scope"`
	Unit      string `json:"unit"`
	Limit     int64  `json:"limit"`
	Spent     int64  `json:"spent"`
	Reserved  int64  `json:"reserved"`
	Remaining int64  `json:"remaining"`
}

func (b *budgets) status() []BudgetStatus {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := []BudgetStatus{}
	add := func(scope string, a *account) {
		for _, x := range []struct {
			unit string
			bud  *sched.Budget
		}{{"usd", a.usd}, {"tokens", a.tokens}} {
			if x.bud == nil {
				continue
			}
			s := x.bud.Stats()
			out = append(out, BudgetStatus{Scope: scope, Unit: x.unit, Limit: s.Limit, Spent: s.Spent, Reserved: s.Reserved, Remaining: s.Remaining})
		}
	}
	for name, a := range b.agents {
		add("agent "+name, a)
	}
	for id, a := range b.keys {
		add("key "+id, a)
	}
	return out
}
