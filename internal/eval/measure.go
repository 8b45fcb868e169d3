package eval

import (
	"strings"
	"time"

	"github.com/apiary-dev/apiary/internal/rundir"
)

// isCoordination reports whether an event of kind is a coordination
// message: an envelope handed to an agent or its receipt handed back, or
// an exchange over the shared integration branch (a gate's rejection, a
// compare-and-swap retry, a conflict, a fenced-off writer, an
// integration), or a task spawned or hedged.
func isCoordination(kind string) bool {
	switch kind {
	case rundir.EvAttemptStarted, rundir.EvAttemptFinished, rundir.EvGateRejected, rundir.EvCASRetry, rundir.EvConflict,
		rundir.EvFenceRejected, rundir.EvIntegrated, rundir.EvChildAdded, rundir.EvHedged:
		return true
	}
	return false
}

// timeAndMessages sets the arm's time axis — from start, when the arm's
// run was asked for, to its last integration, so that waiting for a
// worker slot counts — and counts its coordination messages.
func (ar *ArmResult) timeAndMessages(start time.Time, evs []rundir.Event, tasks int) {
	var last, end time.Time
	for _, ev := range evs {
		if ev.Time.After(end) {
			end = ev.Time
		}
		if ev.Kind == rundir.EvIntegrated && ev.Time.After(last) {
			last = ev.Time
		}
		if isCoordination(ev.Kind) {
			ar.Messages++
		}
	}
	ar.TimeTo = "last integration"
	if last.IsZero() {
		last, ar.TimeTo = end, "end of the run (nothing integrated)"
	}
	ar.TimeS = max(last.Sub(start).Seconds(), 0)
	ar.MessagesPerTask = float64(ar.Messages) / float64(tasks)
}

// setSpend records what the gateway metered for the arm. Its cost is
// known when the gateway saw its requests and can price every model they
// named; its tokens, when the gateway saw any.
func (ar *ArmResult) setSpend(sp Spend) {
	ar.Spend = &sp
	ar.InputTokens, ar.OutputTokens, ar.USD = sp.InputTokens, sp.OutputTokens, sp.USD
	ar.Tokens = sp.InputTokens + sp.OutputTokens
	ar.TokensKnown = sp.Requests > 0
	switch {
	case sp.Requests == 0:
		ar.CostNote = "the gateway saw no model request of this arm, so apiary does not know what its agents spent"
	case len(sp.Unpriced) > 0:
		ar.CostNote = "the gateway has no price for " + strings.Join(sp.Unpriced, ", ")
	default:
		ar.CostKnown = true
	}
}

// inputsOf states what decides the verdict besides the agents' work.
func inputsOf(ts *TaskSet, o Options) (*Inputs, error) {
	digest, err := ts.Digest()
	if err != nil {
		return nil, err
	}
	in := &Inputs{TaskSet: ts.Dir, Digest: digest, Budget: o.Budget, Metered: o.Gateway != nil, Agents: o.AgentName,
		AgentKind: o.Agent.Kind, Model: o.Agent.Model, Seed: o.Seed, Grading: ts.Grading(),
		MaxParallel: map[Arm]int{Single: maxParallel(ts, Single, o), Swarm: maxParallel(ts, Swarm, o)}}
	if in.Agents == "" {
		in.Agents = o.Agent.Kind
	}
	if o.Scripted && ts.Scripted != nil {
		t := ts.Scripted.TurnS
		in.ScriptedTurnS = &t
	}
	return in, nil
}
