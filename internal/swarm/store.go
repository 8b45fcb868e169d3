package swarm

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/plan"
)

// StateDir is apiary's directory at the repository root. It holds a
// .gitignore that ignores all of it.
const StateDir = ".apiary"

// RunRecord is run.json: what a run was started with.
type RunRecord struct {
	Version           int               `json:"version"`
	RunID             string            `json:"run_id"`
	Created           time.Time         `json:"created"`
	Repo              string            `json:"repo"`
	PlanFile          string            `json:"plan_file,omitempty"`
	PlanSHA256        string            `json:"plan_sha256,omitempty"` // of plan.yaml in the run directory
	IntegrationBranch string            `json:"integration_branch"`
	StartHead         string            `json:"start_head"`
	TraceID           string            `json:"trace_id"`
	Options           RunOptions        `json:"options"`
	Tasks             map[string]string `json:"tasks"` // plan task name → task id (UUIDv7)
	Goal              string            `json:"goal,omitempty"`
}

// RunOptions are the settings a resumed run keeps.
type RunOptions struct {
	MaxParallel     int                   `json:"max_parallel"`
	MaxAttempts     int                   `json:"max_attempts"`
	MaxDepth        int                   `json:"max_depth"`
	ReconcileAgent  string                `json:"reconcile_agent,omitempty"`
	ReconcileBudget envelope.Budget       `json:"reconcile_budget"`
	Agents          map[string]plan.Agent `json:"agents,omitempty"`
	Planner         string                `json:"planner,omitempty"`
	Worker          string                `json:"worker,omitempty"`
}

// RunDir returns the directory of run id in the repository at root.
func RunDir(root, id string) string { return filepath.Join(root, StateDir, "runs", id) }

// store is one run's directory. Its methods are safe for concurrent use.
type store struct {
	root string // repository top directory
	id   string
	dir  string
	now  func() time.Time
	on   func(Event)

	mu     sync.Mutex // guards events and seq, and serializes on
	events *os.File
	seq    int64
	lockf  *os.File // the run's lock, held until close
}

func newStore(root, id string, now func() time.Time, on func(Event)) *store {
	return &store{root: root, id: id, dir: RunDir(root, id), now: now, on: on}
}

func (s *store) taskDir(name string) string { return filepath.Join(s.dir, "tasks", name) }
func (s *store) planPath() string           { return filepath.Join(s.dir, "plan.yaml") }

// worktree returns the path of a worktree for an attempt; suffix tells
// apart the scratch and reconciliation trees of the same attempt.
func (s *store) worktree(name string, attempt int, suffix string) string {
	return filepath.Join(s.root, StateDir, "worktrees", s.id, name+"-"+strconv.Itoa(attempt)+suffix)
}

// InitStateDir creates .apiary at the repository root with a .gitignore
// that keeps all of it out of git.
func InitStateDir(root string) error { return initStateDir(root) }

// initStateDir creates .apiary with its .gitignore.
func initStateDir(root string) error {
	dir := filepath.Join(root, StateDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	ign := filepath.Join(dir, ".gitignore")
	if _, err := os.Stat(ign); err == nil {
		return nil
	}
	return writeFileAtomic(ign, []byte("# apiary's state: never committed\n*\n"))
}

// writeFileAtomic writes data to path so that readers see the old content
// or the new, never a mix: a temporary file in the same directory, fsync,
// rename, fsync of the directory.
func writeFileAtomic(path string, data []byte) error { return writeFile(path, data, true) }

// writeFile writes data to path atomically (temporary file and rename);
// durable adds the fsyncs that make it survive a power loss.
func writeFile(path string, data []byte, durable bool) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil && durable {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	if !durable {
		return nil
	}
	return syncDir(dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(path, append(b, '\n'))
}

func (s *store) writeRecord(r *RunRecord) error {
	return writeJSON(filepath.Join(s.dir, "run.json"), r)
}

// ReadRecord reads run id's run.json; ErrNoRun if there is none.
func ReadRecord(root, id string) (*RunRecord, error) {
	b, err := os.ReadFile(filepath.Join(RunDir(root, id), "run.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", ErrNoRun, id)
	}
	if err != nil {
		return nil, err
	}
	var r RunRecord
	if err := json.Unmarshal(b, &r); err != nil || r.RunID != id || r.Version != 1 {
		return nil, fmt.Errorf("%w: %s/run.json: %v", ErrBadRun, id, err)
	}
	return &r, nil
}

// emit appends ev to events.jsonl (one line, fsynced) and then hands it to
// the OnEvent hook. Seq and Time are filled in.
func (s *store) emit(ev Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.events == nil {
		if err := os.MkdirAll(s.dir, 0o755); err != nil {
			return err
		}
		f, err := os.OpenFile(filepath.Join(s.dir, "events.jsonl"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			return err
		}
		s.events = f
	}
	s.seq++
	ev.Seq = s.seq
	ev.Run = s.id
	if ev.Time.IsZero() {
		ev.Time = s.now().UTC()
	}
	b, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	// One write per line with O_APPEND: a process crash leaves whole lines
	// (at worst a torn last one, which readers skip). The file is fsynced
	// when the run ends; receipts and run.json are fsynced as they are
	// written.
	if _, err := s.events.Write(append(b, '\n')); err != nil {
		return err
	}
	if s.on != nil {
		s.on(ev)
	}
	return nil
}

// setSeq continues the sequence of an existing events file.
func (s *store) setSeq(n int64) {
	s.mu.Lock()
	s.seq = n
	s.mu.Unlock()
}

func (s *store) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lockf != nil {
		defer func() {
			s.lockf.Close() // releases the flock
			s.lockf = nil
		}()
	}
	if s.events == nil {
		return nil
	}
	err := s.events.Sync()
	if cerr := s.events.Close(); err == nil {
		err = cerr
	}
	s.events = nil
	return err
}

// ReadEvents reads a run's events.jsonl. A line that does not parse — the
// torn last line of a crashed writer — is skipped and counted in bad.
func ReadEvents(root, id string) (evs []Event, bad int, err error) {
	f, err := os.Open(filepath.Join(RunDir(root, id), "events.jsonl"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	return parseEvents(f)
}

// parseEvents reads JSON lines of events; unparsable lines are skipped and
// counted.
func parseEvents(r io.Reader) ([]Event, int, error) {
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

// writeReceipt validates and writes a task's receipt.
func (s *store) writeReceipt(name string, r *envelope.Receipt) error {
	b, err := envelope.EncodeReceipt(r)
	if err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(s.taskDir(name), "receipt.json"), append(b, '\n'))
}

// readReceipt returns a task's receipt, nil if there is none.
func readReceipt(dir string) (*envelope.Receipt, error) {
	b, err := os.ReadFile(filepath.Join(dir, "receipt.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	r, err := envelope.DecodeReceipt(b)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrBadRun, filepath.Join(dir, "receipt.json"), err)
	}
	return r, nil
}

// writeEnvelope validates and writes an envelope to path atomically;
// durable adds the fsyncs (the copy in the run directory is state; the one
// in a worktree is not).
func writeEnvelope(path string, e *envelope.Envelope, durable bool) error {
	b, err := envelope.EncodeEnvelope(e)
	if err != nil {
		return err
	}
	return writeFile(path, append(b, '\n'), durable)
}

// ListRuns returns the ids of the runs recorded under root, oldest first
// (run ids generated by NewRunID sort by time).
func ListRuns(root string) ([]string, error) {
	ents, err := os.ReadDir(filepath.Join(root, StateDir, "runs"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() {
			if _, err := os.Stat(filepath.Join(root, StateDir, "runs", e.Name(), "run.json")); err == nil {
				out = append(out, e.Name())
			}
		}
	}
	return out, nil
}
