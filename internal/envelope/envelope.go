// Package envelope defines apiary's typed handoffs: the task Envelope a task
// is given and the Receipt recorded when an attempt ends, their JSON Schemas
// (embedded from schema/*.json and published as docs/schema/*.json, together
// with the plan file's schema), validation on the way out and on the way
// back, a canonical JSON encoding and UUIDv7 task ids.
//
// Envelopes pass references, not content: a base commit and paths, never
// file bodies. Every document apiary writes is validated before it is
// written (Encode*) and every document it reads is validated before it is
// used (Decode*); a failure is a *ValidationError listing each violation with
// its field path.
package envelope

import "errors"

// Sentinel errors; test with errors.Is.
var (
	// ErrSyntax: the document is not well-formed JSON (or has duplicate
	// keys, trailing data, or exceeds the size or depth limits).
	ErrSyntax = errors.New("envelope: malformed JSON")
	// ErrInvalid: the document does not satisfy its schema or a value is out
	// of range.
	ErrInvalid = errors.New("envelope: invalid document")
	// ErrSchemaInvalid: a schema itself could not be compiled.
	ErrSchemaInvalid = errors.New("envelope: invalid schema")
)

// DepKind says what a dependency carries: data (the dependent reads the
// dependency's output, the default) or control (ordering only).
type DepKind string

// Dependency kinds.
const (
	DepData    DepKind = "data"
	DepControl DepKind = "control"
)

// Status is how a task attempt ended.
type Status string

// Task statuses.
const (
	StatusSucceeded Status = "succeeded"
	StatusFailed    Status = "failed"
	StatusCancelled Status = "cancelled"
	StatusSkipped   Status = "skipped"
)

// Network values of Authority.Network.
const (
	NetworkNone    = "none"
	NetworkGateway = "gateway"
	NetworkAny     = "any"
)

// Forbidden diff patterns known to the gates.
const (
	PatternDeletedTests       = "deleted-tests"
	PatternDisabledAssertions = "disabled-assertions"
	PatternSkipMarkers        = "skip-markers"
	PatternEmptiedTests       = "emptied-tests"
	// PatternTestBypass: a test function the change touches gained an
	// early return, a skip path or assertions that cannot run (the rule
	// list is in package gate, bypass.go).
	PatternTestBypass = "test-bypass"
)

// BuiltinPatterns returns every built-in forbidden pattern, the default of a
// task that names none.
func BuiltinPatterns() []string {
	return []string{PatternDeletedTests, PatternDisabledAssertions, PatternSkipMarkers, PatternEmptiedTests, PatternTestBypass}
}

// Envelope is what a task is given. Field names follow the contract in
// docs/ARCHITECTURE.md (Contracts); the JSON Schema is schema/envelope.json.
type Envelope struct {
	TaskID     string     `json:"task_id"`             // UUIDv7
	ParentID   string     `json:"parent_id,omitempty"` // UUIDv7 of the spawning task
	RunID      string     `json:"run_id,omitempty"`
	Name       string     `json:"name,omitempty"` // the task's id in its plan
	Trace      *Trace     `json:"trace,omitempty"`
	Objective  string     `json:"objective"`
	Inputs     Inputs     `json:"inputs"`
	Authority  Authority  `json:"authority"`
	Budget     Budget     `json:"budget"`
	Completion Completion `json:"completion"`
	Deps       []Dep      `json:"deps"`
	Agent      AgentRef   `json:"agent"`
	LeaseS     float64    `json:"lease_s,omitempty"`
	Depth      int        `json:"depth,omitempty"` // 0 for a plan's tasks
	Tags       []string   `json:"tags,omitempty"`
	// Reconcile is set on a reconciliation task: the integration of another
	// task's candidate met overlapping writes or a textual conflict, and
	// this task combines the two sides. Inputs.Workspace is then Head.
	Reconcile *Reconcile `json:"reconcile,omitempty"`
	// Hints are reviewed resolution hints from earlier integration
	// conflicts (swarm mode); only approved hints are ever passed.
	Hints []Hint `json:"hints,omitempty"`
}

// Hint is an approved resolution for a type of integration conflict.
type Hint struct {
	Type       string `json:"type"`
	Resolution string `json:"resolution"`
}

// Reconcile describes the conflict a reconciliation task resolves, by
// reference: the commits and the conflicting paths, plus git's merge-tree
// conflict notices.
type Reconcile struct {
	Task      string   `json:"task"`      // the name of the task whose candidate conflicts
	Base      string   `json:"base"`      // the commit that task started from
	Head      string   `json:"head"`      // the integration head it must be combined with
	Candidate string   `json:"candidate"` // the task's commit
	Paths     []string `json:"paths"`     // paths both sides changed or that conflict
	// Conflict is merge-tree's report (conflict types and messages); empty
	// when the paths overlap but merge textually.
	Conflict string `json:"conflict,omitempty"`
}

// Trace is W3C trace context.
type Trace struct {
	Traceparent string `json:"traceparent"`
	Tracestate  string `json:"tracestate,omitempty"`
}

// Inputs are references to what the task starts from.
type Inputs struct {
	Workspace string   `json:"workspace"` // "git:<sha>", the pinned base commit
	Paths     []string `json:"paths,omitempty"`
}

// Authority is what the task may do. Paths are relative to the repository
// root; "." is the whole tree.
type Authority struct {
	Tools      []string `json:"tools,omitempty"`
	WriteScope []string `json:"write_scope"`
	Network    string   `json:"network,omitempty"` // none | gateway | any
	Capability string   `json:"capability,omitempty"`
}

// Budget limits a task. A zero field sets no limit at this level.
type Budget struct {
	InputTokens  int64   `json:"input_tokens,omitempty"`
	OutputTokens int64   `json:"output_tokens,omitempty"`
	ToolCalls    int64   `json:"tool_calls,omitempty"`
	WallClockS   float64 `json:"wall_clock_s,omitempty"`
	USD          float64 `json:"usd,omitempty"`
}

// Completion is how apiary decides the task is done: check commands that must
// exit 0, forbidden diff patterns and sealed paths.
//
// Forbidden distinguishes nil from empty: nil means every built-in pattern
// (the default) and an empty, non-nil list means none. EncodeEnvelope always
// writes the list out, so a decoded envelope keeps the distinction.
type Completion struct {
	Checks        []string `json:"checks,omitempty"`
	CheckTimeoutS float64  `json:"check_timeout_s,omitempty"`
	Forbidden     []string `json:"forbidden"`
	Sealed        []string `json:"sealed,omitempty"`
}

// Dep is one dependency.
type Dep struct {
	Task string  `json:"task"`
	Kind DepKind `json:"kind"`
}

// AgentRef names the agent profile that runs the task.
type AgentRef struct {
	Profile string `json:"profile"`
	Kind    string `json:"kind,omitempty"`
}

// Receipt is what apiary records when a task attempt ends. The JSON Schema is
// schema/receipt.json.
type Receipt struct {
	TaskID       string        `json:"task_id"`
	RunID        string        `json:"run_id,omitempty"`
	Name         string        `json:"name,omitempty"`
	Attempt      int           `json:"attempt,omitempty"`
	Status       Status        `json:"status"`
	Reason       string        `json:"reason,omitempty"`
	Base         string        `json:"base,omitempty"`
	Commit       string        `json:"commit,omitempty"`
	ChangedPaths []string      `json:"changed_paths"`
	Artifacts    []string      `json:"artifacts,omitempty"`
	Usage        Usage         `json:"usage"`
	Checks       []CheckResult `json:"checks"`
	Gate         *GateReason   `json:"gate"` // nil (null) when every gate passed
	GateFailures []GateReason  `json:"gate_failures,omitempty"`
	Integrated   *string       `json:"integrated,omitempty"` // fast-forward | merge | reconciled
	Summary      string        `json:"summary,omitempty"`    // at most MaxSummary characters
	FencingToken uint64        `json:"fencing_token,omitempty"`
}

// MaxSummary bounds Receipt.Summary, in characters.
const MaxSummary = 4096

// Usage is what an attempt consumed.
type Usage struct {
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	USD          float64 `json:"usd"`
	ToolCalls    int64   `json:"tool_calls,omitempty"`
	WallS        float64 `json:"wall_s"`
}

// CheckResult is one check command apiary ran on the candidate.
type CheckResult struct {
	Command  string  `json:"command"`
	Exit     int     `json:"exit"`     // -1 when killed
	Duration float64 `json:"duration"` // seconds
	TimedOut bool    `json:"timed_out,omitempty"`
	Log      string  `json:"log,omitempty"` // path of the captured output
}

// GateReason is a typed reason a gate rejected a candidate.
type GateReason struct {
	Gate    string `json:"gate"`              // scope | sealed | forbidden | check
	Pattern string `json:"pattern,omitempty"` // for the forbidden gate
	File    string `json:"file,omitempty"`
	Line    int    `json:"line,omitempty"`
	Detail  string `json:"detail"`
}

// Add adds x to u, field by field.
func (u *Usage) Add(x Usage) {
	u.InputTokens += x.InputTokens
	u.OutputTokens += x.OutputTokens
	u.USD += x.USD
	u.ToolCalls += x.ToolCalls
	u.WallS += x.WallS
}
