package board

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"sort"
	"sync"
	"time"
)

// Quota slices share one pool of per-window limits (an upstream API's
// requests and tokens per minute) among the members of a cluster — apiary
// gateways on several machines — so that their combined traffic never
// exceeds the pool while each member decides alone, without a round trip
// per request.
//
// The pool is one record, quota/<pool>/table, changed only by
// compare-and-swap; each member has an entry with its Slice (what it may
// send per window), its Demand, and a Hold. A member that shrinks its slice
// stops using the excess at once, locally, before it publishes the smaller
// slice, and its entry keeps the old value as a Hold until a whole window
// (plus a guard) has passed: traffic it sent under the old slice may still
// count in the upstream's current window, so nobody may take that capacity
// before then. Free capacity is the limit minus, for every member, the
// larger of its slice and its live hold; a member grows only into free
// capacity. So at every instant the capacity counted is at most the limit,
// and within any window no member sends more than the slice it held for
// that whole window.
//
// Liveness is a lease: each member renews its own and keeps
// quota/<pool>/live/<member> bound to it. A member whose lease lapsed
// (crashed, partitioned) is reclaimed by the others: its slice becomes a
// hold for a window. Its own side stops first: Slice reports nothing once a
// TTL has passed since the last renewal it sent, which is no later than the
// moment the store expires the lease.
//
// Targets are max-min fair on demand: every live member is guaranteed a
// small floor; demand above it is served smallest first; capacity nobody
// asked for stays free, so a member whose load grows takes it at once.

// QuotaVec is an amount per window in each sliced dimension.
type QuotaVec struct {
	Requests int64 `json:"requests"`
	Tokens   int64 `json:"tokens"`
}

func (v QuotaVec) dims() [2]int64 { return [2]int64{v.Requests, v.Tokens} }

func vecOf(d [2]int64) QuotaVec { return QuotaVec{Requests: d[0], Tokens: d[1]} }

func maxVec(a, b QuotaVec) QuotaVec {
	return QuotaVec{Requests: max(a.Requests, b.Requests), Tokens: max(a.Tokens, b.Tokens)}
}

// QuotaConfig describes a member joining a pool.
type QuotaConfig struct {
	// Pool names the shared limits (the upstream); Member this member.
	Pool, Member string
	// Limit is the pool's total per Window; a zero dimension is not sliced
	// (unlimited). Members configured differently share the smallest.
	Limit QuotaVec
	// Window is the limits' period (an RPM limit's minute).
	Window time.Duration
	// TTL is the member's lease; default 3s.
	TTL time.Duration
	// Interval is how often the member renews, publishes its demand and
	// rebalances; default min(TTL/3, Window/4), at least 20ms.
	Interval time.Duration
	// Guard is added to every hold, covering request latency and clock
	// skew between machines; default Window/10 clamped to [50ms, 2s].
	Guard time.Duration
}

// ErrQuota wraps every invalid QuotaConfig.
var ErrQuota = errors.New("board: invalid quota configuration")

func (c *QuotaConfig) defaults() error {
	switch {
	case c.Pool == "" || c.Member == "":
		return fmt.Errorf("%w: empty pool or member", ErrQuota)
	case c.Window <= 0:
		return fmt.Errorf("%w: window %v", ErrQuota, c.Window)
	case c.Limit.Requests < 0 || c.Limit.Tokens < 0:
		return fmt.Errorf("%w: negative limit", ErrQuota)
	}
	if c.TTL <= 0 {
		c.TTL = 3 * time.Second
	}
	if c.Interval <= 0 {
		c.Interval = max(min(c.TTL/3, c.Window/4), 20*time.Millisecond)
	}
	if c.Guard <= 0 {
		c.Guard = min(max(c.Window/10, 50*time.Millisecond), 2*time.Second)
	}
	return nil
}

func quotaPrefix(pool string) string          { return "quota/" + seg(pool) + "/" }
func quotaTableKey(pool string) string        { return quotaPrefix(pool) + "table" }
func quotaLiveKey(pool, member string) string { return quotaPrefix(pool) + "live/" + seg(member) }

// QuotaEntry is one member's line in a pool's table.
type QuotaEntry struct {
	Lease     LeaseID  `json:"lease"`
	Slice     QuotaVec `json:"slice"`
	Hold      QuotaVec `json:"hold"`
	HoldUntil int64    `json:"hold_until"` // unix ns; the hold counts before it
	Demand    QuotaVec `json:"demand"`
}

// counted is the capacity the entry occupies at now.
func (e *QuotaEntry) counted(now int64) QuotaVec {
	if now < e.HoldUntil {
		return maxVec(e.Slice, e.Hold)
	}
	return e.Slice
}

// QuotaTable is a pool's allocation record.
type QuotaTable struct {
	Limit   QuotaVec               `json:"limit"`
	Members map[string]*QuotaEntry `json:"members"`
}

// Free is the capacity no member occupies at now.
func (t *QuotaTable) Free(now time.Time) QuotaVec {
	used := t.Used(now)
	return QuotaVec{Requests: t.Limit.Requests - used.Requests, Tokens: t.Limit.Tokens - used.Tokens}
}

// Used is the capacity the members occupy at now: slices and live holds.
func (t *QuotaTable) Used(now time.Time) QuotaVec {
	var u QuotaVec
	for _, e := range t.Members {
		c := e.counted(now.UnixNano())
		u.Requests += c.Requests
		u.Tokens += c.Tokens
	}
	return u
}

// QuotaTable reads pool's table; ErrNotFound if nobody joined it yet.
func (s *Store) QuotaTable(ctx context.Context, pool string) (QuotaTable, error) {
	kv, err := s.Get(ctx, quotaTableKey(pool))
	if err != nil {
		return QuotaTable{}, err
	}
	var t QuotaTable
	if err := json.Unmarshal(kv.Value, &t); err != nil {
		return QuotaTable{}, fmt.Errorf("board: quota table %q: %w", pool, err)
	}
	return t, nil
}

// QuotaMember is this process's membership of a pool. Its goroutine renews
// the lease and rebalances until Close or the store's Close.
type QuotaMember struct {
	s   *Store
	cfg QuotaConfig

	mu         sync.Mutex
	lease      LeaseID
	validUntil time.Time // the slice may be used only before it
	slice      QuotaVec  // what this member uses now (never above its entry's)
	demand     QuotaVec
	published  QuotaVec // demand last written
	changes    int      // table writes made
	lastErr    error

	stop context.CancelFunc
	done chan struct{}
}

// JoinQuota makes this process a member of cfg.Pool. It starts with an
// empty slice and grows into free capacity as SetDemand asks.
func (s *Store) JoinQuota(ctx context.Context, cfg QuotaConfig) (*QuotaMember, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	m := &QuotaMember{s: s, cfg: cfg, done: make(chan struct{})}
	if err := m.join(ctx); err != nil {
		return nil, err
	}
	if !s.own() {
		return nil, ErrClosed
	}
	lctx, cancel := context.WithCancel(s.life)
	m.stop = cancel
	go func() {
		defer s.wg.Done()
		defer close(m.done)
		m.loop(lctx)
	}()
	return m, nil
}

// join grants a lease and binds the live key to it.
func (m *QuotaMember) join(ctx context.Context) error {
	sent := m.s.clock.Now()
	lease, err := m.s.Grant(ctx, m.cfg.TTL)
	if err != nil {
		return err
	}
	if _, err := m.s.Put(ctx, quotaLiveKey(m.cfg.Pool, m.cfg.Member), []byte(fmt.Sprint(int64(lease))), lease); err != nil {
		m.s.revokeQuietly(ctx, lease)
		return err
	}
	m.mu.Lock()
	m.lease, m.validUntil, m.slice = lease, sent.Add(m.cfg.TTL), QuotaVec{}
	m.mu.Unlock()
	return nil
}

// Slice returns what this member may send per window now, and false when it
// must send nothing (its lease is not surely held). Dimensions the pool
// does not limit read 0.
func (m *QuotaMember) Slice() (QuotaVec, bool) {
	now := m.s.clock.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if !now.Before(m.validUntil) {
		return QuotaVec{}, false
	}
	return m.slice, true
}

// SetDemand tells the member how much it would send per window (what it
// sent in the last window plus what is waiting); rebalancing uses it.
func (m *QuotaMember) SetDemand(d QuotaVec) {
	m.mu.Lock()
	m.demand = d
	m.mu.Unlock()
}

// QuotaStats describes a member for reports.
type QuotaStats struct {
	Pool      string   `json:"pool"`
	Member    string   `json:"member"`
	Live      bool     `json:"live"`
	Slice     QuotaVec `json:"slice"`
	Demand    QuotaVec `json:"demand"`
	Limit     QuotaVec `json:"limit"`
	Changes   int      `json:"changes"`
	LastError string   `json:"last_error,omitempty"`
}

// Stats returns the member's state.
func (m *QuotaMember) Stats() QuotaStats {
	sl, live := m.Slice()
	m.mu.Lock()
	defer m.mu.Unlock()
	st := QuotaStats{Pool: m.cfg.Pool, Member: m.cfg.Member, Live: live, Slice: sl, Demand: m.demand, Limit: m.cfg.Limit, Changes: m.changes}
	if m.lastErr != nil {
		st.LastError = m.lastErr.Error()
	}
	return st
}

// Close stops the member and revokes its lease; the others reclaim its
// slice after a hold.
func (m *QuotaMember) Close(ctx context.Context) error {
	m.stop()
	<-m.done
	m.mu.Lock()
	lease := m.lease
	m.validUntil = time.Time{}
	m.mu.Unlock()
	err := m.s.Revoke(ctx, lease)
	if errors.Is(err, ErrLeaseExpired) || errors.Is(err, ErrClosed) {
		return nil
	}
	return err
}

func (m *QuotaMember) loop(ctx context.Context) {
	clock := m.s.clock
	for {
		select {
		case <-ctx.Done():
			return
		case <-clock.After(m.cfg.Interval):
		}
		err := m.tick(ctx)
		m.mu.Lock()
		m.lastErr = err
		m.mu.Unlock()
	}
}

// tick renews the lease (re-joining after losing it) and rebalances once.
func (m *QuotaMember) tick(ctx context.Context) error {
	m.mu.Lock()
	lease := m.lease
	m.mu.Unlock()
	sent := m.s.clock.Now()
	rctx, cancel := context.WithTimeout(ctx, m.cfg.TTL)
	err := m.s.Renew(rctx, lease)
	cancel()
	switch {
	case errors.Is(err, ErrLeaseExpired):
		m.mu.Lock()
		m.validUntil, m.slice = time.Time{}, QuotaVec{}
		m.mu.Unlock()
		if err := m.join(ctx); err != nil {
			return err
		}
	case err != nil:
		return err // validUntil stays: the slice lapses a TTL after the last renewal
	default:
		m.mu.Lock()
		m.validUntil = sent.Add(m.cfg.TTL)
		m.mu.Unlock()
	}
	return m.rebalance(ctx)
}

// rebalance reads the pool, reclaims dead members, and moves this member's
// slice toward its fair target by one compare-and-swap.
func (m *QuotaMember) rebalance(ctx context.Context) error {
	kvs, _, err := m.s.List(ctx, quotaPrefix(m.cfg.Pool))
	if err != nil {
		return err
	}
	tkey := quotaTableKey(m.cfg.Pool)
	livePrefix := quotaPrefix(m.cfg.Pool) + "live/"
	var tab QuotaTable
	var tabRev int64
	live := map[string]LeaseID{}
	for _, kv := range kvs {
		switch {
		case kv.Key == tkey:
			if err := json.Unmarshal(kv.Value, &tab); err != nil {
				return fmt.Errorf("board: quota table %q: %w", m.cfg.Pool, err)
			}
			tabRev = kv.ModRevision
		case len(kv.Key) > len(livePrefix) && kv.Key[:len(livePrefix)] == livePrefix:
			live[unseg(kv.Key[len(livePrefix):])] = kv.Lease
		}
	}
	if tab.Members == nil {
		tab = QuotaTable{Limit: m.cfg.Limit, Members: map[string]*QuotaEntry{}}
	}
	m.mu.Lock()
	me := m.cfg.Member
	lease, demand, published, mine := m.lease, m.demand, m.published, m.slice
	m.mu.Unlock()
	nowT := m.s.clock.Now()
	now := nowT.UnixNano()
	holdEnd := nowT.Add(m.cfg.Window + m.cfg.Guard).UnixNano()
	changed := false
	// The pool's limit is the smallest any member was configured with.
	for i, l := range m.cfg.Limit.dims() {
		if d := tab.Limit.dims(); l > 0 && (d[i] == 0 || l < d[i]) {
			d[i] = l
			tab.Limit, changed = vecOf(d), true
		}
	}
	for id, e := range tab.Members {
		if id != me && live[id] != e.Lease {
			// Dead (or restarted under a new lease): its slice becomes a hold.
			if e.Slice != (QuotaVec{}) {
				e.Hold, e.Slice, e.HoldUntil, changed = maxVec(e.Hold, e.Slice), QuotaVec{}, max(e.HoldUntil, holdEnd), true
			}
			if e.Slice == (QuotaVec{}) && now >= e.HoldUntil {
				delete(tab.Members, id)
				changed = true
			}
			continue
		}
		if e.Hold != (QuotaVec{}) && now >= e.HoldUntil {
			e.Hold, e.HoldUntil, changed = QuotaVec{}, 0, true
		}
	}
	e := tab.Members[me]
	if e == nil {
		e = &QuotaEntry{Lease: lease}
		tab.Members[me], changed = e, true
	}
	if e.Lease != lease {
		// Our previous incarnation's slice may still be in flight.
		e.Hold, e.Slice, e.HoldUntil, e.Lease, changed = maxVec(e.Hold, e.Slice), QuotaVec{}, max(e.HoldUntil, holdEnd), lease, true
	}
	if moved(published, demand) {
		e.Demand, changed = demand, true
	}
	target := m.target(&tab, me, live)
	grow, shrink := false, false
	next := e.Slice.dims()
	free := tab.Free(nowT).dims()
	lim := tab.Limit.dims()
	for i, want := range target.dims() {
		switch cur := next[i]; {
		case lim[i] == 0:
			next[i] = 0
		case want < cur:
			next[i], shrink = want, true
		case want > cur && free[i] > 0:
			next[i], grow = cur+min(want-cur, free[i]), true
		}
	}
	if shrink {
		// Stop using the excess before anyone can see it is free.
		applied := vecOf(next)
		m.mu.Lock()
		m.slice = QuotaVec{Requests: min(m.slice.Requests, applied.Requests), Tokens: min(m.slice.Tokens, applied.Tokens)}
		m.mu.Unlock()
		e.Hold, e.HoldUntil = maxVec(e.Hold, e.Slice), max(e.HoldUntil, m.s.clock.Now().Add(m.cfg.Window+m.cfg.Guard).UnixNano())
	}
	if shrink || grow {
		e.Slice, changed = vecOf(next), true
	}
	if !changed {
		m.syncSlice(e.Slice, mine)
		return nil
	}
	val, err := json.Marshal(tab)
	if err != nil {
		return err
	}
	if _, err := m.s.CAS(ctx, tkey, val, tabRev, NoLease); err != nil {
		return err // retried next interval from a fresh read
	}
	m.mu.Lock()
	m.published = e.Demand
	m.changes++
	m.mu.Unlock()
	m.syncSlice(e.Slice, mine)
	return nil
}

// syncSlice makes the local slice the table's, once the table holds it.
func (m *QuotaMember) syncSlice(tableSlice, before QuotaVec) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.slice == before || m.slice.Requests <= tableSlice.Requests && m.slice.Tokens <= tableSlice.Tokens {
		m.slice = tableSlice
	}
}

// moved reports whether demand changed enough to be worth a write.
func moved(old, cur QuotaVec) bool {
	for i, o := range old.dims() {
		c := cur.dims()[i]
		d := c - o
		if d < 0 {
			d = -d
		}
		if d > 0 && (d*10 > o || o == 0) {
			return true
		}
	}
	return false
}

// target is member me's fair share of the pool among the live members.
func (m *QuotaMember) target(tab *QuotaTable, me string, live map[string]LeaseID) QuotaVec {
	ids := make([]string, 0, len(tab.Members))
	for id, e := range tab.Members {
		if id == me || live[id] == e.Lease {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	var out [2]int64
	for dim, limit := range tab.Limit.dims() {
		if limit == 0 {
			continue
		}
		demands := make([]int64, len(ids))
		for i, id := range ids {
			d := tab.Members[id].Demand.dims()[dim]
			if id == me {
				m.mu.Lock()
				d = m.demand.dims()[dim]
				m.mu.Unlock()
			}
			demands[i] = d + d/4 // headroom for growth
		}
		shares := FairShares(limit, demands)
		out[dim] = shares[slices.Index(ids, me)]
	}
	return vecOf(out)
}

// FairShares divides limit among members by demand, max-min fair: each gets
// a floor (a tenth of an equal share, at least 1 when limit allows), then
// demand above it is served smallest first; capacity nobody asked for is
// left unassigned.
func FairShares(limit int64, demands []int64) []int64 {
	n := int64(len(demands))
	out := make([]int64, n)
	if n == 0 || limit <= 0 {
		return out
	}
	floor := max(limit/(10*n), 1)
	if floor*n > limit {
		floor = limit / n
	}
	left := limit
	for i := range out {
		out[i] = floor
		left -= floor
	}
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return demands[order[a]] < demands[order[b]] })
	for k, i := range order {
		need := demands[i] - out[i]
		if need <= 0 {
			continue
		}
		fair := left / (n - int64(k))
		give := min(need, fair)
		out[i] += give
		left -= give
	}
	return out
}

// unseg reverses seg for keys the store wrote.
func unseg(s string) string {
	u, err := url.PathUnescape(s)
	if err != nil {
		return s
	}
	return u
}
