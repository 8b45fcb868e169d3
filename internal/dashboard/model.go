package dashboard

import (
	"encoding/json"
	"time"
)

// Task and run statuses the page knows (others are shown as they are).
const (
	StatusPending   = "pending"
	StatusRunning   = "running"
	StatusSucceeded = "succeeded"
	StatusFailed    = "failed"
	StatusCancelled = "cancelled"
	StatusSkipped   = "skipped"
)

// RunSummary is one entry of the runs list.
type RunSummary struct {
	ID        string    `json:"id"`
	Status    string    `json:"status"` // running | succeeded | failed | interrupted
	Started   time.Time `json:"started"`
	Goal      string    `json:"goal,omitempty"`
	Tasks     int       `json:"tasks"`
	Succeeded int       `json:"succeeded"`
	Failed    int       `json:"failed"`
	Running   int       `json:"running"`
	USD       float64   `json:"usd"`
	// USDKnown is false when nothing measured what the run spent (no
	// gateway, and agents that report nothing): USD is then not a figure.
	USDKnown bool `json:"usd_known"`
	// Mode is "local" (a run of the runtime) or "swarm" (a run on the
	// board, which workers claim).
	Mode string `json:"mode"`
}

// Run modes.
const (
	ModeLocal = "local"
	ModeSwarm = "swarm"
)

// Run is one run. Its fields have the names and JSON form of the runtime's
// report (`apiary status --json`), plus the dependency edges, which
// RunSource fills, and the Graph, which the dashboard lays out.
type Run struct {
	ID                string    `json:"run_id"`
	Repo              string    `json:"repo"`
	IntegrationBranch string    `json:"integration_branch"`
	StartHead         string    `json:"start_head"`
	Status            string    `json:"status"`
	Goal              string    `json:"goal,omitempty"`
	Planner           *Task     `json:"planner,omitempty"`
	Tasks             []Task    `json:"tasks"`
	Totals            Totals    `json:"totals"`
	Shares            []Share   `json:"shares"`
	Predicted         Path      `json:"predicted_critical_path"`
	Achieved          Path      `json:"achieved_critical_path"`
	WallS             float64   `json:"wall_s"`
	CASRetries        int       `json:"cas_retries"`
	Started           time.Time `json:"started"`
	// Finished is when the run ended (zero while it runs).
	Finished time.Time `json:"finished,omitzero"`
	// Mode is ModeLocal or ModeSwarm.
	Mode string `json:"mode"`
	// Workers are a swarm run's live workers (nil for a local run).
	Workers []Worker `json:"workers,omitempty"`
	// Edges are the dependencies: From must finish before To starts
	// (Kind data or control), or From spawned To (Kind spawn).
	Edges []Edge `json:"edges"`
	// Graph is the DAG laid out for drawing; the dashboard fills it.
	Graph *Graph `json:"graph,omitempty"`
}

// Task is one task of a run, as the report tells it.
type Task struct {
	ID              string  `json:"id"`
	Status          string  `json:"status"`
	Attempts        int     `json:"attempts"`
	Gate            *Gate   `json:"gate"`
	Commit          *string `json:"commit"`
	Integrated      *string `json:"integrated"`
	Usage           Usage   `json:"usage"`
	WallS           float64 `json:"wall_s"`
	Reason          string  `json:"reason,omitempty"`
	Parent          string  `json:"parent,omitempty"`
	Reconciliations int     `json:"reconciliations,omitempty"`
	// Started is when the task's first attempt started and Finished when
	// it ended (zero when not yet): the page counts a running task's wall
	// time on from Started.
	Started  time.Time `json:"started,omitzero"`
	Finished time.Time `json:"finished,omitzero"`
	// Worker is who holds or held the task (swarm mode).
	Worker string `json:"worker,omitempty"`
	// Waiting says what a running task waits for from a person, e.g.
	// "escrow push-1: git push origin main" ("" when nothing).
	Waiting string `json:"waiting,omitempty"`
	// Failure is why the task failed, as a person reads it: the failing
	// check's last lines, the gate's file and line.
	Failure *Failure `json:"failure,omitempty"`
}

// Failure kinds.
const (
	FailCheck = "check" // a check command failed
	FailGate  = "gate"  // a static gate rejected the change
	FailAgent = "agent" // the agent failed or ran out of its budget
)

// Failure is why a task failed.
type Failure struct {
	Kind string `json:"kind"`
	// Summary is one line: "check go test ./... exited 1", "forbidden
	// pattern deleted-test in calc_test.go:12".
	Summary string `json:"summary"`
	// Command is the failing check's command.
	Command string `json:"command,omitempty"`
	// Lines are the last lines of the failing check's output (or of the
	// agent's log), where the reason usually is.
	Lines []string `json:"lines,omitempty"`
	File  string   `json:"file,omitempty"`
	Line  int      `json:"line,omitempty"`
}

// Gate is why a gate rejected a candidate.
type Gate struct {
	Gate    string `json:"gate"` // scope | sealed | forbidden | check
	Pattern string `json:"pattern,omitempty"`
	File    string `json:"file,omitempty"`
	Line    int    `json:"line,omitempty"`
	Detail  string `json:"detail"`
}

// Usage is tokens and dollars. Known is false when nothing measured them
// (the page then says "n/a", not $0).
type Usage struct {
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	USD          float64 `json:"usd"`
	Known        bool    `json:"known"`
}

// Totals sum a run's tasks.
type Totals struct {
	Tasks          int            `json:"tasks"`
	Succeeded      int            `json:"succeeded"`
	Failed         int            `json:"failed"`
	Cancelled      int            `json:"cancelled"`
	Skipped        int            `json:"skipped"`
	Unfinished     int            `json:"unfinished"`
	Attempts       int            `json:"attempts"`
	Usage          Usage          `json:"usage"`
	Integrated     map[string]int `json:"integrated"`
	GateRejections int            `json:"gate_rejections"`
}

// Share is what one role consumed and its fraction of the run's tokens and
// dollars.
type Share struct {
	Role         string  `json:"role"`
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	USD          float64 `json:"usd"`
	TokenShare   float64 `json:"token_share"`
	CostShare    float64 `json:"cost_share"`
}

// Path is a critical path: task ids in order and its length in seconds.
type Path struct {
	Tasks   []string `json:"tasks"`
	Seconds float64  `json:"seconds"`
}

// Edge kinds.
const (
	EdgeData    = "data"
	EdgeControl = "control"
	EdgeSpawn   = "spawn"
)

// Edge is an arrow of the DAG.
type Edge struct {
	From string `json:"from"`
	To   string `json:"to"`
	Kind string `json:"kind"`
}

// TaskDetail is everything about one task.
type TaskDetail struct {
	Run  string `json:"run"`
	Task Task   `json:"task"`
	// From the envelope.
	Objective   string   `json:"objective,omitempty"`
	Agent       string   `json:"agent,omitempty"`
	WriteScope  []string `json:"write_scope,omitempty"`
	LeaseS      float64  `json:"lease_s,omitempty"`
	Traceparent string   `json:"traceparent,omitempty"`
	// From the receipt.
	Gate         *Gate    `json:"gate,omitempty"`
	GateFailures []Gate   `json:"gate_failures,omitempty"`
	Checks       []Check  `json:"checks,omitempty"`
	Fence        uint64   `json:"fencing_token,omitempty"`
	ChangedPaths []string `json:"changed_paths,omitempty"`
	Summary      string   `json:"summary,omitempty"`
	// Attempts as the events tell them, oldest first.
	AttemptList []Attempt `json:"attempt_list,omitempty"`
	// DiffStat is the change of the task's commit against its base.
	DiffStat []FileStat `json:"diff_stat,omitempty"`
	// Log is the tail of the latest attempt's log.
	Log *LogTail `json:"log,omitempty"`
	// Claim is the task's live claim on the board (swarm mode).
	Claim *Claim `json:"claim,omitempty"`
	// Envelope and Receipt are the files as written, for display.
	Envelope json.RawMessage `json:"envelope,omitempty"`
	Receipt  json.RawMessage `json:"receipt,omitempty"`
}

// Check is one check command run on a candidate.
type Check struct {
	Command  string  `json:"command"`
	Exit     int     `json:"exit"`
	Duration float64 `json:"duration"`
	TimedOut bool    `json:"timed_out,omitempty"`
	Log      string  `json:"log,omitempty"`
}

// Attempt is one attempt of a task.
type Attempt struct {
	N        int        `json:"n"`
	Role     string     `json:"role"`
	Started  time.Time  `json:"started"`
	Finished *time.Time `json:"finished,omitempty"`
	Base     string     `json:"base,omitempty"`
	Commit   string     `json:"commit,omitempty"`
	Exit     *int       `json:"exit,omitempty"`
	Fence    uint64     `json:"fence,omitempty"`
	Reason   string     `json:"reason,omitempty"`
	Usage    Usage      `json:"usage"`
}

// FileStat is one file of a diff stat.
type FileStat struct {
	Path    string `json:"path"`
	Added   int    `json:"added"`
	Deleted int    `json:"deleted"`
	Binary  bool   `json:"binary,omitempty"`
}

// LogTail is the end of a log file.
type LogTail struct {
	Name      string `json:"name"`
	Size      int64  `json:"size"`
	Text      string `json:"text"`
	Truncated bool   `json:"truncated"` // Text is only the end of the file
}

// Claim is a worker's live claim on a task (swarm mode).
type Claim struct {
	Task  string  `json:"task"`
	Agent string  `json:"agent"`
	Score float64 `json:"score"`
	Lease int64   `json:"lease"`
	Token int64   `json:"token"` // the fencing token
}

// Worker is a live worker of a swarm.
type Worker struct {
	ID       string    `json:"id"`
	Skills   []string  `json:"skills,omitempty"`
	Profile  string    `json:"profile,omitempty"`
	Slots    int       `json:"slots,omitempty"`
	Busy     int       `json:"busy,omitempty"`
	LastSeen time.Time `json:"last_seen,omitzero"`
}

// BoardTask is a task published on the board (swarm mode).
type BoardTask struct {
	ID       string `json:"id"`
	Status   string `json:"status"`
	Worker   string `json:"worker,omitempty"`
	Token    int64  `json:"token,omitempty"`
	Attempts int    `json:"attempts,omitempty"`
}

// Conflict is a recorded integration conflict.
type Conflict struct {
	ID         string   `json:"id"`
	Type       string   `json:"type"`
	Tasks      []string `json:"tasks"`
	Workers    []string `json:"workers,omitempty"`
	Files      []string `json:"files,omitempty"`
	Resolution string   `json:"resolution,omitempty"`
}

// Hint review states.
const (
	HintPending  = "pending"
	HintApproved = "approved"
	HintRejected = "rejected"
)

// Hint is the reviewed resolution of a conflict type.
type Hint struct {
	Type       string `json:"type"`
	Resolution string `json:"resolution"`
	Conflict   string `json:"conflict"`
	State      string `json:"state"`
	Reviewer   string `json:"reviewer,omitempty"`
	Note       string `json:"note,omitempty"`
}

// BoardSnapshot is the coordination board's state.
type BoardSnapshot struct {
	Workers   []Worker    `json:"workers"`
	Claims    []Claim     `json:"claims"`
	Tasks     []BoardTask `json:"tasks"`
	Conflicts []Conflict  `json:"conflicts"`
	Hints     []Hint      `json:"hints"`
}

// Escrow states.
const (
	EscrowPending  = "pending"
	EscrowApproved = "approved"
	EscrowDenied   = "denied"
)

// EscrowRequest is a destructive operation an agent asked for, held until
// a person decides.
type EscrowRequest struct {
	ID        string    `json:"id"`
	Run       string    `json:"run,omitempty"`
	Task      string    `json:"task,omitempty"`
	Operation string    `json:"operation"` // e.g. "git push origin main"
	Detail    string    `json:"detail,omitempty"`
	State     string    `json:"state"`
	Created   time.Time `json:"created,omitzero"`
	Reviewer  string    `json:"reviewer,omitempty"`
	Note      string    `json:"note,omitempty"`
}

// Escalated is a review whose reviewers disagreed and handed the
// decision to a person.
type Escalated struct {
	ID      string    `json:"id"`
	Reason  string    `json:"reason"`
	Head    string    `json:"head,omitempty"`
	Started time.Time `json:"started,omitzero"`
	// Command settles it.
	Command string `json:"command"`
}

// Plot is a chart file found on disk.
type Plot struct {
	Name  string `json:"name"` // the id in /api/plots/{name}
	Title string `json:"title"`
	Type  string `json:"type"` // svg | png
}
