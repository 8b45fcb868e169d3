package board

import (
	"context"
	"fmt"
	"time"
)

// An election picks one leader per named role (a shard's gatekeeper, the
// merge role). Each candidate writes elections/<role>/<lease> bound to its
// session's lease; the candidate whose key has the smallest CreateRevision
// leads, and each waiter watches only the candidate just ahead of it, so a
// departure wakes one waiter. A leader that stops renewing loses its key when
// the lease lapses, and the next candidate takes over.

func electionPrefix(role string) string { return PrefixElections + seg(role) + "/" }

// Leader describes the current leader of a role. Token is the CreateRevision
// of its candidate key: a fencing token for the role, larger for every later
// leader.
type Leader struct {
	Role  string
	ID    string
	Token int64
	Lease LeaseID
}

// Leadership is a won election. It ends on Resign, when its session's lease
// is lost (Done closes), or when the store closes.
type Leadership struct {
	Leader
	sess *Session
	key  string
}

// Done is closed when the leadership has ended; a leader checks it before
// every side effect.
func (l *Leadership) Done() <-chan struct{} { return l.sess.Done() }

// Context returns a context cancelled when the leadership ends.
func (l *Leadership) Context() context.Context { return l.sess.Context() }

// Guard is the Txn comparison that holds exactly while l still leads: add it
// to a Txn to fence the leader's writes.
func (l *Leadership) Guard() Cmp { return CreatedAt(l.key, l.Token) }

// Resign gives up the leadership (waking the next candidate) and revokes the
// session's lease.
func (l *Leadership) Resign(ctx context.Context) error {
	if _, err := l.sess.store.Txn(ctx, Txn{If: []Cmp{l.Guard()}, Then: []Op{DeleteOp(l.key)}}); err != nil {
		return err
	}
	return l.sess.Close(ctx)
}

// Campaign enters id as a candidate for role, on a new session with lease
// ttl kept alive by the store, and blocks until it leads. It returns
// ctx.Err() if ctx ends first (withdrawing the candidacy), or
// ErrLeaseExpired if the session's lease is lost while waiting.
func (s *Store) Campaign(ctx context.Context, role, id string, ttl time.Duration) (*Leadership, error) {
	if role == "" || id == "" {
		return nil, fmt.Errorf("campaign: empty role or id: %w", ErrInvalid)
	}
	sess, err := s.NewSession(ctx, ttl)
	if err != nil {
		return nil, err
	}
	key := fmt.Sprintf("%s%016x", electionPrefix(role), uint64(sess.Lease()))
	res, err := s.b.Txn(ctx, Txn{If: []Cmp{Absent(key)}, Then: []Op{PutOp(key, []byte(id), sess.Lease())}})
	if err == nil && !res.Succeeded {
		err = fmt.Errorf("campaign %s: candidate key %s exists", role, key)
	}
	if err != nil {
		cctx, cancel := cleanupCtx(ctx)
		defer cancel()
		_ = sess.Close(cctx)
		return nil, err
	}
	l := &Leadership{Leader: Leader{Role: role, ID: id, Token: res.Revision, Lease: sess.Lease()}, sess: sess, key: key}
	if err := s.waitForTurn(ctx, l); err != nil {
		cctx, cancel := cleanupCtx(ctx)
		defer cancel()
		_ = l.Resign(cctx)
		return nil, err
	}
	return l, nil
}

// waitForTurn blocks until l's candidate key is the oldest for its role.
func (s *Store) waitForTurn(ctx context.Context, l *Leadership) error {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(l.sess.Context(), cancel)()
	for {
		kvs, rev, err := s.b.List(wctx, electionPrefix(l.Role))
		if err != nil {
			return s.campaignError(ctx, l, err)
		}
		var ahead *KV
		mine := false
		for i := range kvs {
			kv := &kvs[i]
			if kv.Key == l.key {
				mine = kv.CreateRevision == l.Token
			} else if kv.CreateRevision < l.Token && (ahead == nil || kv.CreateRevision > ahead.CreateRevision) {
				ahead = kv
			}
		}
		if !mine {
			return fmt.Errorf("campaign %s: candidacy lost: %w", l.Role, ErrLeaseExpired)
		}
		if ahead == nil {
			return nil
		}
		gone := false
		// Only its deletion matters: its puts are never sent.
		err = s.b.Watch(wctx, ahead.Key, rev+1, WatchOptions{NoPut: true}, func(evs []Event) bool {
			for _, ev := range evs {
				if ev.Key == ahead.Key && ev.Type == EventDelete {
					gone = true
				}
			}
			return !gone
		})
		if !gone {
			return s.campaignError(ctx, l, err)
		}
	}
}

func (s *Store) campaignError(ctx context.Context, l *Leadership, err error) error {
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case l.sess.Err() != nil && !s.closed():
		return fmt.Errorf("campaign %s: %w", l.Role, l.sess.Err())
	case s.closed():
		return ErrClosed
	case err == nil:
		return fmt.Errorf("campaign %s: watch ended", l.Role)
	}
	return fmt.Errorf("campaign %s: %w", l.Role, err)
}

// Leader returns role's current leader, or ErrNotFound if nobody leads.
func (s *Store) Leader(ctx context.Context, role string) (Leader, error) {
	if role == "" {
		return Leader{}, fmt.Errorf("leader: empty role: %w", ErrInvalid)
	}
	kvs, _, err := s.b.List(ctx, electionPrefix(role))
	if err != nil {
		return Leader{}, err
	}
	var first *KV
	for i := range kvs {
		if first == nil || kvs[i].CreateRevision < first.CreateRevision {
			first = &kvs[i]
		}
	}
	if first == nil {
		return Leader{}, fmt.Errorf("role %s has no leader: %w", role, ErrNotFound)
	}
	return Leader{Role: role, ID: string(first.Value), Token: first.CreateRevision, Lease: first.Lease}, nil
}
