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

	"gopkg.in/yaml.v3"
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
	maxTasks      = 200
	maxPromptSize = 64 << 10
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

// Parse validates the manifest data of the task set in directory dir
// (absolute) and reads its prompts.
func Parse(dir string, data []byte) (*TaskSet, error) {
	ts := &TaskSet{Dir: dir}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(ts); err != nil {
		return nil, setErr(ManifestName, "%v", err)
	}
	ts.Dir = dir
	if ts.Version != 1 {
		return nil, setErr(ManifestName, "version must be 1, got %d", ts.Version)
	}
	if ts.Name == "" {
		return nil, setErr(ManifestName, "name is required")
	}
	if hasBlank(ts.Checks) {
		return nil, setErr(ManifestName, "checks must not hold empty commands")
	}
	if ts.Repo == "" {
		ts.Repo = "repo"
	}
	if ts.CheckTimeoutS == 0 {
		ts.CheckTimeoutS = 600
	}
	if !(ts.CheckTimeoutS > 0 && ts.CheckTimeoutS <= 86400) || ts.Swarm.MaxParallel < 0 {
		return nil, setErr(ManifestName, "check_timeout_s must be in (0, 86400] and swarm.max_parallel >= 0")
	}
	var err error
	if ts.Repo, err = ts.dirPath("repo", ts.Repo); err != nil {
		return nil, err
	}
	if len(ts.Tasks) == 0 || len(ts.Tasks) > maxTasks {
		return nil, setErr(ManifestName, "want 1 to %d tasks, got %d", maxTasks, len(ts.Tasks))
	}
	ids := map[string]bool{}
	for i, t := range ts.Tasks {
		where := fmt.Sprintf("tasks[%d]", i)
		if t == nil || !idPattern.MatchString(t.ID) || t.ID == SingleTaskID {
			return nil, setErr(ManifestName, "%s: id must match [a-z0-9-]{1,64} and not be %q", where, SingleTaskID)
		}
		where = "task " + t.ID
		if ids[t.ID] {
			return nil, setErr(ManifestName, "%s: duplicate id", where)
		}
		ids[t.ID] = true
		if len(t.WriteScope) == 0 {
			return nil, setErr(ManifestName, "%s: write_scope is required", where)
		}
		if len(t.HiddenChecks) == 0 {
			return nil, setErr(ManifestName, "%s: hidden_checks is required: a task is judged by checks its agent never sees", where)
		}
		if hasBlank(t.WriteScope) || hasBlank(t.Checks) || hasBlank(t.HiddenChecks) {
			return nil, setErr(ManifestName, "%s: write_scope, checks and hidden_checks must not hold empty entries", where)
		}
		if t.EstimateS == 0 {
			t.EstimateS = 60
		}
		if t.WallClockS == 0 {
			t.WallClockS = 900
		}
		if !(t.EstimateS > 0 && t.EstimateS <= 1e6) || !(t.WallClockS > 0 && t.WallClockS <= 1e6) {
			return nil, setErr(ManifestName, "%s: estimate_s and wall_clock_s must be in (0, 1e6]", where)
		}
		if t.Prompt == "" {
			t.Prompt = filepath.Join("tasks", t.ID, "prompt.md")
		}
		p, err := ts.local(where+": prompt", t.Prompt)
		if err != nil {
			return nil, err
		}
		b, err := os.ReadFile(p)
		if err != nil || len(bytes.TrimSpace(b)) == 0 || len(b) > maxPromptSize {
			return nil, setErr(ManifestName, "%s: prompt %s must be a readable, non-empty file under %d bytes", where, t.Prompt, maxPromptSize)
		}
		t.Prompt, t.PromptText = p, string(b)
		if t.Hidden == "" {
			t.Hidden = filepath.Join("tasks", t.ID, "hidden")
		}
		if t.Hidden, err = ts.local(where+": hidden", t.Hidden); err != nil {
			return nil, err
		}
		if fi, err := os.Stat(t.Hidden); err == nil && !fi.IsDir() {
			return nil, setErr(ManifestName, "%s: hidden %s is not a directory", where, t.Hidden)
		}
	}
	for _, t := range ts.Tasks {
		for _, d := range t.Deps {
			if !ids[d] || d == t.ID {
				return nil, setErr(ManifestName, "task %s: unknown dependency %q", t.ID, d)
			}
		}
	}
	if s := ts.Scripted; s != nil {
		if s.Single, err = ts.dirPath("scripted.single", s.Single); err != nil {
			return nil, err
		}
		if s.Swarm, err = ts.dirPath("scripted.swarm", s.Swarm); err != nil {
			return nil, err
		}
		if !(s.DelayS >= 0 && s.DelayS <= 3600) {
			return nil, setErr(ManifestName, "scripted.delay_s must be in [0, 3600]")
		}
	}
	return ts, nil
}

// hasBlank reports whether any entry of list is empty or only spaces.
func hasBlank(list []string) bool {
	return slices.ContainsFunc(list, func(s string) bool { return strings.TrimSpace(s) == "" })
}

// local resolves a path of the manifest inside the task set.
func (ts *TaskSet) local(field, p string) (string, error) {
	if !filepath.IsLocal(p) {
		return "", setErr(ManifestName, "%s: %q must be a relative path inside the task set", field, p)
	}
	return filepath.Join(ts.Dir, p), nil
}

// dirPath resolves a directory of the manifest and checks that it exists.
func (ts *TaskSet) dirPath(field, p string) (string, error) {
	abs, err := ts.local(field, p)
	if err != nil {
		return "", err
	}
	if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
		return "", setErr(ManifestName, "%s: %s is not a directory", field, p)
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
