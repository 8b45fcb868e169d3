package swarm

import (
	"encoding/hex"
	"fmt"
	"io"
	"regexp"
	"time"

	"github.com/apiary-dev/apiary/internal/envelope"
)

// Event kinds, in events.jsonl and for Config.OnEvent.
const (
	EvRunStarted      = "run_started"      // Tasks: the plan's task count
	EvRunResumed      = "run_resumed"      // Tasks: tasks still to do
	EvRunFinished     = "run_finished"     // Status: succeeded | failed | interrupted
	EvWorktree        = "worktree"         // Path, Branch: recorded before apiary creates them
	EvWorktreeRemoved = "worktree_removed" // Path
	EvBranchDeleted   = "branch_deleted"   // Branch
	EvAttemptStarted  = "attempt_started"  // Task, Attempt, Role, Base, Fence, Trace
	EvAttemptFinished = "attempt_finished" // Task, Attempt, Role, Commit (the candidate), Exit, Usage
	EvGateRejected    = "gate_rejected"    // Task, Gate
	EvCASRetry        = "cas_retry"        // Task, Base (the head the CAS expected), Commit (the head found)
	EvConflict        = "conflict"         // Task, Paths
	EvIntegrated      = "integrated"       // Task, Commit, Integrated
	EvChildAdded      = "child_added"      // Task (the child), Parent
	EvChildRefused    = "child_refused"    // Parent, Reason
	EvTaskDone        = "task_done"        // Task, Status, Reason, Gate
	EvCheckoutSynced  = "checkout_synced"  // Commit: the main checkout now matches it
	EvPlanned         = "planned"          // Tasks: the planner's plan was accepted
)

// Event is one line of events.jsonl: something that happened in a run.
type Event struct {
	Seq        int64                `json:"seq"`
	Time       time.Time            `json:"time"`
	Run        string               `json:"run"`
	Kind       string               `json:"kind"`
	Task       string               `json:"task,omitempty"`
	Attempt    int                  `json:"attempt,omitempty"`
	Role       string               `json:"role,omitempty"`
	Parent     string               `json:"parent,omitempty"`
	Base       string               `json:"base,omitempty"`
	Commit     string               `json:"commit,omitempty"`
	Path       string               `json:"path,omitempty"`
	Branch     string               `json:"branch,omitempty"`
	Paths      []string             `json:"paths,omitempty"`
	Integrated string               `json:"integrated,omitempty"`
	Status     string               `json:"status,omitempty"`
	Reason     string               `json:"reason,omitempty"`
	Gate       *envelope.GateReason `json:"gate,omitempty"`
	Exit       *int                 `json:"exit,omitempty"`
	Fence      uint64               `json:"fence,omitempty"`
	Usage      *envelope.Usage      `json:"usage,omitempty"`
	Tasks      int                  `json:"tasks,omitempty"`
	// Trace is the W3C traceparent the attempt's agent was given.
	Trace string `json:"trace,omitempty"`
	// Pid is an agent's process group (agent_started).
	Pid int `json:"pid,omitempty"`
}

// NewRunID returns a run id that sorts by creation time:
// YYYYMMDD-HHMMSS-xxxxxx (UTC, six random hex digits).
func NewRunID(now time.Time, rnd io.Reader) (string, error) {
	var b [3]byte
	if _, err := io.ReadFull(rnd, b[:]); err != nil {
		return "", fmt.Errorf("swarm: run id: %w", err)
	}
	return now.UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:]), nil
}

// runIDPattern is the envelope schema's run_id; it also keeps run ids safe
// as path and ref components.
var runIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$`)

// ValidRunID reports whether id can name a run.
func ValidRunID(id string) bool { return runIDPattern.MatchString(id) }

func randomHex(rnd io.Reader, n int) (string, error) {
	b := make([]byte, n)
	if _, err := io.ReadFull(rnd, b); err != nil {
		return "", fmt.Errorf("swarm: randomness: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// traceparent makes a W3C traceparent in the run's trace with a new span.
func traceparent(traceID string, rnd io.Reader) (string, error) {
	span, err := randomHex(rnd, 8)
	if err != nil {
		return "", err
	}
	return "00-" + traceID + "-" + span + "-01", nil
}
