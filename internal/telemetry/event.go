package telemetry

import "time"

// Event kinds this package understands; they are the runtime's event kinds
// (see the swarm package's events.jsonl). Other kinds are ignored.
const (
	EvRunStarted      = "run_started"
	EvRunResumed      = "run_resumed"
	EvRunFinished     = "run_finished"
	EvAttemptStarted  = "attempt_started"
	EvAttemptFinished = "attempt_finished"
	EvGateRejected    = "gate_rejected"
	EvCASRetry        = "cas_retry"
	EvConflict        = "conflict"
	EvIntegrated      = "integrated"
	EvChildAdded      = "child_added"
	EvChildRefused    = "child_refused"
	EvTaskDone        = "task_done"
)

// Event is one thing that happened in a run, as the runtime recorded it.
// The command line fills it from the runtime's own event; fields a kind
// does not use are zero.
type Event struct {
	Time    time.Time
	Run     string
	Kind    string
	Task    string
	Attempt int
	Role    string // worker | reconciler | planner
	Base    string
	Commit  string
	Status  string // run_finished, task_done
	Reason  string
	// Gate names the gate of a rejection (scope, sealed, forbidden, check)
	// and GateDetail says why.
	Gate       string
	GateDetail string
	Integrated string // fast-forward | merge | reconciled
	Exit       *int
	Fence      uint64
	// Usage of a finished attempt.
	InputTokens  int64
	OutputTokens int64
	USD          float64
	// TraceID is the run's trace id (run_started, run_resumed).
	TraceID string
	// Traceparent is the W3C traceparent the attempt's agent received
	// (attempt_started or attempt_finished), when the runtime reports it.
	Traceparent string
	// Checks are the check commands run on a task's result (task_done),
	// when known: they become gate spans.
	Checks []Check
}

// Check is one check command the integrator ran.
type Check struct {
	Command  string
	Exit     int
	Duration time.Duration
}
