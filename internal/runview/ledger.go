package runview

import (
	"context"
	"database/sql"
	"errors"
	"io/fs"
	"os"
	"strings"
	"sync"

	"github.com/apiary-dev/apiary/internal/dashboard"
	"github.com/apiary-dev/apiary/internal/gateway"
)

// The money the dashboard and top show comes from one place: the ledger
// of the run's gateway (.apiary/gateway.db), where every request of every
// attempt is recorded under the attempt's own key as it finishes — so a
// running task's spend is there before its attempt ends, and a cancelled
// or failed attempt's too. A run's attempts are the ledger's agents
// RUN/TASK/aN (the names the run gateway grants keys under).

// Ledger reads a repository's run gateway ledger. The database is
// opened when its file exists (never created: reading is not allowed to
// leave state behind) and kept open; inside `apiary run` it is the run's
// own, flushed before each read. Safe for concurrent use.
type Ledger struct {
	path  string
	flush func(context.Context) error // nil: another process writes it

	mu sync.Mutex
	db *sql.DB
}

// NewLedger reads the ledger at path.
func NewLedger(path string) *Ledger { return &Ledger{path: path} }

// InProcessLedger reads the ledger of a run gateway this process runs:
// db is its database, flush writes what it buffered. Close leaves db
// open (its owner closes it).
func InProcessLedger(db *sql.DB, flush func(context.Context) error) *Ledger {
	return &Ledger{db: db, flush: flush}
}

// open returns the database, nil when the file does not exist (yet).
func (l *Ledger) open() (*sql.DB, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.db != nil {
		return l.db, nil
	}
	if _, err := os.Stat(l.path); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	db, err := gateway.OpenDB(l.path)
	if err != nil {
		return nil, err
	}
	l.db = db
	return db, nil
}

// Close closes a database it opened.
func (l *Ledger) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.db == nil || l.flush != nil {
		return nil
	}
	err := l.db.Close()
	l.db = nil
	return err
}

// runSpend is what a run's attempts spent according to the ledger.
type runSpend struct {
	// Metered is set when the run's attempts had keys of this gateway:
	// then every figure below is the truth, zero included.
	Metered bool
	Tasks   map[string]dashboard.Usage // by task name (the planner's is "planner")
	Total   dashboard.Usage
	// Keys are the run's keys by id, with the agent each names.
	Keys map[string]gateway.VirtualKey
}

// spend reads run's spend; a nil result means the ledger does not exist.
func (l *Ledger) spend(ctx context.Context, run string) (*runSpend, error) {
	db, err := l.open()
	if db == nil || err != nil {
		return nil, err
	}
	if l.flush != nil {
		if err := l.flush(ctx); err != nil {
			return nil, err
		}
	}
	keys, err := gateway.ListKeys(ctx, db)
	if err != nil {
		return nil, err
	}
	rs := &runSpend{Tasks: map[string]dashboard.Usage{}, Keys: map[string]gateway.VirtualKey{}}
	prefix := run + "/"
	for _, k := range keys {
		if task, ok := attemptTask(k.Agent, prefix); ok {
			rs.Metered = true
			rs.Keys[k.ID] = k
			if _, seen := rs.Tasks[task]; !seen {
				rs.Tasks[task] = dashboard.Usage{Known: true}
			}
		}
	}
	if !rs.Metered {
		return rs, nil
	}
	rows, err := gateway.Usage(ctx, db, "agent")
	if err != nil {
		return nil, err
	}
	rs.Total.Known = true
	for _, r := range rows {
		task, ok := attemptTask(r.Group, prefix)
		if !ok {
			continue
		}
		u := rs.Tasks[task]
		// Input counts cache writes and reads, as the attempt's usage does.
		u.InputTokens += r.InputTokens + r.CacheTokens
		u.OutputTokens += r.OutputTokens
		u.USD += r.USD
		u.Known = true
		rs.Tasks[task] = u
		rs.Total.InputTokens += r.InputTokens + r.CacheTokens
		rs.Total.OutputTokens += r.OutputTokens
		rs.Total.USD += r.USD
	}
	return rs, nil
}

// attemptTask returns the task of an attempt's agent name RUN/TASK/aN.
func attemptTask(agent, runPrefix string) (string, bool) {
	rest, ok := strings.CutPrefix(agent, runPrefix)
	if !ok {
		return "", false
	}
	i := strings.LastIndexByte(rest, '/')
	if i <= 0 || !strings.HasPrefix(rest[i+1:], "a") {
		return "", false
	}
	return rest[:i], true
}

// applySpend makes a run's money the ledger's: every task's usage and the
// totals. Without a metered run, usage the report recorded stays, marked
// known only when something was measured.
func applySpend(r *dashboard.Run, rs *runSpend) {
	if rs == nil || !rs.Metered {
		known := func(u *dashboard.Usage) {
			u.Known = u.InputTokens+u.OutputTokens > 0 || u.USD > 0
		}
		for i := range r.Tasks {
			known(&r.Tasks[i].Usage)
		}
		if r.Planner != nil {
			known(&r.Planner.Usage)
		}
		known(&r.Totals.Usage)
		return
	}
	for i := range r.Tasks {
		r.Tasks[i].Usage = rs.Tasks[r.Tasks[i].ID]
		r.Tasks[i].Usage.Known = true
	}
	if r.Planner != nil {
		r.Planner.Usage = rs.Tasks[r.Planner.ID]
		r.Planner.Usage.Known = true
	}
	r.Totals.Usage = rs.Total
}

// keyAgents is a GatewaySource that names the agent of each key's budget
// from the ledger's keys (the gateway's stats name only the key).
type keyAgents struct {
	src    dashboard.GatewaySource
	ledger *Ledger
}

func (k keyAgents) Gateway(ctx context.Context) (dashboard.GatewaySnapshot, error) {
	snap, err := k.src.Gateway(ctx)
	if err != nil || len(snap.Budgets) == 0 {
		return snap, err
	}
	db, err := k.ledger.open()
	if db == nil || err != nil {
		return snap, nil
	}
	keys, err := gateway.ListKeys(ctx, db)
	if err != nil {
		return snap, nil
	}
	agent := make(map[string]string, len(keys))
	for _, key := range keys {
		agent[key.ID] = key.Agent
	}
	for i := range snap.Budgets {
		if b := &snap.Budgets[i]; b.Key != "" && b.Agent == "" {
			b.Agent = agent[b.Key]
		}
	}
	return snap, nil
}
