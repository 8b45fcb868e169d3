// Package eval answers whether a swarm beats one agent with the same
// budget. It runs a task set twice with apiary's runtime — once as a
// single agent given every task and the whole budget, once as a swarm of
// one agent per task sharing the same total budget — judges each task
// only by apiary's gates and by hidden acceptance checks the agents never
// see, and compares the two runs on quality, critical-path time and cost
// per accepted task.
//
// A task set is a directory:
//
//	taskset.yaml          the manifest (see TaskSet)
//	repo/                 the repository both runs start from
//	tasks/ID/prompt.md    what the agent is asked (default path)
//	tasks/ID/hidden/      files copied over the final tree before the
//	                      task's hidden checks run (default path)
//	scripted/single/      optional: the files a scripted single agent writes
//	scripted/swarm/ID/    optional: the files a scripted swarm agent writes
//
// Hidden checks stay out of the agents' sight: they are not in the
// repository, not in any plan or envelope, and are read from the task set
// only after a run has ended, into a scratch copy of its final tree.
package eval

import (
	"bytes"
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
// runs: Single is a tree the single agent writes; Swarm holds one tree per
// task id. DelayS is how long a scripted agent works per task (the single
// agent, on all of them, takes the sum).
type Scripted struct {
	Single string  `yaml:"single"`
	Swarm  string  `yaml:"swarm"`
	DelayS float64 `yaml:"delay_s"`
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
		if s.Single, err = m.dirPath(path{"scripted", "single"}, s.Single); err != nil {
			return err
		}
		if s.Swarm, err = m.dirPath(path{"scripted", "swarm"}, s.Swarm); err != nil {
			return err
		}
		if !(s.DelayS >= 0 && s.DelayS <= 3600) {
			return m.errf(path{"scripted", "delay_s"}, "must be in [0, 3600]")
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
	if arm == Single {
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
	return out, nil
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
