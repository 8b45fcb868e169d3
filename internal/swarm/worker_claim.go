package swarm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/apiary-dev/apiary/internal/board"
	"github.com/apiary-dev/apiary/internal/envelope"
)

// Candidate is a worker's finished, gated work waiting for the merge role:
// a commit on a branch of the shared remote, made under the claim whose
// fencing token it carries.
type Candidate struct {
	// Usage is what the attempt that made it spent; the merge role adds it
	// to the task's when it settles the candidate.
	Usage    envelope.Usage `json:"usage,omitzero"`
	Task     string         `json:"task"` // board id
	Name     string         `json:"name"`
	Worker   string         `json:"worker"`
	Token    int64          `json:"token"`
	Attempt  int            `json:"attempt"`
	Base     string         `json:"base"`
	Commit   string         `json:"commit"`
	Branch   string         `json:"branch"` // full ref on the remote
	Paths    []string       `json:"paths"`
	Added    int            `json:"added"`
	Removed  int            `json:"removed"`
	Changes  []string       `json:"changes,omitempty"` // intent change kinds
	Declared []string       `json:"declared,omitempty"`
	Time     time.Time      `json:"time"`
	Revision int64          `json:"-"`
}

// Lines is the size of the change.
func (c *Candidate) Lines() int { return c.Added + c.Removed }

func readCandidate(ctx context.Context, st *board.Store, run, task string) (*Candidate, error) {
	kv, err := st.Get(ctx, candKey(run, task))
	if err != nil {
		return nil, err
	}
	return decodeCandidate(kv)
}

func decodeCandidate(kv board.KV) (*Candidate, error) {
	var c Candidate
	if err := json.Unmarshal(kv.Value, &c); err != nil {
		return nil, fmt.Errorf("%w: candidate %s: %v", ErrBadRun, kv.Key, err)
	}
	c.Revision = kv.ModRevision
	return &c, nil
}

// errClaimLost cancels an attempt whose claim lease lapsed.
var errClaimLost = fmt.Errorf("claim lease lost: %w", ErrLost)

// keepClaim renews the claim's lease every ttl/3 until ctx ends, and
// cancels ctx with errClaimLost once the lease is gone or a whole ttl has
// passed since the last renewal that went through. The returned channel
// closes when it has stopped.
func (h *hostState) keepClaim(ctx context.Context, cancel context.CancelCauseFunc, cl board.Claim, ttl time.Duration) <-chan struct{} {
	done := make(chan struct{})
	clock := h.env.clock
	go func() {
		defer close(done)
		deadline := clock.Now().Add(ttl)
		for {
			select {
			case <-ctx.Done():
				return
			case <-clock.After(max(ttl/3, 10*time.Millisecond)):
			}
			sent := clock.Now()
			rctx, rcancel := context.WithTimeout(ctx, ttl/2)
			err := h.env.st.Renew(rctx, cl.Lease)
			rcancel()
			switch {
			case err == nil:
				deadline = sent.Add(ttl)
			case errors.Is(err, board.ErrLeaseExpired), !clock.Now().Before(deadline):
				cancel(errClaimLost)
				return
			}
		}
	}()
	return done
}

// leaseOf is a task's claim lease.
func leaseOf(run *Record, p *swarmTask) time.Duration {
	if p.Envelope != nil && p.Envelope.LeaseS > 0 {
		return secs(p.Envelope.LeaseS)
	}
	return secs(run.Options.ClaimTTLS)
}

// work runs one attempt of task for w: claim, mark running, declare the
// intent, execute, and record the outcome — every write fenced by the claim.
func (h *hostState) work(ctx context.Context, w *hostWorker, task string, score float64, via string) workResult {
	res := workResult{w: w, task: task}
	st, run := h.env.st, h.env.run
	t, err := st.Task(ctx, task)
	if err != nil || t.Status != board.TaskReady {
		return res
	}
	res.tags = t.Tags
	p, err := decodePayload(t)
	if err != nil {
		return res
	}
	ttl := leaseOf(run, p)
	cl, err := st.Claim(ctx, task, w.spec.ID, score, ttl)
	if err != nil {
		return res // taken by someone else
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_ = st.Release(cctx, cl)
	}()
	if t, err = markRunning(ctx, st, run.Run, t, p, cl, w.spec.ID, via); err != nil {
		return res
	}
	res.ran = true
	wctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	kept := h.keepClaim(wctx, cancel, cl, ttl)
	job := &Job{Run: run, TaskID: task, Name: p.Name, Attempt: t.Attempts, Envelope: p.Envelope, Tags: t.Tags,
		WorkS: p.WorkS, Worker: w.spec, Claim: cl}
	if !run.Options.NoIntents && p.Envelope != nil {
		in, declared, err := h.declare(wctx, w, t, p, cl)
		if err != nil {
			cancel(nil)
			<-kept
			h.fail(ctx, t, p, cl, "declaring the intent: "+err.Error())
			return res
		}
		job.Intent, job.Declared = in, declared
	}
	if p.Envelope != nil {
		if hs, err := st.Hints(wctx, board.HintApproved); err == nil {
			job.Hints = hs
		}
	}
	out, err := h.cfg.Exec.Execute(wctx, job)
	lost := errors.Is(context.Cause(wctx), errClaimLost)
	cancel(nil)
	<-kept
	if out.Candidate == nil {
		p.Usage.Add(out.Usage) // a candidate carries it to the merge role
	}
	switch {
	case lost || ctx.Err() != nil:
		// The claim is gone (or we are stopping): the gatekeeper puts the
		// task back once the claim has lapsed.
		return res
	case err != nil:
		h.fail(ctx, t, p, cl, err.Error())
	case out.Failed != "":
		h.fail(ctx, t, p, cl, out.Failed)
	case out.Done:
		fin := finishedMarker(run.Run, p, t, cl)
		t.Status = board.TaskDone
		if _, err := settle(ctx, st, run, t, p, []board.Cmp{cl.Guard()}, fin); err != nil {
			h.env.log.Warn("recording a finished task", "task", task, "err", err)
			return res
		}
		res.ok = true
	case out.Candidate != nil:
		c := out.Candidate
		c.Task, c.Name, c.Worker, c.Token, c.Attempt, c.Declared = task, p.Name, w.spec.ID, cl.Token, t.Attempts, job.Declared
		c.Time, c.Usage = h.env.clock.Now().UTC(), out.Usage
		if job.Intent != nil {
			for _, k := range job.Intent.Changes {
				c.Changes = append(c.Changes, string(k))
			}
		}
		r, err := st.Txn(ctx, board.Txn{If: []board.Cmp{cl.Guard()}, Then: []board.Op{board.PutOp(candKey(run.Run, task), mustJSON(c), board.NoLease),
			finishedMarker(run.Run, p, t, cl)}})
		if err != nil || !r.Succeeded {
			h.env.log.Warn("recording a candidate", "task", task, "err", err)
			return res
		}
		res.ok = true
	default:
		h.fail(ctx, t, p, cl, "the executor reported nothing")
	}
	return res
}

// fail puts the task back (or fails it) after a failed attempt.
func (h *hostState) fail(ctx context.Context, t board.Task, p *swarmTask, cl board.Claim, reason string) {
	if _, err := requeue(ctx, h.env.st, h.env.run, t, p, reason, []board.Cmp{cl.Guard()}, finishedMarker(h.env.run.Run, p, t, cl)); err != nil {
		h.env.log.Warn("putting back a failed task", "task", t.ID, "err", err)
	}
}

// intentOf derives an intent's action boundary from a write scope: the
// directories of its entries (ScopeDir), or the whole repository.
// canNarrow is set when every entry is a file, so ScopeFile is possible.
func intentOf(scope []string) (files []string, level board.Scope, canNarrow bool) {
	canNarrow = len(scope) > 0
	for _, s := range scope {
		if s == "." || s == "" {
			return []string{"."}, board.ScopeRepo, false
		}
		if d, ok := strings.CutSuffix(s, "/"); ok {
			files = append(files, path.Join(d, "_"))
			canNarrow = false
			continue
		}
		files = append(files, s)
	}
	if len(files) == 0 {
		return []string{"."}, board.ScopeRepo, false
	}
	return files, board.ScopeDir, canNarrow
}

// riskOf estimates a change's risk from its boundary: wide scopes and many
// entries are riskier.
func riskOf(level board.Scope, n int) float64 {
	switch level {
	case board.ScopeRepo:
		return 1
	case board.ScopeDir:
		return clamp01(0.3 + 0.1*float64(n))
	}
	return clamp01(0.1 + 0.1*float64(n))
}

// declare records the attempt's intent and resolves overlaps with earlier
// intents as the policy says: wait for them to end, narrow the scope, or
// proceed with a declared conflict. It returns the intent and the tasks a
// conflict was declared with.
func (h *hostState) declare(ctx context.Context, w *hostWorker, t board.Task, p *swarmTask, cl board.Claim) (*board.Intent, []string, error) {
	st, clock := h.env.st, h.env.clock
	files, level, canNarrow := intentOf(p.Envelope.Authority.WriteScope)
	in := board.Intent{Task: t.ID, Worker: w.spec.ID, Files: files, Scope: level,
		Changes: []board.ChangeKind{board.ChangeAdd, board.ChangeModify}, Risk: riskOf(level, len(files)), Deps: t.Deps, Lease: cl.Lease}
	maxWait := secs(h.env.run.Options.IntentWaitS)
	start := clock.Now()
	for {
		got, earlier, err := st.DeclareIntent(ctx, in)
		if err != nil {
			return nil, nil, err
		}
		if len(earlier) == 0 {
			return &got, nil, nil
		}
		sc := w.policy.Score("intent", Snapshot{At: clock.Now(), Ready: 1, Idle: 1, Overlaps: len(earlier), Risk: in.Risk})
		switch w.policy.Overlap(sc, clock.Now().Sub(start), maxWait, canNarrow && in.Scope == board.ScopeDir) {
		case OverlapWait:
			select {
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			case <-clock.After(250 * time.Millisecond):
			}
		case OverlapNarrow:
			in.Scope = board.ScopeFile
			in.Risk = riskOf(board.ScopeFile, len(files))
			h.env.log.Info("intent narrowed", "task", t.ID, "worker", w.spec.ID)
		default:
			var tasks, paths []string
			for _, e := range earlier {
				tasks = append(tasks, e.Task)
				paths = append(paths, got.Overlap(e)...)
			}
			rec := map[string]any{"task": t.ID, "worker": w.spec.ID, "with": tasks, "paths": paths, "token": cl.Token}
			r, err := st.Txn(ctx, board.Txn{If: []board.Cmp{cl.Guard()},
				Then: []board.Op{board.PutOp(declaredKey(h.env.run.Run, t.ID), mustJSON(rec), board.NoLease)}})
			if err != nil {
				return nil, nil, err
			}
			if !r.Succeeded {
				return nil, nil, errClaimLost
			}
			h.env.log.Info("proceeding with a declared conflict", "task", t.ID, "with", tasks)
			return &got, tasks, nil
		}
	}
}

// envelopeFor builds the envelope of an attempt from the task's template.
func envelopeFor(j *Job, base, trace string) *envelope.Envelope {
	e := *j.Envelope
	e.RunID, e.Name = j.Run.Run, j.Name
	e.Inputs.Workspace = "git:" + base
	if trace != "" {
		e.Trace = &envelope.Trace{Traceparent: trace}
	}
	e.Agent = envelope.AgentRef{Profile: j.Worker.Profile}
	return &e
}
