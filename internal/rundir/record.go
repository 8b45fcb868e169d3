package rundir

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/plan"
)

// Record is run.json: what a run was started with.
type Record struct {
	Version           int               `json:"version"`
	RunID             string            `json:"run_id"`
	Created           time.Time         `json:"created"`
	Repo              string            `json:"repo"`
	PlanFile          string            `json:"plan_file,omitempty"`
	PlanSHA256        string            `json:"plan_sha256,omitempty"` // of plan.yaml in the run directory
	IntegrationBranch string            `json:"integration_branch"`
	StartHead         string            `json:"start_head"`
	TraceID           string            `json:"trace_id"`
	Options           Options           `json:"options"`
	Tasks             map[string]string `json:"tasks"` // plan task name → task id (UUIDv7)
	Goal              string            `json:"goal,omitempty"`
}

// Options are the settings a resumed run keeps.
type Options struct {
	MaxParallel     int                   `json:"max_parallel"`
	MaxAttempts     int                   `json:"max_attempts"`
	MaxDepth        int                   `json:"max_depth"`
	ReconcileAgent  string                `json:"reconcile_agent,omitempty"`
	ReconcileBudget envelope.Budget       `json:"reconcile_budget"`
	Agents          map[string]plan.Agent `json:"agents,omitempty"`
	Planner         string                `json:"planner,omitempty"`
	Worker          string                `json:"worker,omitempty"`
	// How the command that started the run reached the models and showed
	// the run (never a key): a resume uses the same unless told otherwise.
	ModelURL  string            `json:"model_url,omitempty"`
	NoGateway bool              `json:"no_gateway,omitempty"`
	AgentBin  map[string]string `json:"agent_bin,omitempty"`
	Dash      string            `json:"dash,omitempty"`
	// HedgeAfterS is the run's default hedge delay in seconds (0: none).
	HedgeAfterS float64 `json:"hedge_after_s,omitempty"`
}

// Run reads one run's directory. The zero value is not usable; see Open.
type Run struct {
	root, id string
}

// Open returns the reader of run id in the repository at root. It does
// not touch the file system: Record reports a run that does not exist.
func Open(root, id string) Run { return Run{root: root, id: id} }

// ID is the run's id.
func (r Run) ID() string { return r.id }

// Dir is the run's directory.
func (r Run) Dir() string { return Path(r.root, r.id) }

// Exists reports whether the run's directory exists (with or without a
// readable run.json).
func (r Run) Exists() bool {
	_, err := os.Stat(r.Dir())
	return !errors.Is(err, fs.ErrNotExist)
}

// RecordPath is the path of run.json.
func (r Run) RecordPath() string { return filepath.Join(r.Dir(), "run.json") }

// PlanPath is the path of the run's copy of its plan.
func (r Run) PlanPath() string { return filepath.Join(r.Dir(), "plan.yaml") }

// EventsPath is the path of the run's event log.
func (r Run) EventsPath() string { return filepath.Join(r.Dir(), "events.jsonl") }

// Record reads run.json; ErrNoRun if there is none, ErrBadRun if it does
// not parse or names another run.
func (r Run) Record() (*Record, error) {
	if !ValidID(r.id) {
		return nil, fmt.Errorf("%w: %q", ErrNoRun, r.id)
	}
	b, err := os.ReadFile(r.RecordPath())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", ErrNoRun, r.id)
	}
	if err != nil {
		return nil, err
	}
	var rec Record
	if err := json.Unmarshal(b, &rec); err != nil || rec.RunID != r.id || rec.Version != 1 {
		return nil, fmt.Errorf("%w: %s/run.json: %v", ErrBadRun, r.id, err)
	}
	return &rec, nil
}

// WriteRecord writes run.json.
func (r Run) WriteRecord(rec *Record) error { return WriteJSON(r.RecordPath(), rec) }

// Plan returns the run's stored plan; fs.ErrNotExist when it has none (a
// planner-mode run before its plan was accepted).
func (r Run) Plan() ([]byte, error) { return os.ReadFile(r.PlanPath()) }

// ParsePlan parses the run's stored plan with the agents its record
// names; (nil, nil) when it has none.
func (r Run) ParsePlan(rec *Record) (*plan.Plan, error) {
	data, err := r.Plan()
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	p, err := plan.ParseWith(rec.PlanFile, data, plan.Options{Agents: rec.Options.Agents})
	if err != nil {
		return nil, fmt.Errorf("%w: stored plan: %w", ErrBadRun, err)
	}
	return p, nil
}

// Events reads the run's event log. A line that does not parse — the torn
// last line of a crashed writer — is skipped and counted in bad.
func (r Run) Events() (evs []Event, bad int, err error) {
	f, err := os.Open(r.EventsPath())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	return ParseEvents(f)
}

// Task is the directory of the named task.
func (r Run) Task(name string) Task { return TaskIn(r.Dir(), name) }

// Planner is the planner's directory (planner mode), which holds the same
// files as a task's.
func (r Run) Planner() Task { return Task{dir: filepath.Join(r.Dir(), "planner")} }

// Worktree is the path of a worktree of this run; see WorktreePath.
func (r Run) Worktree(name string, attempt int, suffix string) string {
	return WorktreePath(r.root, r.id, name, attempt, suffix)
}

// Active reports whether a process holds the run's lock (is executing it).
func (r Run) Active() bool { return lockHeld(filepath.Join(r.Dir(), "lock")) }

// Task reads and names the files of one task of a run.
type Task struct{ dir string }

// TaskIn is the named task of the run whose directory is runDir: the
// layout of a run directory kept outside .apiary/runs (the swarm merge
// role's receipts).
func TaskIn(runDir, name string) Task { return Task{dir: filepath.Join(runDir, "tasks", name)} }

// Dir is the task's directory.
func (t Task) Dir() string { return t.dir }

// Path returns the path of a file of the task (an envelope copy, a log).
func (t Task) Path(name string) string { return filepath.Join(t.dir, name) }

// The names of a task's files, relative to its directory, as a receipt's
// artifacts list them.

// LogName is the name of the log of worker attempt n.
func LogName(attempt int) string { return "attempt-" + strconv.Itoa(attempt) + ".log" }

// ReconcileLogName is the name of the log of the reconciliation of
// attempt n.
func ReconcileLogName(attempt int) string { return "reconcile-" + strconv.Itoa(attempt) + ".log" }

// ChildName is the name of the envelope of the task's child name.
func ChildName(name string) string { return filepath.Join(childrenDir, name+".json") }

const childrenDir = "children"

// ReceiptPath is the path of the task's receipt.
func (t Task) ReceiptPath() string { return t.Path("receipt.json") }

// OrphanedReceiptPath is where a resume moves a receipt whose commit the
// integration branch no longer holds.
func (t Task) OrphanedReceiptPath() string { return t.Path("receipt.orphaned.json") }

// EnvelopePath is the path of the envelope of the task's first attempt.
func (t Task) EnvelopePath() string { return t.Path("envelope.json") }

// AttemptEnvelopePath is the path of the envelope of attempt n, when it is
// not the first attempt's (a later or a speculative attempt, a planner's).
func (t Task) AttemptEnvelopePath(attempt int) string {
	return t.Path("envelope-" + strconv.Itoa(attempt) + ".json")
}

// ReconcileEnvelopePath is the path of the envelope of the reconciliation
// of attempt n.
func (t Task) ReconcileEnvelopePath(attempt int) string {
	return t.Path("reconcile-" + strconv.Itoa(attempt) + ".envelope.json")
}

// LogPath is the log of the task's worker attempt n.
func (t Task) LogPath(attempt int) string { return t.Path(LogName(attempt)) }

// ReconcileLogPath is the log of the reconciliation of attempt n.
func (t Task) ReconcileLogPath(attempt int) string { return t.Path(ReconcileLogName(attempt)) }

// ChecksDir is where the logs of the task's checks go.
func (t Task) ChecksDir() string { return t.Path("checks") }

// ChildrenDir is where the envelopes of the task's children are kept.
func (t Task) ChildrenDir() string { return t.Path(childrenDir) }

// ChildPath is the path of the envelope of the task's child name.
func (t Task) ChildPath(name string) string { return t.Path(ChildName(name)) }

// Children returns the names (ChildName) of the child envelopes the task
// keeps, sorted; none when it has no children directory.
func (t Task) Children() ([]string, error) {
	ents, err := os.ReadDir(t.ChildrenDir())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".json") {
			out = append(out, filepath.Join(childrenDir, e.Name()))
		}
	}
	return out, nil
}

// Receipt reads the task's receipt; (nil, nil) when there is none yet, an
// ErrBadRun error when it does not validate.
func (t Task) Receipt() (*envelope.Receipt, error) {
	b, err := os.ReadFile(t.ReceiptPath())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	rc, err := envelope.DecodeReceipt(b)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrBadRun, t.ReceiptPath(), err)
	}
	return rc, nil
}

// WriteReceipt validates and writes the task's receipt.
func (t Task) WriteReceipt(rc *envelope.Receipt) error { return WriteReceipt(t.ReceiptPath(), rc) }

// Envelope reads the envelope of the task's first attempt: its bytes as
// stored and decoded; (nil, nil, nil) when there is none.
func (t Task) Envelope() ([]byte, *envelope.Envelope, error) {
	b, err := os.ReadFile(t.EnvelopePath())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	e, err := envelope.DecodeEnvelope(b)
	if err != nil {
		return b, nil, fmt.Errorf("%w: %s: %w", ErrBadRun, t.EnvelopePath(), err)
	}
	return b, e, nil
}

// Root is the repository root the run belongs to.
func (r Run) Root() string { return r.root }
