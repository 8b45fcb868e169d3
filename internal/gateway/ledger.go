package gateway

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver
)

// Row is one request as the ledger records it.
type Row struct {
	Time        time.Time
	RequestID   string
	Agent       string
	KeyID       string
	Upstream    string
	Provider    string
	Endpoint    string
	Model       string
	Stream      bool
	Status      int    // HTTP status the client saw
	Outcome     string // ok, upstream_error, budget_exhausted, rejected, client_cancelled, truncated, ...
	Attempts    int
	QueueWait   time.Duration
	TTFB        time.Duration
	Duration    time.Duration
	InputTokens int64
	// OutputTokens, CacheWriteTokens and CacheReadTokens complete the usage;
	// Estimated is set when the provider's final usage never arrived.
	OutputTokens     int64
	CacheWriteTokens int64
	CacheReadTokens  int64
	Estimated        bool
	MicroUSD         int64
	TraceID          string

	ack chan struct{} // set only on Flush's marker, which is not a row
}

// Ledger appends request rows to SQLite. Rows are queued and written in
// batches by one goroutine, so recording never waits on disk in the request
// path; Close writes everything still queued. A full queue blocks the
// recorder rather than drop a row.
type Ledger struct {
	db     *sql.DB
	insert *sql.Stmt // prepared once; each batch uses it in its transaction
	rows   chan Row
	done   chan struct{}
	mu     sync.Mutex // guards err
	err    error      // first write error, reported by Close
	once   sync.Once
}

const ledgerSchema = `
CREATE TABLE IF NOT EXISTS gateway_requests (
	id INTEGER PRIMARY KEY,
	ts TEXT NOT NULL,
	request_id TEXT NOT NULL,
	agent TEXT NOT NULL,
	key_id TEXT NOT NULL,
	upstream TEXT NOT NULL,
	provider TEXT NOT NULL,
	endpoint TEXT NOT NULL,
	model TEXT NOT NULL,
	stream INTEGER NOT NULL,
	status INTEGER NOT NULL,
	outcome TEXT NOT NULL,
	attempts INTEGER NOT NULL,
	queue_wait_ms REAL NOT NULL,
	ttfb_ms REAL NOT NULL,
	duration_ms REAL NOT NULL,
	input_tokens INTEGER NOT NULL,
	output_tokens INTEGER NOT NULL,
	cache_write_tokens INTEGER NOT NULL,
	cache_read_tokens INTEGER NOT NULL,
	usage_estimated INTEGER NOT NULL,
	usd_micro INTEGER NOT NULL,
	trace_id TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS gateway_requests_agent ON gateway_requests(agent);
CREATE INDEX IF NOT EXISTS gateway_requests_key ON gateway_requests(key_id);
CREATE TABLE IF NOT EXISTS gateway_keys (
	id TEXT PRIMARY KEY,
	key_hash TEXT NOT NULL UNIQUE,
	agent TEXT NOT NULL,
	budget_usd_micro INTEGER NOT NULL,
	budget_tokens INTEGER NOT NULL,
	priority INTEGER NOT NULL,
	created_at TEXT NOT NULL,
	revoked INTEGER NOT NULL DEFAULT 0
);
`

// OpenDB opens (creating if needed) the SQLite database at path in WAL mode
// with the gateway's tables.
func OpenDB(path string) (*sql.DB, error) {
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("gateway: ledger directory: %w", err)
		}
	}
	dsn := "file:" + path + "?_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)&_pragma=synchronous(NORMAL)&_pragma=foreign_keys(1)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("gateway: open ledger %s: %w", path, err)
	}
	if _, err := db.Exec(ledgerSchema); err != nil {
		db.Close()
		return nil, fmt.Errorf("gateway: ledger schema in %s: %w", path, err)
	}
	return db, nil
}

const insertRow = `INSERT INTO gateway_requests (ts, request_id, agent, key_id, upstream, provider, endpoint, model, stream, status, outcome, attempts, queue_wait_ms, ttfb_ms, duration_ms, input_tokens, output_tokens, cache_write_tokens, cache_read_tokens, usage_estimated, usd_micro, trace_id) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`

// ledgerLinger is how long the writer waits for more rows after the first
// of a batch: at a thousand requests a second a transaction then carries
// tens of rows instead of one. Close does not wait for it.
const ledgerLinger = 20 * time.Millisecond

// NewLedger starts a ledger writing to db. The caller keeps ownership of db
// and closes it after Ledger.Close.
func NewLedger(db *sql.DB) *Ledger {
	l := &Ledger{db: db, rows: make(chan Row, 4096), done: make(chan struct{})}
	if st, err := db.Prepare(insertRow); err == nil {
		l.insert = st
	} else {
		l.err = fmt.Errorf("gateway: ledger prepare: %w", err)
	}
	go l.run()
	return l
}

// Record queues a row. It must not be called after Close.
func (l *Ledger) Record(r Row) { l.rows <- r }

// Flush returns once every row recorded before it is written (or ctx ends).
// It must not be called after Close.
func (l *Ledger) Flush(ctx context.Context) error {
	ack := make(chan struct{})
	select {
	case l.rows <- Row{ack: ack}:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-ack:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close writes every queued row and stops the writer; it returns the first
// write error, if any.
func (l *Ledger) Close() error {
	l.once.Do(func() { close(l.rows) })
	<-l.done
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

func (l *Ledger) run() {
	defer close(l.done)
	if l.insert != nil {
		defer l.insert.Close()
	}
	batch := make([]Row, 0, 256)
	var acks []chan struct{}
	// add takes r into the batch, or a Flush's marker into acks; it reports
	// whether the batch must be written now.
	add := func(r Row) bool {
		if r.ack != nil {
			acks = append(acks, r.ack)
			return true
		}
		batch = append(batch, r)
		return len(batch) == cap(batch)
	}
	linger := time.NewTimer(ledgerLinger)
	for r := range l.rows {
		batch, acks = batch[:0], acks[:0]
		// Gather what arrives for a moment into the same transaction.
		now := add(r)
		linger.Reset(ledgerLinger)
	drain:
		for !now {
			select {
			case r, ok := <-l.rows:
				if !ok {
					break drain
				}
				now = add(r)
			case <-linger.C:
				break drain
			}
		}
		linger.Stop()
		if len(batch) > 0 {
			if err := l.write(batch); err != nil {
				l.mu.Lock()
				if l.err == nil {
					l.err = err
				}
				l.mu.Unlock()
			}
		}
		for _, a := range acks {
			close(a)
		}
	}
}

// KeyUsage is what the ledger holds for one virtual key.
type KeyUsage struct {
	Requests     int64
	InputTokens  int64 // including cache writes and reads
	OutputTokens int64
	MicroUSD     int64
}

// UsageOfKey sums the ledger rows of one virtual key (by its id). Call
// Ledger.Flush first to include requests just finished.
func UsageOfKey(ctx context.Context, db *sql.DB, keyID string) (KeyUsage, error) {
	var u KeyUsage
	err := db.QueryRowContext(ctx, `SELECT COUNT(*), COALESCE(SUM(input_tokens + cache_write_tokens + cache_read_tokens), 0), COALESCE(SUM(output_tokens), 0), COALESCE(SUM(usd_micro), 0) FROM gateway_requests WHERE key_id = ?`, keyID).
		Scan(&u.Requests, &u.InputTokens, &u.OutputTokens, &u.MicroUSD)
	if err != nil {
		return KeyUsage{}, fmt.Errorf("gateway: ledger usage of %s: %w", keyID, err)
	}
	return u, nil
}

func (l *Ledger) write(batch []Row) error {
	if l.insert == nil {
		return l.err
	}
	tx, err := l.db.Begin()
	if err != nil {
		return fmt.Errorf("gateway: ledger begin: %w", err)
	}
	stmt := tx.Stmt(l.insert)
	defer stmt.Close()
	for _, r := range batch {
		_, err := stmt.Exec(r.Time.UTC().Format(time.RFC3339Nano), r.RequestID, r.Agent, r.KeyID, r.Upstream, r.Provider, r.Endpoint, r.Model,
			b2i(r.Stream), r.Status, r.Outcome, r.Attempts, ms(r.QueueWait), ms(r.TTFB), ms(r.Duration),
			r.InputTokens, r.OutputTokens, r.CacheWriteTokens, r.CacheReadTokens, b2i(r.Estimated), r.MicroUSD, r.TraceID)
		if err != nil {
			tx.Rollback()
			return fmt.Errorf("gateway: ledger insert: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("gateway: ledger commit: %w", err)
	}
	return nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Spend is what an agent or key has consumed according to the ledger.
type Spend struct {
	Tokens   int64
	MicroUSD int64
}

// SpendByAgent sums every recorded request per agent, so budgets survive a
// gateway restart.
func SpendByAgent(ctx context.Context, db *sql.DB) (map[string]Spend, error) {
	return spendBy(ctx, db, "agent")
}

// SpendByKey sums every recorded request per key id.
func SpendByKey(ctx context.Context, db *sql.DB) (map[string]Spend, error) {
	return spendBy(ctx, db, "key_id")
}

func spendBy(ctx context.Context, db *sql.DB, col string) (map[string]Spend, error) {
	rows, err := db.QueryContext(ctx, `SELECT `+col+`, SUM(input_tokens + output_tokens + cache_write_tokens + cache_read_tokens), SUM(usd_micro) FROM gateway_requests GROUP BY `+col)
	if err != nil {
		return nil, fmt.Errorf("gateway: ledger spend: %w", err)
	}
	defer rows.Close()
	out := map[string]Spend{}
	for rows.Next() {
		var k string
		var s Spend
		if err := rows.Scan(&k, &s.Tokens, &s.MicroUSD); err != nil {
			return nil, fmt.Errorf("gateway: ledger spend: %w", err)
		}
		out[k] = s
	}
	return out, rows.Err()
}

// UsageRow is one line of `apiary gateway usage`.
type UsageRow struct {
	Group        string  `json:"group"`
	Requests     int64   `json:"requests"`
	Errors       int64   `json:"errors"`
	Attempts     int64   `json:"attempts"`
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	CacheTokens  int64   `json:"cache_tokens"`
	USD          float64 `json:"usd"`
	Estimated    int64   `json:"estimated_rows"`
}

// ErrBadGroup is returned by Usage for an unknown grouping.
var ErrBadGroup = errors.New("gateway: usage can be grouped by agent, model, upstream or key")

// Usage summarises the ledger grouped by agent, model, upstream or key.
func Usage(ctx context.Context, db *sql.DB, by string) ([]UsageRow, error) {
	col := map[string]string{"agent": "agent", "model": "model", "upstream": "upstream", "key": "key_id"}[by]
	if col == "" {
		return nil, fmt.Errorf("%w (got %q)", ErrBadGroup, by)
	}
	rows, err := db.QueryContext(ctx, `SELECT `+col+`, COUNT(*), SUM(outcome != 'ok'), SUM(attempts), SUM(input_tokens), SUM(output_tokens),
		SUM(cache_write_tokens + cache_read_tokens), SUM(usd_micro), SUM(usage_estimated)
		FROM gateway_requests GROUP BY `+col+` ORDER BY SUM(usd_micro) DESC, `+col)
	if err != nil {
		return nil, fmt.Errorf("gateway: usage: %w", err)
	}
	defer rows.Close()
	var out []UsageRow
	for rows.Next() {
		var u UsageRow
		var micro int64
		if err := rows.Scan(&u.Group, &u.Requests, &u.Errors, &u.Attempts, &u.InputTokens, &u.OutputTokens, &u.CacheTokens, &micro, &u.Estimated); err != nil {
			return nil, fmt.Errorf("gateway: usage: %w", err)
		}
		u.USD = float64(micro) / 1e6
		out = append(out, u)
	}
	return out, rows.Err()
}
