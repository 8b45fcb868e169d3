package layout

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/apiary-dev/apiary/internal/attempt"
	"github.com/apiary-dev/apiary/internal/board"
	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/supervise"
)

// Speculative attempts in swarm mode, as in a local run: a quorum task
// (quorum: {n, k}) runs n attempts at once and continues once k passed; a
// hedged task (hedge_after_s, hedge_agent, or the run's hedge default)
// gets a second attempt — with hedge_agent's profile if set — when its
// first is still running after hedge_after_s, or at the p90 of the attempt
// times its shard has seen. The first attempt to pass is the one
// integrated; the others are cancelled, and what they spent is added to
// the task's.
//
// Every attempt is fenced by the task's claim: attempt 0 holds it, and the
// others (slots 1, 2, ...) run under its token too — their commits carry it
// and their candidate is the task's — with a claim of their own on
// TASK~SLOT (their host's lease) that says they are alive. The task's
// Record keeps the attempts (payload.Live) and is the arbiter: each
// attempt records its outcome by compare-and-swap on it, guarded by its own
// claim. The task's outcome (the candidate for the merge role, or done, or
// put back) is written when the last running attempt has ended, so that
// the task is never settled before every attempt's spend is in it.
// decision: D-7

// Speculation is a task's plan policy for speculative attempts.
type Speculation struct {
	N           int     `json:"n,omitempty"` // quorum: attempts at once (n > 1)
	K           int     `json:"k,omitempty"` // quorum: passes needed
	HedgeAfterS float64 `json:"hedge_after_s,omitempty"`
	HedgeAgent  string  `json:"hedge_agent,omitempty"`
	// HedgeAt hedges at all; FallbackS is the hedge's delay while the
	// shard has seen too few attempt times for a quantile (a task that
	// names only a hedge_agent).
	Hedge     bool    `json:"hedge,omitempty"`
	FallbackS float64 `json:"fallback_s,omitempty"`
}

// SpecFor is the speculation policy of a plan task with these fields
// (hedgeDefault is the run's hedge_after default, 0 for none); nil when it
// has none.
func SpecFor(hedgeAfterS float64, hedgeAgent string, quorumN, quorumK int, estimateS, hedgeDefault float64) *Speculation {
	s := &Speculation{HedgeAfterS: hedgeAfterS, HedgeAgent: hedgeAgent}
	if quorumN > 1 {
		s.N, s.K = quorumN, max(quorumK, 1)
	}
	if s.HedgeAfterS <= 0 && s.HedgeAgent == "" && s.N == 0 {
		s.HedgeAfterS = hedgeDefault
	}
	s.Hedge = s.HedgeAfterS > 0 || s.HedgeAgent != ""
	if s.Hedge && s.HedgeAfterS <= 0 {
		s.FallbackS = 1.5 * estimateS
	}
	if !s.Hedge && s.N == 0 {
		return nil
	}
	return s
}

// Delay is when, after the first attempt started, the next attempts are
// due: at once for a quorum, at the hedge's delay otherwise.
func (s *Speculation) Delay(obs *supervise.Durations) (time.Duration, bool) {
	if s.N > 1 {
		return 0, true
	}
	return s.HedgeDelay(obs)
}

func (s *Speculation) HedgeDelay(obs *supervise.Durations) (time.Duration, bool) {
	if !s.Hedge {
		return 0, false
	}
	return supervise.Hedge{After: Secs(s.HedgeAfterS), Fallback: Secs(s.FallbackS)}.Delay(obs)
}

// Slot states.
const (
	SlotAnnounced = "announced" // waiting for a worker
	SlotRunning   = "running"
	SlotPassed    = "passed"
	SlotFailed    = "failed"
	SlotCancelled = "cancelled" // lost the race, or announced and withdrawn
)

// specState is the speculative attempts of a task's current claim.
type specState struct {
	// Token is the task's claim: every attempt works under it. 0 until
	// the record is first written after the claim, whose revision it is.
	Token int64      `json:"token,omitempty"`
	K     int        `json:"k"`
	Slots []specSlot `json:"slots"`
	// Hedged: the hedge was started; Passed, the slots that passed in
	// order; Won, the quorum was reached (the first of Passed is
	// integrated) — or Lost, it no longer can be.
	Hedged bool   `json:"hedged,omitempty"`
	Passed []int  `json:"passed,omitempty"`
	Won    bool   `json:"won,omitempty"`
	Lost   bool   `json:"lost,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// specSlot is one attempt.
type specSlot struct {
	State  string        `json:"state"`
	Worker string        `json:"worker,omitempty"`
	Host   string        `json:"host,omitempty"`
	Lease  board.LeaseID `json:"lease,omitempty"`
	Agent  string        `json:"agent,omitempty"` // the profile it runs (a hedge_agent)
	// Cand is a passed attempt's work until the task's outcome is
	// written; Done a passed attempt with nothing to integrate.
	Cand *Candidate `json:"cand,omitempty"`
	Done bool       `json:"done,omitempty"`
}

// slotID is the claim id of a task's speculative attempt (slot 0 is the
// task's own).
func slotID(task string, slot int) string {
	if slot == 0 {
		return task
	}
	return task + "~" + strconv.Itoa(slot)
}

// ParentOf splits a claim id into its task and slot.
func ParentOf(id string) (string, int) {
	i := strings.LastIndexByte(id, '~')
	if i < 0 {
		return id, 0
	}
	n, err := strconv.Atoi(id[i+1:])
	if err != nil || n <= 0 {
		return id, 0
	}
	return id[:i], n
}

// fix records the claim's token (the record's revision, while nothing
// was written since the claim) before the record is written again.
func (l *specState) fix(t board.Task) {
	if l != nil && l.Token == 0 {
		l.Token = t.Revision
	}
}

// Open reports whether slot is announced and unclaimed.
func (l *specState) Open(slot int) bool {
	return l != nil && !l.Won && !l.Lost && slot < len(l.Slots) && l.Slots[slot].State == SlotAnnounced
}

// claim moves an announced slot to running for m's worker.
func (l *specState) claim(m RunMarker) error {
	if !l.Open(m.Slot) {
		return fmt.Errorf("%w: attempt %d is not open", ErrBadRun, m.Slot)
	}
	s := &l.Slots[m.Slot]
	s.State, s.Worker, s.Host, s.Lease = SlotRunning, m.Worker, m.Host, m.Lease
	return nil
}

// AnyHeld reports whether a speculative attempt of task other than slot
// 0 still holds its claim.
func (l *specState) AnyHeld(task string, held map[string]bool) bool {
	if l == nil {
		return false
	}
	for i := range l.Slots {
		if i > 0 && held[slotID(task, i)] {
			return true
		}
	}
	return false
}

// running counts the attempts still running.
func (l *specState) running() int {
	n := 0
	for _, s := range l.Slots {
		if s.State == SlotRunning {
			n++
		}
	}
	return n
}

// StartSpec opens the speculative attempts due now on a running task's
// record (its first attempt is the run marker m): a quorum's other
// attempts, or the hedge. It returns the slots announced.
func StartSpec(t board.Task, p *Payload, m RunMarker, hedge bool) []int {
	sp := p.Spec
	if p.Live == nil {
		p.Live = &specState{K: 1, Slots: []specSlot{{State: SlotRunning, Worker: m.Worker, Host: m.Host, Lease: m.Lease}}}
		if sp.N > 1 {
			p.Live.K = sp.K
		}
	}
	l := p.Live
	l.fix(t)
	var out []int
	for len(l.Slots) < sp.N {
		out = append(out, len(l.Slots))
		l.Slots = append(l.Slots, specSlot{State: SlotAnnounced})
	}
	if hedge && sp.Hedge && !l.Hedged {
		l.Hedged = true
		out = append(out, len(l.Slots))
		l.Slots = append(l.Slots, specSlot{State: SlotAnnounced, Agent: sp.HedgeAgent})
	}
	return out
}

// AnnounceOps are the announcements of a task's new speculative attempts,
// written with its record val.
func AnnounceOps(run string, t board.Task, p *Payload, val []byte, slots []int) []board.Op {
	var ops []board.Op
	for _, s := range slots {
		n := NoteOf(t, p, val, 0)
		n.Task, n.Of, n.Slot = slotID(t.ID, s), t.ID, s
		if a := p.Live.Slots[s].Agent; a != "" {
			n.Agent = a
		}
		n.Prio = p.Prio + 1 // a speculative attempt is on the critical path already
		ops = append(ops, board.PutOp(ReadyKey(run, p.Shard, n.Task), MustJSON(n), board.NoLease))
	}
	return ops
}

// AttemptSpend is what one attempt of a task spent, recorded with its
// outcome: Attempt is its claim id within the task (NAME, or NAME~SLOT for
// a speculative attempt), Outcome passed, failed or cancelled. Profile is
// the agent profile the attempt ran with (its worker's, or a hedge's
// hedge_agent), Model the model the run's definition of that profile
// names ("": the CLI's default). Both are "" in records written before
// they were, and Profile is for an attempt whose host died before the
// attempt was recorded, unless it was a hedge with a profile of its own.
type AttemptSpend struct {
	Attempt string         `json:"attempt"`
	Worker  string         `json:"worker,omitempty"`
	Profile string         `json:"profile,omitempty"`
	Model   string         `json:"model,omitempty"`
	Outcome string         `json:"outcome"`
	Usage   envelope.Usage `json:"usage"`
}

// maxSpent bounds a task's Spent.
const maxSpent = 24

// spent appends an attempt's spend to p.Spent, keeping the newest.
func (p *Payload) AddSpent(a AttemptSpend) {
	p.Spent = append(p.Spent, a)
	if len(p.Spent) > maxSpent {
		p.Spent = p.Spent[len(p.Spent)-maxSpent:]
	}
}

// SlotEnd is how one attempt ended, for SpecEnd. Profile is the agent
// profile it ran with; "" for the slot's own (a hedge's hedge_agent, or
// none known).
type SlotEnd struct {
	Slot    int
	State   string // slotPassed, slotFailed or slotCancelled
	Profile string
	Cand    *Candidate
	Done    bool
	Usage   envelope.Usage
	Reason  string
}

// specAction is what recording an attempt's end does to the task.
type specAction int

const (
	specWrite   specAction = iota // write the record (and ops)
	SpecSettle                    // the task is done: settle it (promotions)
	SpecRequeue                   // the quorum was lost: put the task back
)

// SpecEnd records an attempt's end on the task's record (t, p, already at
// the current revision) of run r and returns what to write besides the
// record: cancellations of the other attempts once the quorum is decided,
// and — once no attempt runs any more — the task's outcome: the winner's
// candidate for the merge role, done, or put back.
func SpecEnd(r *Record, t *board.Task, p *Payload, e SlotEnd) (specAction, []board.Op) {
	run := r.Run
	l := p.Live
	l.fix(*t)
	s := &l.Slots[e.Slot]
	if s.State != SlotRunning && s.State != SlotAnnounced {
		return specWrite, nil // recorded already
	}
	s.State = e.State
	prof := cmp.Or(e.Profile, s.Agent)
	p.AddSpent(AttemptSpend{Attempt: slotID(p.Name, e.Slot), Worker: s.Worker, Profile: prof, Model: r.ModelOf(prof), Outcome: e.State, Usage: e.Usage})
	var ops []board.Op
	if e.Reason != "" {
		p.Notes = append(p.Notes, fmt.Sprintf("attempt %s: %s", slotID(taskName(run, t.ID), e.Slot), attempt.Clip(e.Reason, 300)))
	}
	switch {
	case e.State == SlotPassed && !l.Won && !l.Lost:
		s.Cand, s.Done = e.Cand, e.Done
		l.Passed = append(l.Passed, e.Slot)
		if s.Cand == nil {
			p.Usage.Add(e.Usage)
		} else {
			s.Cand.Usage = e.Usage
		}
	default:
		p.Usage.Add(e.Usage)
		if e.Cand != nil {
			e.Cand.Usage = envelope.Usage{} // nobody integrates it
		}
	}
	if !l.Won && !l.Lost {
		failed := 0
		for _, sl := range l.Slots {
			if sl.State == SlotFailed || sl.State == SlotCancelled {
				failed++
			}
		}
		switch {
		case len(l.Passed) >= l.K:
			l.Won = true
		case len(l.Slots)-failed < l.K:
			l.Lost, l.Reason = true, "too few speculative attempts passed: "+e.Reason
		}
		if l.Won || l.Lost {
			for i := range l.Slots {
				o := &l.Slots[i]
				switch o.State {
				case SlotRunning:
					ops = append(ops, board.PutOp(CancelKey(run, o.Host, slotID(t.ID, i)), []byte(`{}`), o.Lease))
				case SlotAnnounced:
					o.State = SlotCancelled
					ops = append(ops, board.DeleteOp(ReadyKey(run, p.Shard, slotID(t.ID, i))))
				}
			}
		}
	}
	if l.running() > 0 || !l.Won && !l.Lost {
		return specWrite, ops
	}
	// Every attempt has ended: the task's outcome.
	// Passed but not integrated: the work of every passed attempt but the
	// first (of none when the quorum was lost) is spent, not integrated.
	kept := 0
	if l.Won {
		kept = 1
	}
	for _, i := range l.Passed[kept:] {
		if c := l.Slots[i].Cand; c != nil {
			p.Usage.Add(c.Usage)
		}
	}
	if l.Lost {
		return SpecRequeue, ops
	}
	w := l.Slots[l.Passed[0]]
	t.Token, t.Worker = l.Token, w.Worker
	p.Live = nil
	if w.Cand == nil {
		return SpecSettle, ops
	}
	return specWrite, append(ops, board.PutOp(CandKey(run, t.ID), MustJSON(w.Cand), board.NoLease))
}
