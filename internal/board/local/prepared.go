package local

import (
	"context"
	"database/sql"
	"errors"
	"sync"
)

// stmtCache holds one prepared statement per query text. SQLite spent more
// of a busy board's time parsing its handful of queries than running them;
// prepared on the pool, each statement is compiled once per connection
// that runs it (database/sql keeps those), in or out of a transaction.
type stmtCache struct {
	db *sql.DB
	mu sync.Mutex
	m  map[string]*sql.Stmt
}

func (c *stmtCache) get(ctx context.Context, q string) (*sql.Stmt, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st := c.m[q]; st != nil {
		return st, nil
	}
	st, err := c.db.PrepareContext(ctx, q)
	if err != nil {
		return nil, err
	}
	if c.m == nil {
		c.m = map[string]*sql.Stmt{}
	}
	c.m[q] = st
	return st, nil
}

func (c *stmtCache) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for _, st := range c.m {
		errs = append(errs, st.Close())
	}
	c.m = nil
	return errors.Join(errs...)
}

// prepared runs queries through the cache, inside tx or, when tx is nil,
// on the pool. A query that fails to prepare runs unprepared, which reports
// the same error.
type prepared struct {
	c  *stmtCache
	tx *sql.Tx
}

func (p prepared) stmt(ctx context.Context, q string) *sql.Stmt {
	st, err := p.c.get(ctx, q)
	if err != nil {
		return nil
	}
	if p.tx != nil {
		return p.tx.StmtContext(ctx, st)
	}
	return st
}

func (p prepared) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	if st := p.stmt(ctx, q); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	if p.tx != nil {
		return p.tx.QueryRowContext(ctx, q, args...)
	}
	return p.c.db.QueryRowContext(ctx, q, args...)
}

func (p prepared) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	if st := p.stmt(ctx, q); st != nil {
		return st.QueryContext(ctx, args...)
	}
	if p.tx != nil {
		return p.tx.QueryContext(ctx, q, args...)
	}
	return p.c.db.QueryContext(ctx, q, args...)
}

func (p prepared) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	if st := p.stmt(ctx, q); st != nil {
		return st.ExecContext(ctx, args...)
	}
	if p.tx != nil {
		return p.tx.ExecContext(ctx, q, args...)
	}
	return p.c.db.ExecContext(ctx, q, args...)
}
