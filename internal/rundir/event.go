package rundir

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"time"

	"github.com/apiary-dev/apiary/internal/envelope"
)

// Event kinds, in events.jsonl.
const (
	EvRunStarted      = "run_started"      // Tasks: the plan's task count; Cgroup: the process's cgroup for the run
	EvRunResumed      = "run_resumed"      // Tasks: tasks still to do; Cgroup
	EvRunFinished     = "run_finished"     // Status: succeeded | failed | interrupted
	EvWorktree        = "worktree"         // Path, Branch: recorded before apiary creates them
	EvWorktreeRemoved = "worktree_removed" // Path
	EvBranchDeleted   = "branch_deleted"   // Branch
	EvAttemptStarted  = "attempt_started"  // Task, Attempt, Role, Base, Fence, Trace, Agent, Model
	EvAgentStarted    = "agent_started"    // Task, Attempt, Role, Pid: the agent's process group
	EvProcessStarted  = "process_started"  // Task, Attempt, Role, Scope, Pid, Cgroup, StartTicks, Boot: a process scope (an agent's or a check's)
	EvProcessesReaped = "processes_reaped" // Tasks: how many processes a dead process of the run left, killed on resume
	EvAttemptFinished = "attempt_finished" // Task, Attempt, Role, Commit (the candidate), Exit, Usage
	EvGateRejected    = "gate_rejected"    // Task, Gate
	EvCASRetry        = "cas_retry"        // Task, Base (the head the CAS expected), Commit (the head found)
	EvConflict        = "conflict"         // Task, Paths
	EvIntegrated      = "integrated"       // Task, Commit, Integrated
	EvChildAdded      = "child_added"      // Task (the child), Parent
	EvChildRefused    = "child_refused"    // Parent, Reason
	EvTaskDone        = "task_done"        // Task, Status, Reason, Gate
	EvCheckoutSynced  = "checkout_synced"  // Commit: the main checkout now matches it; Reason (and Path, the hint) when it could not be brought along
	EvPlanned         = "planned"          // Tasks: the planner's plan was accepted

	// Supervision.
	EvCancelRequested  = "cancel_requested"  // Task ("" for the run), Reason
	EvLeaseLapsed      = "lease_lapsed"      // Task, Attempt, Fence
	EvFenceRejected    = "fence_rejected"    // Task, Attempt, Fence, Commit, Reason: the integrator refused a stale token
	EvRestarted        = "restarted"         // Task, Reason: a supervision group restarted it
	EvEscalated        = "escalated"         // Task, Reason: a group's restart intensity ran out
	EvHedged           = "hedged"            // Task, Attempt: a speculative attempt started
	EvSpeculation      = "speculation"       // Task, Status (reached | lost), Attempt (the winner), Reason
	EvEscrowRequested  = "escrow_requested"  // Task, Attempt, Reason (the operation), Path (the request id), Status (pending, or denied at once by an ancestor's authority)
	EvEscrowDecided    = "escrow_decided"    // Task, Status (approved | denied), Path (the request id)
	EvAwaitingChildren = "awaiting_children" // Task, Tasks: its work is in, its spawned children are not
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
	// Pid is an agent's process group (agent_started) or a scope's leader
	// (process_started).
	Pid int `json:"pid,omitempty"`
	// Agent and Model are the profile an attempt ran with and the model
	// it asked for ("" for the CLI's default) (attempt_started).
	Agent string `json:"agent,omitempty"`
	Model string `json:"model,omitempty"`
	// A process scope (process_started): its marker, its cgroup v2
	// directory ("" when it is a process group), and its leader's start
	// time in clock ticks after boot, in the boot Boot names.
	Scope      string `json:"scope,omitempty"`
	Cgroup     string `json:"cgroup,omitempty"`
	StartTicks uint64 `json:"start_ticks,omitempty"`
	Boot       string `json:"boot,omitempty"`
}

// ParseEvents reads JSON lines of events; unparsable lines are skipped and
// counted.
func ParseEvents(r io.Reader) ([]Event, int, error) {
	br := bufio.NewReader(r)
	var out []Event
	bad := 0
	for {
		line, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			var ev Event
			if json.Unmarshal(line, &ev) == nil && ev.Kind != "" {
				out = append(out, ev)
			} else {
				bad++
			}
		}
		if errors.Is(err, io.EOF) {
			return out, bad, nil
		}
		if err != nil {
			return out, bad, err
		}
	}
}
