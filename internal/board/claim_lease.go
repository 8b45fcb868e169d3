package board

import (
	"context"
	"encoding/json"
	"fmt"
)

// Claims on a lease the holder already has.
//
// Claim grants a lease per claim: a claim costs a Grant and a Txn, keeping
// it costs a Renew every third of its TTL, and ending it a Revoke — four
// writes and more, per task. A host that works many tasks holds one lease
// for itself anyway (a Session); ClaimOn binds claims to that lease
// instead, so that claiming is one transaction, keeping every claim of the
// host alive is the session's one keep-alive, and ending a claim is a
// deletion inside the transaction that records the task's outcome
// (Claim.ReleaseOp). When the host dies its lease lapses and every claim
// bound to it goes at once, as its per-task leases would have.
//
// ClaimOn also takes several claims, and any other comparisons and writes,
// in one transaction: a scheduler or gatekeeper can claim tasks on behalf
// of the hosts it assigns them to, and move the tasks' records along, in a
// single write per decision batch.

// ClaimSpec is one claim of ClaimOn: Task for Agent, bound to Lease — the
// lease of the host Agent runs on (its Session's), which ClaimOn neither
// grants nor revokes.
type ClaimSpec struct {
	Task  string
	Agent string
	Score float64
	Lease LeaseID
}

// ClaimResult is ClaimOn's outcome. When Succeeded, Claims holds the new
// claims in the order asked, each with Token == Revision. When not, nothing
// was written: Taken holds the live claims that were in the way (none if
// only the caller's own comparisons failed), and Current the state of every
// compared key — the claim keys first, in the order asked, then t.If's.
type ClaimResult struct {
	TxnResult
	Claims []Claim
	Taken  []Claim
}

// ClaimOn makes every claim in specs, each bound to its lease (the caller's
// own, or the hosts' it assigns tasks to), in one transaction with t: the
// claims are made, and t.Then applied, only if every task is unclaimed and
// every comparison of t.If holds; otherwise nothing is written. Claims made
// in one transaction share its revision as their fencing token; each task's
// tokens still increase from claim to claim. It fails with ErrLeaseExpired,
// writing nothing, if a lease no longer exists, and with ErrInvalid for an
// empty or repeated task, an empty agent, NoLease, or a transaction over
// MaxTxnOps (a claim takes one comparison and two writes).
func (s *Store) ClaimOn(ctx context.Context, specs []ClaimSpec, t Txn) (ClaimResult, error) {
	if len(specs) == 0 {
		return ClaimResult{}, fmt.Errorf("claim: no tasks: %w", ErrInvalid)
	}
	claims := make([]Claim, len(specs))
	txn := Txn{If: make([]Cmp, 0, len(specs)+len(t.If)), Then: make([]Op, 0, 2*len(specs)+len(t.Then))}
	for i, sp := range specs {
		if sp.Task == "" || sp.Agent == "" {
			return ClaimResult{}, fmt.Errorf("claim: empty task or agent: %w", ErrInvalid)
		}
		if sp.Lease == NoLease {
			return ClaimResult{}, fmt.Errorf("claim %s on lease 0: %w", sp.Task, ErrInvalid)
		}
		claims[i] = Claim{Task: sp.Task, Agent: sp.Agent, Score: sp.Score, Lease: sp.Lease, Shared: true}
		val, err := json.Marshal(claims[i])
		if err != nil {
			return ClaimResult{}, err
		}
		txn.If = append(txn.If, Absent(claimKey(sp.Task)))
		txn.Then = append(txn.Then, PutOp(claimKey(sp.Task), val, sp.Lease), PutOp(fenceKey(sp.Task), val, NoLease))
	}
	txn.If = append(txn.If, t.If...)
	txn.Then = append(txn.Then, t.Then...)
	res, err := s.Txn(ctx, txn)
	if err != nil {
		return ClaimResult{}, fmt.Errorf("claim %s: %w", specs[0].Task, err)
	}
	out := ClaimResult{TxnResult: res}
	if !res.Succeeded {
		for i := range specs {
			if kv := res.Current[i]; kv.CreateRevision != 0 {
				holder, err := decodeClaim(kv)
				if err != nil {
					return out, err
				}
				out.Taken = append(out.Taken, holder)
			}
		}
		return out, nil
	}
	for i := range claims {
		claims[i].Token = res.Revision
	}
	out.Claims = claims
	return out, nil
}

// ClaimShared is ClaimOn for one task and nothing else: it returns the claim,
// or ErrClaimed naming the holder.
func (s *Store) ClaimShared(ctx context.Context, task, agent string, score float64, lease LeaseID) (Claim, error) {
	res, err := s.ClaimOn(ctx, []ClaimSpec{{Task: task, Agent: agent, Score: score, Lease: lease}}, Txn{})
	if err != nil {
		return Claim{}, err
	}
	if !res.Succeeded {
		return Claim{}, claimedError(task, res.Current[0])
	}
	return res.Claims[0], nil
}

// ReleaseOp is the write that ends claim c inside a transaction — the one
// that records the task's outcome, guarded by c.Guard(), so that the
// outcome and the release are one write. For a claim with a lease of its
// own (Claim), Release also revokes the lease; ending such a claim with
// ReleaseOp leaves its lease to lapse or be revoked.
func (c Claim) ReleaseOp() Op { return DeleteOp(claimKey(c.Task)) }

// releaseShared ends a claim bound to a shared lease: it deletes the claim
// key if the claim is still the live one, leaving the lease (and the other
// claims on it) alone.
func (s *Store) releaseShared(ctx context.Context, c Claim) error {
	res, err := s.Txn(ctx, Txn{If: []Cmp{c.Guard()}, Then: []Op{c.ReleaseOp()}})
	if err != nil {
		return err
	}
	if !res.Succeeded {
		return s.fenceError(ctx, c.Task, c.Token)
	}
	return nil
}
