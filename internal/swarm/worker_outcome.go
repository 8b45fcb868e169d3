package swarm

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/apiary-dev/apiary/internal/board"
	"github.com/apiary-dev/apiary/internal/swarm/layout"
)

// Discarder is an Executor that can throw away the work of an attempt
// nobody will integrate (a speculative attempt that lost the race after
// pushing its candidate).
type Discarder interface {
	Discard(ctx context.Context, j *Job, c *layout.Candidate)
}

// record writes an attempt's outcome in one transaction fenced by its
// claim, which also ends the claim (Claim.ReleaseOp), its run marker, its
// inbox entry and its intent: done (its dependents promoted), put back or
// failed, a candidate for the merge role, or — for a speculative attempt —
// its part of the task's race. A record that moved under it (a
// speculative attempt started meanwhile) is read again. It reports whether
// the attempt succeeded, and the error that kept the outcome from being
// written. extra writes ride along (the worker's next claim requests).
func (h *hostState) record(ctx context.Context, j *Job, t board.Task, p *layout.Payload, out Outcome, err error, cancelled bool, extra ...board.Op) (bool, error) {
	failures := 0
	for try := 0; try < 20; try++ {
		var ok bool
		var rerr error
		if p.Live != nil || j.Slot > 0 || p.Spec != nil && p.Spec.N > 1 {
			ok, rerr = h.recordSpec(ctx, j, t, p, out, err, cancelled, extra)
		} else {
			ok, rerr = h.recordPlain(ctx, j, t, p, out, err, extra)
		}
		switch {
		case rerr == nil:
			return ok, nil
		case ctx.Err() != nil:
			return false, rerr
		case errors.Is(rerr, board.ErrRevisionMismatch):
		case errors.Is(rerr, layout.ErrLost) || failures >= 3:
			h.env.log.Warn("recording an attempt", "task", j.Claim.Task, "err", rerr)
			if !errors.Is(rerr, layout.ErrLost) {
				// Give the claim up, so that the shard's gatekeeper puts
				// the task back rather than it waiting for this host.
				_, _ = h.commit.Txn(ctx, board.Txn{If: []board.Cmp{j.Claim.Guard()}, Then: []board.Op{j.Claim.ReleaseOp()}})
			}
			return false, rerr
		default:
			// The outcome is unknown (a timeout on a loaded board): read
			// the record again; if the write went through, the claim's
			// guard refuses the next one.
			failures++
			select {
			case <-ctx.Done():
				return false, rerr
			case <-h.env.clock.After(time.Duration(failures) * 200 * time.Millisecond):
			}
		}
		var gerr error
		if t, gerr = h.env.st.Task(ctx, j.TaskID); gerr == nil {
			p, gerr = layout.DecodePayload(t)
		}
		if gerr != nil {
			h.env.log.Warn("reading a task to record its attempt", "task", j.TaskID, "err", gerr)
			return false, gerr
		}
	}
	return false, fmt.Errorf("task %s kept moving: %w", j.TaskID, board.ErrRevisionMismatch)
}

// recordPlain records the outcome of a task's only attempt.
func (h *hostState) recordPlain(ctx context.Context, j *Job, t board.Task, p *layout.Payload, out Outcome, err error, extra []board.Op) (bool, error) {
	st, run, cl := h.commit, h.env.run, j.Claim
	guards := []board.Cmp{cl.Guard()}
	end := append(layout.AttemptEnd(run.Run, p.Shard, h.env.host, cl), extra...)
	if out.Candidate == nil {
		p.Usage.Add(out.Usage) // a candidate carries it to the merge role
	}
	outcome := layout.SlotPassed
	if err != nil || out.Failed != "" || !out.Done && out.Candidate == nil {
		outcome = layout.SlotFailed
	}
	p.AddSpent(layout.AttemptSpend{Attempt: p.Name, Worker: j.Worker.ID, Profile: j.Worker.Profile, Model: run.ModelOf(j.Worker.Profile),
		Outcome: outcome, Usage: out.Usage})
	switch {
	case err != nil:
		_, err = layout.Requeue(ctx, st, run, t, p, err.Error(), guards, end...)
		return false, err
	case out.Failed != "":
		_, err = layout.Requeue(ctx, st, run, t, p, out.Failed, guards, end...)
		return false, err
	case out.Done:
		t.Status, t.Token = board.TaskDone, cl.Token
		_, err = layout.Settle(ctx, st, run, t, p, guards, end...)
		return err == nil, err
	case out.Candidate != nil:
		c := h.candidate(j, out)
		t.Token = j.Fence
		val, err := layout.EncodeTask(t, p)
		if err != nil {
			return false, err
		}
		ops := append([]board.Op{board.PutOp(board.TaskKey(t.ID), val, board.NoLease),
			board.PutOp(layout.CandKey(run.Run, t.ID), layout.MustJSON(c), board.NoLease)}, end...)
		_, err = layout.TxnGuarded(ctx, st, t, guards, nil, ops)
		return err == nil, err
	}
	_, err = layout.Requeue(ctx, st, run, t, p, "the executor reported nothing", guards, end...)
	return false, err
}

// candidate fills in the attempt's candidate for the merge role.
func (h *hostState) candidate(j *Job, out Outcome) *layout.Candidate {
	c := out.Candidate
	c.Task, c.Name, c.Worker, c.Token, c.Attempt, c.Declared = j.TaskID, j.Name, j.Worker.ID, j.Fence, j.Attempt, j.Declared
	c.Time, c.Usage = h.env.clock.Now().UTC(), out.Usage
	if j.Intent != nil {
		for _, k := range j.Intent.Changes {
			c.Changes = append(c.Changes, string(k))
		}
	}
	return c
}

// recordSpec records a speculative attempt's end on the task's record:
// its pass, failure or cancellation, and — when it decides the race or is
// the last attempt to end — what specEnd says follows. An attempt whose
// task has moved on (another claim, or settled) only adds its spend.
func (h *hostState) recordSpec(ctx context.Context, j *Job, t board.Task, p *layout.Payload, out Outcome, err error, cancelled bool, extra []board.Op) (bool, error) {
	st, run, cl := h.commit, h.env.run, j.Claim
	guards := []board.Cmp{cl.Guard()}
	end := append(append(layout.AttemptEnd(run.Run, p.Shard, h.env.host, cl), board.DeleteOp(layout.CancelKey(run.Run, h.env.host, cl.Task))), extra...)
	var c *layout.Candidate
	if out.Candidate != nil {
		c = h.candidate(j, out)
	}
	current := t.Status == board.TaskRunning && t.Token == 0 && layout.ClaimToken(t, p) == j.Fence
	if !current || j.Slot > 0 && (p.Live == nil || j.Slot >= len(p.Live.Slots)) {
		p.Usage.Add(out.Usage)
		val, err := layout.EncodeTask(t, p)
		if err != nil {
			return false, err
		}
		_, err = layout.TxnGuarded(ctx, st, t, guards, nil, append([]board.Op{board.PutOp(board.TaskKey(t.ID), val, board.NoLease)}, end...))
		if err == nil && c != nil {
			h.discard(ctx, j, c)
		}
		return false, err
	}
	var announced []int
	if p.Live == nil { // a quorum's first attempt ended before its gatekeeper started the others
		announced = layout.StartSpec(t, p, layout.RunMarker{Worker: j.Worker.ID, Host: h.env.host, Lease: cl.Lease}, false)
	}
	e := layout.SlotEnd{Slot: j.Slot, Profile: j.Worker.Profile, Usage: out.Usage, Cand: c}
	switch {
	case cancelled:
		e.State, e.Reason = layout.SlotCancelled, "cancelled: another attempt decided the race"
	case err != nil:
		e.State, e.Reason = layout.SlotFailed, err.Error()
	case out.Failed != "":
		e.State, e.Reason = layout.SlotFailed, out.Failed
	case out.Done:
		e.State, e.Done = layout.SlotPassed, true
	case c != nil:
		e.State = layout.SlotPassed
	default:
		e.State, e.Reason = layout.SlotFailed, "the executor reported nothing"
	}
	l := p.Live
	reason := e.Reason
	act, ops := layout.SpecEnd(run, &t, p, e)
	if l.Lost {
		reason = l.Reason
	}
	used := c != nil && e.State == layout.SlotPassed && len(l.Passed) > 0 && l.Passed[0] == j.Slot && !l.Lost
	ops = append(ops, end...)
	switch act {
	case layout.SpecSettle:
		t.Status = board.TaskDone
		_, err = layout.Settle(ctx, st, run, t, p, guards, ops...)
	case layout.SpecRequeue:
		_, err = layout.Requeue(ctx, st, run, t, p, reason, guards, ops...)
	default:
		var val []byte
		if val, err = layout.EncodeTask(t, p); err != nil {
			return false, err
		}
		if p.Live != nil {
			var still []int
			for _, s := range announced {
				if p.Live.Slots[s].State == layout.SlotAnnounced {
					still = append(still, s)
				}
			}
			ops = append(ops, layout.AnnounceOps(run.Run, t, p, val, still)...)
		}
		_, err = layout.TxnGuarded(ctx, st, t, guards, nil, append([]board.Op{board.PutOp(board.TaskKey(t.ID), val, board.NoLease)}, ops...))
	}
	if err != nil {
		return false, err
	}
	if c != nil && !used {
		h.discard(ctx, j, c)
	}
	if p.Live == nil && l.Won {
		for _, i := range l.Passed[1:] {
			if lc := l.Slots[i].Cand; lc != nil && i != j.Slot {
				h.discard(ctx, j, lc)
			}
		}
	}
	return e.State == layout.SlotPassed && used, nil
}

// discard throws away an unused candidate's work, if the executor can.
func (h *hostState) discard(ctx context.Context, j *Job, c *layout.Candidate) {
	if d, ok := h.cfg.Exec.(Discarder); ok && c.Branch != "" {
		d.Discard(ctx, j, c)
	}
}
