// Package eval answers whether a swarm beats one agent with the same
// budget. It runs a task set twice with apiary's runtime — once as a
// single agent given every task, once as a swarm of one agent per task —
// each arm behind the metering gateway with one hard budget, the same for
// both. It grades both arms' work with the same checks, one by one (the
// set's visible checks and every task's visible and hidden checks, the
// hidden ones never seen by the agents), times each arm from its start to
// its last integration, and compares them on quality, time and cost per
// accepted task; token amplification and coordination messages per task
// are reported beside the verdict.
//
// A task set is a directory:
//
//	taskset.yaml          the manifest (see TaskSet)
//	repo/                 the repository both runs start from
//	tasks/ID/prompt.md    what the agent is asked (default path)
//	tasks/ID/hidden/      files copied over the final tree before the
//	                      task's hidden checks run (default path)
//	scripted/swarm/ID/    optional: the files a scripted swarm agent writes
//	scripted/single/      optional: the files a scripted single agent
//	                      writes (default: all of the swarm's)
//
// Hidden checks stay out of the agents' sight: they are not in the
// repository, not in any plan or envelope, and are read from the task set
// only after a run has ended, into a scratch copy of its final tree.
package eval

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/apiary-dev/apiary/internal/strictyaml"
)

// ErrTaskSet is matched by every error about a task set's content.
var ErrTaskSet = errors.New("eval: bad task set")

// SingleTaskID is the id of the single agent's one task in its plan.
const SingleTaskID = "all-tasks"

// ManifestName is the task set's manifest file.
const ManifestName = "taskset.yaml"

// TaskSet is a loaded, validated task set. Paths are absolute.
type TaskSet struct {
	Dir         string
	Version     int      `yaml:"version"`
	Name        string   `yaml:"name"`
	Description string   `yaml:"description"`
	Repo        string   `yaml:"repo"`   // default "repo"
	Checks      []string `yaml:"checks"` // visible checks of every task: apiary's gates run them
	// CheckTimeoutS bounds each visible and hidden check; 0 means 600.
	CheckTimeoutS float64 `yaml:"check_timeout_s"`
	Swarm         struct {
		// MaxParallel bounds the swarm's agents at once; 0 means one per task.
		MaxParallel int `yaml:"max_parallel"`
	} `yaml:"swarm"`
	Tasks    []*Task   `yaml:"tasks"`
	Scripted *Scripted `yaml:"scripted"`
}

// Task is one task of a set.
type Task struct {
	ID         string   `yaml:"id"`
	Prompt     string   `yaml:"prompt"` // file; default tasks/ID/prompt.md
	WriteScope []string `yaml:"write_scope"`
	Deps       []string `yaml:"deps"`
	Checks     []string `yaml:"checks"` // visible, besides the set's
	EstimateS  float64  `yaml:"estimate_s"`
	// WallClockS bounds one agent's work on the task; 0 means 900. The
	// single agent gets the sum.
	WallClockS   float64  `yaml:"wall_clock_s"`
	Hidden       string   `yaml:"hidden"` // directory; default tasks/ID/hidden
	HiddenChecks []string `yaml:"hidden_checks"`

	// PromptText is the prompt file's content.
	PromptText string `yaml:"-"`
}

// Scripted names the files scripted agents write, for tests and offline
// runs: Single is a tree the single agent writes ("": the union of the
// swarm's trees, so that both arms do the same work); Swarm holds one tree
// per task id. Reads names, per task id, the files an agent of that task reads
// before it writes (the code it builds on); the single agent reads a file
// once, and never one it wrote itself. TurnS is the scripted model's time
// per turn (one read, one write, or the final answer).
type Scripted struct {
	Single string              `yaml:"single"`
	Swarm  string              `yaml:"swarm"`
	Reads  map[string][]string `yaml:"reads"`
	TurnS  float64             `yaml:"turn_s"`
}

var idPattern = regexp.MustCompile(`^[a-z0-9-]{1,64}$`)

// Limits of a task set.
const (
	maxTasks        = 200
	maxPromptSize   = 64 << 10
	maxManifestSize = 1 << 20
)

func setErr(dir, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrTaskSet, dir, fmt.Sprintf(format, args...))
}

// Load reads and validates the task set in dir.
func Load(dir string) (*TaskSet, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(filepath.Join(abs, ManifestName))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrTaskSet, err)
	}
	return Parse(abs, data)
}

// manifest validates a decoded manifest; its errors are located in the
// file.
type manifest struct {
	ts  *TaskSet
	doc *strictyaml.Document
}

func (m *manifest) errf(path strictyaml.Path, format string, args ...any) error {
	return fmt.Errorf("%w: %w", ErrTaskSet, m.doc.Errorf(ErrTaskSet, path, format, args...))
}

// Parse validates the manifest data of the task set in directory dir
// (absolute) and reads its prompts. The manifest is read strictly (see
// internal/strictyaml); every error names its line, column and field.
func Parse(dir string, data []byte) (*TaskSet, error) {
	doc, err := strictyaml.Parse(ManifestName, data, strictyaml.Options{MaxBytes: maxManifestSize})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrTaskSet, err)
	}
	ts := &TaskSet{}
	if err := doc.Decode(ts); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrTaskSet, err)
	}
	ts.Dir = dir
	m := &manifest{ts: ts, doc: doc}
	if err := m.check(); err != nil {
		return nil, err
	}
	return ts, nil
}

type path = strictyaml.Path

func (m *manifest) check() error {
	ts := m.ts
	if ts.Version != 1 {
		return m.errf(path{"version"}, "must be 1, got %d", ts.Version)
	}
	if ts.Name == "" {
		return m.errf(path{"name"}, "required")
	}
	if i := blank(ts.Checks); i >= 0 {
		return m.errf(path{"checks", i}, "must not be an empty command")
	}
	if ts.Repo == "" {
		ts.Repo = "repo"
	}
	if ts.CheckTimeoutS == 0 {
		ts.CheckTimeoutS = 600
	}
	if !(ts.CheckTimeoutS > 0 && ts.CheckTimeoutS <= 86400) {
		return m.errf(path{"check_timeout_s"}, "must be in (0, 86400], got %v", ts.CheckTimeoutS)
	}
	if ts.Swarm.MaxParallel < 0 {
		return m.errf(path{"swarm", "max_parallel"}, "must not be negative")
	}
	var err error
	if ts.Repo, err = m.dirPath(path{"repo"}, ts.Repo); err != nil {
		return err
	}
	if len(ts.Tasks) == 0 || len(ts.Tasks) > maxTasks {
		return m.errf(path{"tasks"}, "want 1 to %d tasks, got %d", maxTasks, len(ts.Tasks))
	}
	ids := map[string]int{}
	for i, t := range ts.Tasks {
		at := func(f ...any) path { return append(path{"tasks", i}, f...) }
		if t == nil || !idPattern.MatchString(t.ID) || t.ID == SingleTaskID {
			return m.errf(at("id"), "must match [a-z0-9-]{1,64} and not be %q", SingleTaskID)
		}
		if j, dup := ids[t.ID]; dup {
			return m.errf(at("id"), "task id %q already used by tasks[%d]", t.ID, j)
		}
		ids[t.ID] = i
		if len(t.WriteScope) == 0 {
			return m.errf(at("write_scope"), "required")
		}
		if len(t.HiddenChecks) == 0 {
			return m.errf(at("hidden_checks"), "required: a task is judged by checks its agent never sees")
		}
		for _, l := range []struct {
			field string
			list  []string
		}{{"write_scope", t.WriteScope}, {"checks", t.Checks}, {"hidden_checks", t.HiddenChecks}} {
			if j := blank(l.list); j >= 0 {
				return m.errf(at(l.field, j), "must not be empty")
			}
		}
		if t.EstimateS == 0 {
			t.EstimateS = 60
		}
		if t.WallClockS == 0 {
			t.WallClockS = 900
		}
		if !(t.EstimateS > 0 && t.EstimateS <= 1e6) {
			return m.errf(at("estimate_s"), "must be in (0, 1e6], got %v", t.EstimateS)
		}
		if !(t.WallClockS > 0 && t.WallClockS <= 1e6) {
			return m.errf(at("wall_clock_s"), "must be in (0, 1e6], got %v", t.WallClockS)
		}
		if t.Prompt == "" {
			t.Prompt = filepath.Join("tasks", t.ID, "prompt.md")
		}
		p, err := m.local(at("prompt"), t.Prompt)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil || len(bytes.TrimSpace(b)) == 0 || len(b) > maxPromptSize {
			return m.errf(at("prompt"), "%s must be a readable, non-empty file under %d bytes", t.Prompt, maxPromptSize)
		}
		t.Prompt, t.PromptText = p, string(b)
		if t.Hidden == "" {
			t.Hidden = filepath.Join("tasks", t.ID, "hidden")
		}
		if t.Hidden, err = m.local(at("hidden"), t.Hidden); err != nil {
			return err
		}
		if fi, err := os.Stat(t.Hidden); err == nil && !fi.IsDir() {
			return m.errf(at("hidden"), "%s is not a directory", t.Hidden)
		}
	}
	for i, t := range ts.Tasks {
		for j, d := range t.Deps {
			if _, ok := ids[d]; !ok || d == t.ID {
				return m.errf(path{"tasks", i, "deps", j}, "unknown dependency %q", d)
			}
		}
	}
	if s := ts.Scripted; s != nil {
		if s.Single != "" {
			if s.Single, err = m.dirPath(path{"scripted", "single"}, s.Single); err != nil {
				return err
			}
		}
		if s.Swarm, err = m.dirPath(path{"scripted", "swarm"}, s.Swarm); err != nil {
			return err
		}
		if !(s.TurnS >= 0 && s.TurnS <= 600) {
			return m.errf(path{"scripted", "turn_s"}, "must be in [0, 600], got %v", s.TurnS)
		}
		for id, paths := range s.Reads {
			if _, ok := ids[id]; !ok {
				return m.errf(path{"scripted", "reads", id}, "unknown task %q", id)
			}
			for k, p := range paths {
				if strings.TrimSpace(p) == "" || !filepath.IsLocal(p) {
					return m.errf(path{"scripted", "reads", id, k}, "%q must be a relative path inside the repository", p)
				}
			}
		}
	}
	return nil
}

// blank returns the index of the first entry of list that is empty or only
// spaces, or -1.
func blank(list []string) int {
	return slices.IndexFunc(list, func(s string) bool { return strings.TrimSpace(s) == "" })
}

// local resolves a path of the manifest inside the task set.
func (m *manifest) local(at path, p string) (string, error) {
	if !filepath.IsLocal(p) {
		return "", m.errf(at, "%q must be a relative path inside the task set", p)
	}
	return filepath.Join(m.ts.Dir, p), nil
}

// dirPath resolves a directory of the manifest and checks that it exists.
func (m *manifest) dirPath(at path, p string) (string, error) {
	abs, err := m.local(at, p)
	if err != nil {
		return "", err
	}
	if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
		return "", m.errf(at, "%s is not a directory", p)
	}
	return abs, nil
}

// Task returns the task with id, or nil.
func (ts *TaskSet) Task(id string) *Task {
	i := slices.IndexFunc(ts.Tasks, func(t *Task) bool { return t.ID == id })
	if i < 0 {
		return nil
	}
	return ts.Tasks[i]
}

// ScriptedFiles returns what the scripted agents write: for the single
// arm under the key SingleTaskID, for the swarm arm per task id; each a
// map of slash-separated path to content. It fails if the task set has no
// scripted agents.
func (ts *TaskSet) ScriptedFiles(arm Arm) (map[string]map[string]string, error) {
	if ts.Scripted == nil {
		return nil, setErr(ManifestName, "no scripted agents (scripted: single, swarm)")
	}
	out := map[string]map[string]string{}
	if arm == Single && ts.Scripted.Single != "" {
		files, err := readTree(ts.Scripted.Single)
		if err != nil {
			return nil, err
		}
		out[SingleTaskID] = files
		return out, nil
	}
	for _, t := range ts.Tasks {
		dir := filepath.Join(ts.Scripted.Swarm, t.ID)
		if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
			out[t.ID] = map[string]string{} // an agent that writes nothing
			continue
		}
		files, err := readTree(dir)
		if err != nil {
			return nil, err
		}
		out[t.ID] = files
	}
	if arm == Swarm {
		return out, nil
	}
	// No tree of its own: the single agent writes what the swarm's agents
	// write, all of it.
	union := map[string]string{}
	for _, t := range ts.Tasks {
		for p, content := range out[t.ID] {
			if prev, ok := union[p]; ok && prev != content {
				return nil, setErr(ManifestName, "scripted.single is not given and two swarm tasks write %s differently", p)
			}
			union[p] = content
		}
	}
	return map[string]map[string]string{SingleTaskID: union}, nil
}

// readTree reads the regular files under dir.
func readTree(dir string) (map[string]string, error) {
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !d.Type().IsRegular() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files[filepath.ToSlash(rel)] = string(b)
		return nil
	})
	return files, err
}

// Digest is a SHA-256 of the task set's files (paths and contents), so a
// report names exactly what it evaluated.
func (ts *TaskSet) Digest() (string, error) {
	h := sha256.New()
	err := filepath.WalkDir(ts.Dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, err := filepath.Rel(ts.Dir, p)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", filepath.ToSlash(rel), len(b))
		h.Write(b)
		return nil
	})
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Check kinds of the grading.
const (
	Visible = "visible" // a check the agents are told about and apiary's gates run
	Hidden  = "hidden"  // an acceptance check the agents never see
)

// GradingCheck is one check of the grading. Task is "" for the set's
// visible checks, which grade the whole tree.
type GradingCheck struct {
	Task    string `json:"task,omitempty"`
	Kind    string `json:"kind"`
	Command string `json:"command"`
}

// Grading is the checks both arms are graded with, in order: the set's
// visible checks, then each task's visible and hidden checks. It depends
// on the task set alone, so both arms get the same list.
func (ts *TaskSet) Grading() []GradingCheck {
	var out []GradingCheck
	for _, c := range ts.Checks {
		out = append(out, GradingCheck{Kind: Visible, Command: c})
	}
	for _, t := range ts.Tasks {
		for _, c := range t.Checks {
			out = append(out, GradingCheck{Task: t.ID, Kind: Visible, Command: c})
		}
		for _, c := range t.HiddenChecks {
			out = append(out, GradingCheck{Task: t.ID, Kind: Hidden, Command: c})
		}
	}
	return out
}
