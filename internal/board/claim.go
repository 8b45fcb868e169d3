package board

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"time"
)

// Key prefixes of the records the Store keeps itself. Watch them to follow
// claims, tasks and the rest; write under them only through the Store's
// typed methods.
const (
	PrefixClaims    = "claims/"    // claims/<task>: the live claim, bound to its lease
	PrefixFences    = "fences/"    // fences/<task>: durable; ModRevision = newest token
	PrefixElections = "elections/" // elections/<role>/<lease>: candidates
	PrefixTasks     = "tasks/"     // tasks/<id>
	PrefixIntents   = "intents/"   // intents/<task>/<worker>
	PrefixConflicts = "conflicts/" // conflicts/<id>
	PrefixHints     = "hints/"     // hints/<conflict type>
)

// seg escapes one key segment so ids may hold any character, "/" included.
func seg(s string) string { return url.PathEscape(s) }

func claimKey(task string) string { return PrefixClaims + seg(task) }
func fenceKey(task string) string { return PrefixFences + seg(task) }

// Claim is an exclusive, leased hold on a task. Token is the fencing token:
// the store revision at which the claim was created — store-wide strictly
// increasing, so every later claim of any task has a larger one.
type Claim struct {
	Task  string  `json:"task"`
	Agent string  `json:"agent"`
	Score float64 `json:"score"`
	Lease LeaseID `json:"lease"`
	// Shared is set for a claim bound to a lease its holder uses for other
	// keys too (ClaimOn): releasing it deletes the claim, not the lease.
	Shared bool  `json:"shared,omitempty"`
	Token  int64 `json:"-"`
}

// Guard is the Txn comparison that holds exactly while this claim is the
// task's live claim; add it to a Txn to make a write fenced.
func (c Claim) Guard() Cmp { return CreatedAt(claimKey(c.Task), c.Token) }

// HeldBy is Claim.Guard for a task and token known only as values.
func HeldBy(task string, token int64) Cmp { return CreatedAt(claimKey(task), token) }

// FenceIs is the Txn comparison that holds while token is still the newest
// fencing token issued for task, whether or not its claim is still live.
func FenceIs(task string, token int64) Cmp { return ModifiedAt(fenceKey(task), token) }

func decodeClaim(kv KV) (Claim, error) {
	var c Claim
	if err := json.Unmarshal(kv.Value, &c); err != nil {
		return Claim{}, fmt.Errorf("board: claim record %q: %w", kv.Key, err)
	}
	c.Token = kv.CreateRevision
	return c, nil
}

// Claim takes an exclusive claim on task for agent, bound to a new lease of
// ttl that the holder must Renew. score (the agent's competence for the task)
// is recorded for arbiters. If another live claim exists Claim returns
// ErrClaimed, naming the holder. The claim ends on Release or when the lease
// lapses; the task can then be claimed again, with a larger token.
func (s *Store) Claim(ctx context.Context, task, agent string, score float64, ttl time.Duration) (Claim, error) {
	if task == "" || agent == "" {
		return Claim{}, fmt.Errorf("claim: empty task or agent: %w", ErrInvalid)
	}
	// A read first spares a contended claim the lease writes; the Txn
	// below stays the arbiter.
	if kv, err := s.Get(ctx, claimKey(task)); err == nil {
		return Claim{}, claimedError(task, kv)
	} else if !errors.Is(err, ErrNotFound) {
		return Claim{}, err
	}
	lease, err := s.Grant(ctx, ttl)
	if err != nil {
		return Claim{}, err
	}
	c := Claim{Task: task, Agent: agent, Score: score, Lease: lease}
	val, err := json.Marshal(c)
	if err != nil {
		return Claim{}, err
	}
	res, err := s.b.Txn(ctx, Txn{
		If:   []Cmp{Absent(claimKey(task))},
		Then: []Op{PutOp(claimKey(task), val, lease), PutOp(fenceKey(task), val, NoLease)},
	})
	if err != nil {
		// The outcome may be unknown (a connection lost mid-request): if the
		// claim key carries our lease, the claim went through.
		if kv, gerr := s.b.Get(ctx, claimKey(task)); gerr == nil && kv.Lease == lease {
			c.Token = kv.CreateRevision
			return c, nil
		}
		s.revokeQuietly(ctx, lease)
		return Claim{}, fmt.Errorf("claim %s: %w", task, err)
	}
	if !res.Succeeded {
		s.revokeQuietly(ctx, lease)
		return Claim{}, claimedError(task, res.Current[0])
	}
	c.Token = res.Revision
	return c, nil
}

// claimedError reports that kv, task's claim record, holds it.
func claimedError(task string, kv KV) error {
	holder, err := decodeClaim(kv)
	if err != nil {
		return fmt.Errorf("claim %s: %w", task, ErrClaimed)
	}
	return fmt.Errorf("claim %s: held by %s (token %d): %w", task, holder.Agent, holder.Token, ErrClaimed)
}

// cleanupTimeout bounds clean-up calls made after the caller's context may
// have ended (revoking a lease nobody will use, withdrawing a candidacy).
const cleanupTimeout = 5 * time.Second

// cleanupCtx returns a context for clean-up after ctx: not cancelled with it,
// but bounded.
func cleanupCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
}

// revokeQuietly revokes a lease this call granted and no longer needs; a
// failure only means it lapses by TTL instead.
func (s *Store) revokeQuietly(ctx context.Context, lease LeaseID) {
	ctx, cancel := cleanupCtx(ctx)
	defer cancel()
	_ = s.b.Revoke(ctx, lease)
}

// Holder returns task's live claim, or ErrNotFound.
func (s *Store) Holder(ctx context.Context, task string) (Claim, error) {
	kv, err := s.Get(ctx, claimKey(task))
	if err != nil {
		return Claim{}, err
	}
	return decodeClaim(kv)
}

// Release ends claim c. A claim with a lease of its own (Claim) ends by
// revoking the lease, which deletes the claim and every other key bound to
// it (the worker's intent, say); a newer claim is bound to another lease and
// is untouched. A claim on a shared lease (ClaimOn) ends by deleting the
// claim key alone, if the claim is still the live one; keys it shares the
// lease with stay. It returns ErrStaleFence if a newer claim holds the task
// (c's had already lapsed), ErrLeaseExpired if c lapsed and nobody has
// claimed since.
func (s *Store) Release(ctx context.Context, c Claim) error {
	if c.Shared {
		return s.releaseShared(ctx, c)
	}
	err := s.Revoke(ctx, c.Lease)
	if errors.Is(err, ErrLeaseExpired) {
		return s.fenceError(ctx, c.Task, c.Token)
	}
	return err
}

// CheckFence reports whether token is still the newest fencing token of task:
// nil if so (even if that claim has since been released or lapsed), and
// ErrStaleFence once a newer claim exists or if token was never issued for
// the task. An integrator calls it to reject a late writer's result.
func (s *Store) CheckFence(ctx context.Context, task string, token int64) error {
	kv, err := s.Get(ctx, fenceKey(task))
	if errors.Is(err, ErrNotFound) {
		return fmt.Errorf("task %s has no claim with token %d: %w", task, token, ErrStaleFence)
	}
	if err != nil {
		return err
	}
	switch {
	case kv.ModRevision == token:
		return nil
	case kv.ModRevision > token:
		return fmt.Errorf("task %s: token %d superseded by %d: %w", task, token, kv.ModRevision, ErrStaleFence)
	default:
		return fmt.Errorf("task %s: token %d was never issued (newest %d): %w", task, token, kv.ModRevision, ErrStaleFence)
	}
}

// fenceError explains why a write guarded by task's claim with token failed.
func (s *Store) fenceError(ctx context.Context, task string, token int64) error {
	if err := s.CheckFence(ctx, task, token); err != nil {
		return err
	}
	return fmt.Errorf("task %s: claim with token %d is no longer held: %w", task, token, ErrLeaseExpired)
}

// PutFenced writes key only while the claim on task with token is live. It
// returns the new revision; ErrStaleFence if a newer claim exists;
// ErrLeaseExpired if the claim lapsed or was released and none is newer.
func (s *Store) PutFenced(ctx context.Context, task string, token int64, key string, value []byte) (int64, error) {
	res, err := s.Txn(ctx, Txn{If: []Cmp{HeldBy(task, token)}, Then: []Op{PutOp(key, value, NoLease)}})
	if err != nil {
		return 0, err
	}
	if !res.Succeeded {
		return 0, s.fenceError(ctx, task, token)
	}
	return res.Revision, nil
}
