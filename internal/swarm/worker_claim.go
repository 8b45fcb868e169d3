package swarm

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path"
	"strings"
	"time"

	"github.com/apiary-dev/apiary/internal/board"
	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/swarm/layout"
	"github.com/apiary-dev/apiary/internal/swarm/policy"
)

// errStaleNote: an offer or open task's record moved since its note was
// written: the task was claimed another way, or put back.
var errStaleNote = errors.New("swarm: the task moved since it was offered")

// errClaimLost: an attempt's claim ended under it.
var errClaimLost = fmt.Errorf("claim lost: %w", layout.ErrLost)

// work runs one attempt for w: it takes the claim itself when the item
// is an offer or an open task, declares the intent, executes, and records
// the outcome — every write fenced by the claim. wctx, derived from ctx,
// is cancelled when a cancellation for the attempt arrives (a speculative
// attempt that lost); ctx ends when the host stops, and then nothing is
// recorded: the claim ends with the host's session and the shard's
// gatekeeper puts the task back.
func (h *hostState) work(ctx, wctx context.Context, w *hostWorker, it inboxItem) workResult {
	id := it.g.Task
	res := workResult{w: w, task: id}
	t, p, err := layout.DecodeRecord(it.g.Record, it.g.Rev)
	if err != nil {
		h.env.log.Warn("an unreadable grant", "task", id, "err", err)
		return res
	}
	res.tags = t.Tags
	var cl board.Claim
	if it.claimed {
		t.Revision = it.rev
		cl = board.Claim{Task: id, Agent: w.spec.ID, Score: it.g.Score, Lease: h.sess.Lease(), Shared: true, Token: it.rev}
	} else if cl, err = h.claimItself(ctx, w, it, &t, p); err != nil {
		h.env.log.Debug("taking an offered or open task", "task", id, "err", err)
		if errors.Is(err, errStaleNote) {
			res.stale = it.g.Rev
		}
		return res
	}
	res.ran = true
	job := &Job{Run: h.env.run, TaskID: t.ID, Name: p.Name, Attempt: t.Attempts, Slot: it.g.Slot, Fence: layout.ClaimToken(t, p),
		Envelope: p.Envelope, Tags: t.Tags, WorkS: p.WorkS, Worker: w.spec, Claim: cl}
	if job.Slot > 0 {
		if p.Live == nil || job.Slot >= len(p.Live.Slots) {
			h.env.log.Warn("a grant for an unknown attempt", "task", id)
			return res
		}
		if a := p.Live.Slots[job.Slot].Agent; a != "" {
			job.Worker.Profile = a
		}
	}
	if !h.env.run.Options.NoIntents && p.Envelope != nil {
		in, declared, err := h.declare(wctx, w, t, p, cl)
		if err != nil && ctx.Err() == nil && wctx.Err() == nil {
			h.record(ctx, job, t, p, Outcome{}, fmt.Errorf("declaring the intent: %w", err), false)
			return res
		}
		job.Intent, job.Declared = in, declared
	}
	if p.Envelope != nil {
		if hs, err := h.env.st.Hints(wctx, board.HintApproved); err == nil {
			job.Hints = hs
		}
	}
	out, err := h.cfg.Exec.Execute(wctx, job)
	if ctx.Err() != nil {
		return res
	}
	cancelled := wctx.Err() != nil
	next := h.freeSlot(ctx, w)
	res.freed = true
	var ok bool
	if ok, err = h.record(ctx, job, t, p, out, err, cancelled, next...); err != nil && len(next) > 0 {
		h.background(ctx, func() func() { return func() { h.unask(next) } })
	}
	res.ok = ok
	return res
}

// claimItself claims an offered or open task for w on the host's lease,
// moving its record from the revision the note carries, and deleting the
// note it came through — the same transaction a gatekeeper's decision is.
func (h *hostState) claimItself(ctx context.Context, w *hostWorker, it inboxItem, t *board.Task, p *layout.Payload) (board.Claim, error) {
	run, lease := h.env.run.Run, h.sess.Lease()
	if !strings.HasPrefix(it.via, layout.InboxPrefix(run, h.env.host)) {
		// An open task every host may be trying: a read first spares the
		// board the losers' transactions.
		if _, err := h.env.st.Get(ctx, board.ClaimKey(t.ID)); err == nil {
			return board.Claim{}, fmt.Errorf("task %s: %w", t.ID, board.ErrClaimed)
		}
	}
	m := layout.RunMarker{Worker: w.spec.ID, Host: h.env.host, Lease: lease, Spec: p.Spec}
	rev := t.Revision
	if err := layout.ClaimRecord(t, p, m); err != nil {
		return board.Claim{}, err
	}
	val, err := layout.EncodeTask(*t, p)
	if err != nil {
		return board.Claim{}, err
	}
	res, err := h.env.st.ClaimOn(ctx, []board.ClaimSpec{{Task: t.ID, Agent: w.spec.ID, Score: it.g.Score, Lease: lease}}, board.Txn{
		If: []board.Cmp{board.ModifiedAt(board.TaskKey(t.ID), rev)},
		// An offered task may have been opened meanwhile, and an open one
		// offered: whichever way it is claimed, both notes go.
		Then: []board.Op{board.PutOp(board.TaskKey(t.ID), val, board.NoLease),
			board.PutOp(layout.MarkerKey(run, it.g.Shard, t.ID), layout.MustJSON(m), board.NoLease),
			board.DeleteOp(layout.InboxKey(run, h.env.host, t.ID)), board.DeleteOp(layout.OpenKey(run, it.g.Shard, t.ID)),
			board.DeleteOp(layout.ReadyKey(run, it.g.Shard, t.ID))},
	})
	if err != nil {
		return board.Claim{}, err
	}
	if !res.Succeeded {
		if res.Current[1].ModRevision != rev {
			return board.Claim{}, fmt.Errorf("task %s: %w", t.ID, errStaleNote)
		}
		return board.Claim{}, fmt.Errorf("task %s: %w", t.ID, board.ErrClaimed)
	}
	t.Revision = res.Revision
	return res.Claims[0], nil
}

// intentOf derives an intent's action boundary from a write scope: the
// files it lists (ScopeFile) when every entry is a file, so two tasks
// writing different files of one directory do not overlap; the
// directories of its entries (ScopeDir) when one is a directory; or the
// whole repository. canNarrow reports whether a narrower intent could
// still be declared: file lists get ScopeFile at once, so it is false.
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
	if canNarrow {
		return files, board.ScopeFile, false
	}
	return files, board.ScopeDir, false
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
func (h *hostState) declare(ctx context.Context, w *hostWorker, t board.Task, p *layout.Payload, cl board.Claim) (*board.Intent, []string, error) {
	st, clock := h.env.st, h.env.clock
	files, level, canNarrow := intentOf(p.Envelope.Authority.WriteScope)
	in := board.Intent{Task: t.ID, Worker: w.spec.ID, Files: files, Scope: level,
		Changes: []board.ChangeKind{board.ChangeAdd, board.ChangeModify}, Risk: riskOf(level, len(files)), Deps: t.Deps, Lease: cl.Lease}
	maxWait := layout.Secs(h.env.run.Options.IntentWaitS)
	start := clock.Now()
	for {
		got, earlier, err := st.DeclareIntent(ctx, in)
		if err != nil {
			return nil, nil, err
		}
		if len(earlier) == 0 {
			return &got, nil, nil
		}
		sc := w.policy.Score("intent", policy.Snapshot{At: clock.Now(), Ready: 1, Idle: 1, Overlaps: len(earlier), Risk: in.Risk})
		switch w.policy.Overlap(sc, clock.Now().Sub(start), maxWait, canNarrow && in.Scope == board.ScopeDir) {
		case policy.OverlapWait:
			select {
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			case <-clock.After(250 * time.Millisecond):
			}
		case policy.OverlapNarrow:
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
				Then: []board.Op{board.PutOp(layout.DeclaredKey(h.env.run.Run, t.ID), layout.MustJSON(rec), board.NoLease)}})
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

func clamp01(x float64) float64 { return math.Max(0, math.Min(1, x)) }
