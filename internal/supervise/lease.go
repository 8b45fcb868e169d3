package supervise

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"
)

// Lease is a time-bounded right to work on a key (a task), identified by
// its fencing token.
type Lease struct {
	Key    string
	Holder string // who holds it, for logs ("task-3 attempt 2")
	Fence  uint64 // monotonic across the Leases: a later grant has a larger one
	TTL    time.Duration
	// Expires is when the lease lapses unless renewed; zero while pinned.
	Expires time.Time
}

// Leases is a lease table with monotonic fencing tokens. A key may have
// several live leases at once (speculative attempts of one task); each is
// checked on its own. A fence is live from Grant until it lapses, is
// released, or is superseded by Seal; after that it is stale forever.
// Safe for concurrent use.
type Leases struct {
	now func() time.Time

	mu    sync.Mutex
	fence uint64                       // the last fence issued
	live  map[string]map[uint64]*Lease // key → fence → lease
	wake  chan struct{}                // nudges Watch when expiries change; never closed
}

// NewLeases returns an empty table whose first fence is last+1 (pass the
// highest fence recorded before a restart, so fences never repeat). now is
// the clock; nil is time.Now.
func NewLeases(now func() time.Time, last uint64) *Leases {
	if now == nil {
		now = time.Now
	}
	return &Leases{now: now, fence: last, live: map[string]map[uint64]*Lease{}, wake: make(chan struct{}, 1)}
}

// Grant issues a lease on key for ttl (> 0) with the next fencing token.
func (l *Leases) Grant(key, holder string, ttl time.Duration) (Lease, error) {
	if ttl <= 0 {
		return Lease{}, fmt.Errorf("%w: lease ttl %s", ErrInvalid, ttl)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.fence++
	ls := &Lease{Key: key, Holder: holder, Fence: l.fence, TTL: ttl, Expires: l.now().Add(ttl)}
	if l.live[key] == nil {
		l.live[key] = map[uint64]*Lease{}
	}
	l.live[key][ls.Fence] = ls
	l.nudge()
	return *ls, nil
}

// Renew extends a live lease by its TTL from now. ErrLapsed if it expired
// (Expired still reports it), ErrStaleFence if it is not live.
func (l *Leases) Renew(key string, fence uint64) (Lease, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ls, err := l.liveLocked(key, fence)
	if err != nil {
		return Lease{}, err
	}
	if !ls.Expires.IsZero() {
		ls.Expires = l.now().Add(ls.TTL)
		l.nudge()
	}
	return *ls, nil
}

// Pin keeps a live lease from lapsing: its holder's process is done and the
// runtime itself holds it now (through gates and integration). ErrLapsed or
// ErrStaleFence as Renew.
func (l *Leases) Pin(key string, fence uint64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	ls, err := l.liveLocked(key, fence)
	if err == nil {
		ls.Expires = time.Time{}
	}
	return err
}

// Check returns nil if fence is a live, unexpired lease on key, else
// ErrLapsed or ErrStaleFence. A writer acting for a holder calls it right
// before the side effect.
func (l *Leases) Check(key string, fence uint64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, err := l.liveLocked(key, fence)
	return err
}

func (l *Leases) liveLocked(key string, fence uint64) (*Lease, error) {
	ls := l.live[key][fence]
	if ls == nil {
		return nil, fmt.Errorf("%w: %s fence %d", ErrStaleFence, key, fence)
	}
	if !ls.Expires.IsZero() && !l.now().Before(ls.Expires) {
		// Left in place for Expired (and Watch) to report exactly once.
		return nil, fmt.Errorf("%w: %s fence %d", ErrLapsed, key, fence)
	}
	return ls, nil
}

// Release ends a lease; its fence is stale from now on. Releasing a fence
// that is not live does nothing.
func (l *Leases) Release(key string, fence uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.dropLocked(key, fence)
}

// Seal keeps fence as key's only live lease and ends every other one (the
// winner of a speculative race), returning those it ended.
func (l *Leases) Seal(key string, fence uint64) []Lease {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Lease
	for f, ls := range l.live[key] {
		if f != fence {
			out = append(out, *ls)
			l.dropLocked(key, f)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Fence < out[j].Fence })
	return out
}

func (l *Leases) dropLocked(key string, fence uint64) {
	if m := l.live[key]; m != nil {
		delete(m, fence)
		if len(m) == 0 {
			delete(l.live, key)
		}
	}
}

// Expired removes and returns every lease whose time is up at now, oldest
// expiry first. Their fences are stale from now on.
func (l *Leases) Expired() []Lease {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	var out []Lease
	for _, m := range l.live {
		for _, ls := range m {
			if !ls.Expires.IsZero() && !now.Before(ls.Expires) {
				out = append(out, *ls)
			}
		}
	}
	for _, ls := range out {
		l.dropLocked(ls.Key, ls.Fence)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Expires.Equal(out[j].Expires) {
			return out[i].Expires.Before(out[j].Expires)
		}
		return out[i].Fence < out[j].Fence
	})
	return out
}

// next returns the earliest expiry, zero if nothing can lapse.
func (l *Leases) next() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	var t time.Time
	for _, m := range l.live {
		for _, ls := range m {
			if !ls.Expires.IsZero() && (t.IsZero() || ls.Expires.Before(t)) {
				t = ls.Expires
			}
		}
	}
	return t
}

// LastFence returns the last fencing token issued.
func (l *Leases) LastFence() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.fence
}

// Live returns key's live leases, by fence.
func (l *Leases) Live(key string) []Lease {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Lease
	for _, ls := range l.live[key] {
		out = append(out, *ls)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Fence < out[j].Fence })
	return out
}

func (l *Leases) nudge() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// Watch calls onLapse for every lease that lapses, once each, from the
// calling goroutine, until ctx ends. It sleeps until the earliest expiry
// and wakes early when leases are granted or renewed. Run one Watch per
// Leases.
func (l *Leases) Watch(ctx context.Context, onLapse func(Lease)) {
	for {
		for _, ls := range l.Expired() {
			onLapse(ls)
		}
		var timer <-chan time.Time
		var t *time.Timer
		if next := l.next(); !next.IsZero() {
			t = time.NewTimer(max(next.Sub(l.now()), 0))
			timer = t.C
		}
		select {
		case <-ctx.Done():
		case <-l.wake:
		case <-timer:
		}
		if t != nil {
			t.Stop()
		}
		if ctx.Err() != nil {
			return
		}
	}
}

// Heartbeat renews lease (key, fence) every interval while alive reports
// true, until ctx ends (it returns nil) or the lease can no longer be
// renewed (it returns ErrLapsed or ErrStaleFence). A beat on which alive
// reports false is skipped: a holder that stopped making progress (a
// stopped process) lets its lease lapse. A nil alive is always true.
func (l *Leases) Heartbeat(ctx context.Context, key string, fence uint64, interval time.Duration, alive func() bool) error {
	if interval <= 0 {
		return fmt.Errorf("%w: heartbeat interval %s", ErrInvalid, interval)
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if alive != nil && !alive() {
			if err := l.Check(key, fence); err != nil {
				return err
			}
			continue
		}
		if _, err := l.Renew(key, fence); err != nil {
			return err
		}
	}
}
