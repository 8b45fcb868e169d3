package board

import (
	"context"
	"sync/atomic"
	"time"
)

// Meter is a Backend that counts the calls made through it and the events
// its watches deliver, for measuring how much a protocol talks to the
// board: wrap a backend (board/local.OpenBackend, board/etcd.OpenBackend)
// in a Meter and build the Store on it with New. Every method delegates
// unchanged. A Meter is safe for concurrent use.
type Meter struct {
	b Backend
	n [numMeterOps]atomic.Int64
}

type meterOp int

const (
	opGet meterOp = iota
	opList
	opRevision
	opTxn
	opGrant
	opRenew
	opRevoke
	opWatch
	opEvent
	opCompact
	numMeterOps
)

// MeterCounts are the calls a Meter saw. Events counts the events watches
// delivered (one per key change per watch), Watches the watches started.
type MeterCounts struct {
	Get      int64 `json:"get"`
	List     int64 `json:"list"`
	Revision int64 `json:"revision"`
	Txn      int64 `json:"txn"`
	Grant    int64 `json:"grant"`
	Renew    int64 `json:"renew"`
	Revoke   int64 `json:"revoke"`
	Watches  int64 `json:"watches"`
	Events   int64 `json:"events"`
	Compact  int64 `json:"compact"`
}

// Messages is every request sent to the board plus every event it pushed
// back: the traffic a protocol costs.
func (c MeterCounts) Messages() int64 {
	return c.Get + c.List + c.Revision + c.Txn + c.Grant + c.Renew + c.Revoke + c.Watches + c.Events + c.Compact
}

// Writes counts the requests that may change the board.
func (c MeterCounts) Writes() int64 { return c.Txn + c.Grant + c.Renew + c.Revoke + c.Compact }

// Sub returns c minus d, field by field.
func (c MeterCounts) Sub(d MeterCounts) MeterCounts {
	return MeterCounts{Get: c.Get - d.Get, List: c.List - d.List, Revision: c.Revision - d.Revision, Txn: c.Txn - d.Txn,
		Grant: c.Grant - d.Grant, Renew: c.Renew - d.Renew, Revoke: c.Revoke - d.Revoke, Watches: c.Watches - d.Watches,
		Events: c.Events - d.Events, Compact: c.Compact - d.Compact}
}

// Add returns c plus d, field by field.
func (c MeterCounts) Add(d MeterCounts) MeterCounts {
	return MeterCounts{Get: c.Get + d.Get, List: c.List + d.List, Revision: c.Revision + d.Revision, Txn: c.Txn + d.Txn,
		Grant: c.Grant + d.Grant, Renew: c.Renew + d.Renew, Revoke: c.Revoke + d.Revoke, Watches: c.Watches + d.Watches,
		Events: c.Events + d.Events, Compact: c.Compact + d.Compact}
}

var _ Backend = (*Meter)(nil)

// NewMeter returns a Meter over b; closing the Meter closes b.
func NewMeter(b Backend) *Meter { return &Meter{b: b} }

// Counts returns the calls counted so far.
func (m *Meter) Counts() MeterCounts {
	return MeterCounts{Get: m.n[opGet].Load(), List: m.n[opList].Load(), Revision: m.n[opRevision].Load(),
		Txn: m.n[opTxn].Load(), Grant: m.n[opGrant].Load(), Renew: m.n[opRenew].Load(), Revoke: m.n[opRevoke].Load(),
		Watches: m.n[opWatch].Load(), Events: m.n[opEvent].Load(), Compact: m.n[opCompact].Load()}
}

// Get implements Backend.
func (m *Meter) Get(ctx context.Context, key string) (KV, error) {
	m.n[opGet].Add(1)
	return m.b.Get(ctx, key)
}

// List implements Backend.
func (m *Meter) List(ctx context.Context, prefix string) ([]KV, int64, error) {
	m.n[opList].Add(1)
	return m.b.List(ctx, prefix)
}

// Revision implements Backend.
func (m *Meter) Revision(ctx context.Context) (int64, error) {
	m.n[opRevision].Add(1)
	return m.b.Revision(ctx)
}

// Txn implements Backend.
func (m *Meter) Txn(ctx context.Context, t Txn) (TxnResult, error) {
	m.n[opTxn].Add(1)
	return m.b.Txn(ctx, t)
}

// Grant implements Backend.
func (m *Meter) Grant(ctx context.Context, ttl time.Duration) (LeaseID, error) {
	m.n[opGrant].Add(1)
	return m.b.Grant(ctx, ttl)
}

// Renew implements Backend.
func (m *Meter) Renew(ctx context.Context, id LeaseID) error {
	m.n[opRenew].Add(1)
	return m.b.Renew(ctx, id)
}

// Revoke implements Backend.
func (m *Meter) Revoke(ctx context.Context, id LeaseID) error {
	m.n[opRevoke].Add(1)
	return m.b.Revoke(ctx, id)
}

// Watch implements Backend, counting each delivered event.
func (m *Meter) Watch(ctx context.Context, prefix string, from int64, opts WatchOptions, yield func([]Event) bool) error {
	m.n[opWatch].Add(1)
	return m.b.Watch(ctx, prefix, from, opts, func(evs []Event) bool {
		m.n[opEvent].Add(int64(len(evs)))
		return yield(evs)
	})
}

// Compact implements Backend.
func (m *Meter) Compact(ctx context.Context, rev int64) error {
	m.n[opCompact].Add(1)
	return m.b.Compact(ctx, rev)
}

// Close implements Backend.
func (m *Meter) Close() error { return m.b.Close() }
