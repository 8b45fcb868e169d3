package local

import (
	"context"
	"database/sql"
	"errors"
	"sync/atomic"
)

// stmtCache holds a prepared statement for each of the board's queries.
// SQLite spent more of a busy board's time parsing its handful of queries
// than running them. They are prepared on the pool when the store opens —
// database/sql then compiles each once per connection that runs it, in or
// out of a transaction. Never later: preparing needs a free connection,
// and a reader holding one while it waits for another would deadlock the
// pool.
type stmtCache struct {
	db     *sql.DB
	m      map[string]*sql.Stmt // read-only once prepared
	misses atomic.Int64         // queries run unprepared (tests expect none)
}

func (c *stmtCache) prepare(ctx context.Context, qs []string) error {
	c.m = make(map[string]*sql.Stmt, len(qs))
	for _, q := range qs {
		st, err := c.db.PrepareContext(ctx, q)
		if err != nil {
			return errors.Join(err, c.close())
		}
		c.m[q] = st
	}
	return nil
}

func (c *stmtCache) close() error {
	var errs []error
	for _, st := range c.m {
		errs = append(errs, st.Close())
	}
	c.m = nil
	return errors.Join(errs...)
}

// prepared runs queries through the cache, inside tx or, when tx is nil,
// on the pool; a query the cache lacks runs unprepared.
type prepared struct {
	c  *stmtCache
	tx *sql.Tx
}

func (p prepared) stmt(ctx context.Context, q string) *sql.Stmt {
	st := p.c.m[q]
	if st == nil {
		p.c.misses.Add(1)
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
