// Package plan reads a plan file (YAML or JSON) into a validated DAG of tasks
// and analyses it: work, critical path, width (a maximum antichain), a
// list schedule on P workers, speedup and the Amdahl bound.
//
// Parse reads the document strictly (see internal/strictyaml), checks it
// against the plan JSON Schema (see internal/envelope/schema/plan.json) and
// then checks what a schema cannot: unique ids, known deps and agents, no
// cycles, scopes inside the repository. Every problem is reported in one
// pass — schema violations together with the checks after them, except
// those about a value the schema already rejected — each as a *FieldError
// naming the file, line, column and field path; CheckRepo adds the
// repository-side checks (a dirty working tree, a missing integration
// branch) that need a repository.
//
// Defaults applied by Parse: max_parallel 4, deps kind data, forbidden all
// built-in patterns, estimate_s 60, lease_s 30, check_timeout_s 600; an
// empty integration_branch means the repository's current branch, which
// CheckRepo resolves. Built-in agent profiles: claude, codex, gemini, opencode, aider.
package plan

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/strictyaml"
)

// Defaults for fields a plan may omit.
const (
	DefaultMaxParallel   = 4
	DefaultEstimateS     = 60.0
	DefaultLeaseS        = 30.0
	DefaultCheckTimeoutS = 600.0
)

// BuiltinAgents are the profile names that need no definition in agents:.
func BuiltinAgents() []string { return []string{"claude", "codex", "gemini", "opencode", "aider"} }

// Plan is a validated plan. Tasks are in file order; every dependency names a
// task of the plan and the graph is acyclic. A Plan is not modified by the
// methods of this package and is safe for concurrent reads.
type Plan struct {
	File              string // name used in error messages
	Version           int
	IntegrationBranch string // "" means the current branch; see CheckRepo
	MaxParallel       int
	// IntentWaitS is swarm mode's wait for an overlapping earlier intent;
	// 0 leaves the run's default.
	IntentWaitS float64
	Sealed      []string // plan-wide sealed paths (also merged into each task's)
	Agents      map[string]Agent
	Groups      []Group
	Tasks       []*Task
	// Merge tunes swarm mode's merge role for this plan (nil: the
	// defaults, or what apiary.yaml and the flags say).
	Merge *Merge

	index map[string]int // task id → position in Tasks
	doc   *strictyaml.Document
}

// Agent is an agent profile.
type Agent struct {
	Kind        string            `json:"kind"` // command | claude | codex | gemini | aider
	Argv        []string          `json:"argv,omitempty"`
	Env         map[string]string `json:"env,omitempty"`
	Model       string            `json:"model,omitempty"`
	Args        []string          `json:"args,omitempty"`
	Description string            `json:"description,omitempty"`
	// Tools and MaxTurns restrict a Claude Code agent (see agent.Profile).
	Tools    []string `json:"tools,omitempty"`
	MaxTurns int      `json:"max_turns,omitempty"`
	Builtin  bool     `json:"-"` // true for a built-in the plan did not redefine
}

// Task is one node of the plan.
type Task struct {
	ID            string          `json:"id"`
	Objective     string          `json:"objective"`
	Agent         string          `json:"agent"`
	Deps          []envelope.Dep  `json:"deps"`
	WriteScope    []string        `json:"write_scope"` // cleaned; "." is the whole tree
	Sealed        []string        `json:"sealed"`      // the task's own plus the plan's, cleaned
	Inputs        []string        `json:"inputs,omitempty"`
	Checks        []string        `json:"checks,omitempty"`
	CheckTimeoutS float64         `json:"check_timeout_s"`
	Forbidden     []string        `json:"forbidden"`
	Budget        envelope.Budget `json:"budget"`
	EstimateS     float64         `json:"estimate_s"`
	LeaseS        float64         `json:"lease_s"`
	Tags          []string        `json:"tags,omitempty"`
	HedgeAfterS   float64         `json:"hedge_after_s,omitempty"`
	HedgeAgent    string          `json:"hedge_agent,omitempty"`
	Quorum        *Quorum         `json:"quorum,omitempty"`

	// EstimateDefaulted is true when the plan gave no estimate_s.
	EstimateDefaulted bool `json:"-"`
}

// Quorum runs N speculative attempts and continues after K pass.
type Quorum struct {
	N int `json:"n"`
	K int `json:"k"`
}

// Group is a supervision group.
type Group struct {
	Name        string   `json:"name"`
	Strategy    string   `json:"strategy"` // one_for_one | one_for_all
	MaxRestarts int      `json:"max_restarts,omitempty"`
	WithinS     float64  `json:"within_s,omitempty"`
	Tasks       []string `json:"tasks"`
}

// Task returns the task with the given id, or nil.
func (p *Plan) Task(id string) *Task {
	i, ok := p.index[id]
	if !ok {
		return nil
	}
	return p.Tasks[i]
}

// Load reads and parses a plan file.
func Load(path string) (*Plan, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("plan: %w", err)
	}
	return Parse(filepath.Base(path), data)
}

// Merge is a plan's merge: section, what swarm mode's merge role does with
// what it finds. Empty fields keep the defaults.
type Merge struct {
	// OnExact and OnNear: warn, reject or reuse a candidate that adds an
	// exact or a near duplicate of an existing function.
	OnExact string `json:"on_exact,omitempty"`
	OnNear  string `json:"on_near,omitempty"`
	// NearDup is the similarity at which a function is a near duplicate.
	NearDup float64 `json:"near_dup,omitempty"`
	// HotTouches is the number of tasks writing one file that makes it hot
	// (its split task is then added); NoSplit reports hot files only.
	HotTouches int  `json:"hot_touches,omitempty"`
	NoSplit    bool `json:"no_split,omitempty"`
}

// raw mirrors the document for decoding after schema validation.
type raw struct {
	Version           int              `json:"version"`
	IntegrationBranch string           `json:"integration_branch"`
	MaxParallel       int              `json:"max_parallel"`
	IntentWaitS       float64          `json:"intent_wait_s"`
	Sealed            []string         `json:"sealed"`
	Agents            map[string]Agent `json:"agents"`
	Groups            []Group          `json:"groups"`
	Tasks             []rawTask        `json:"tasks"`
	Merge             *Merge           `json:"merge"`
}

type rawTask struct {
	Task
	Deps          []any     `json:"deps"` // each "id" or {task, kind}
	Forbidden     *[]string `json:"forbidden"`
	EstimateS     *float64  `json:"estimate_s"`
	LeaseS        *float64  `json:"lease_s"`
	CheckTimeoutS *float64  `json:"check_timeout_s"`
}

// dep reads a deps entry: "id" or {task, kind}, kind data by default.
func dep(v any) envelope.Dep {
	switch v := v.(type) {
	case string:
		return envelope.Dep{Task: v, Kind: envelope.DepData}
	case map[string]any:
		d := envelope.Dep{Kind: envelope.DepData}
		d.Task, _ = v["task"].(string)
		if k, ok := v["kind"].(string); ok {
			d.Kind = envelope.DepKind(k)
		}
		return d
	}
	return envelope.Dep{Kind: envelope.DepData}
}

// Parse parses and validates a plan document. file names it in errors. On
// failure the error is an Errors value holding every problem found.
func Parse(file string, data []byte) (*Plan, error) {
	return ParseWith(file, data, Options{})
}

// Options adjust ParseWith.
type Options struct {
	// Agents are profiles the plan's tasks may name besides the built-ins
	// (a planner's worker profile, say); the plan's own agents: entries
	// with the same name take precedence.
	Agents map[string]Agent
}

// ParseWith is Parse with options.
func ParseWith(file string, data []byte, opt Options) (*Plan, error) {
	doc, err := strictyaml.ParseAuto(file, data, strictyaml.Options{MaxBytes: envelope.MaxDocumentSize, MaxDepth: envelope.MaxDepth})
	if err != nil {
		var ses strictyaml.Errors
		if !errors.As(err, &ses) {
			return nil, err
		}
		errs := make(Errors, len(ses))
		for i, e := range ses {
			errs[i] = &FieldError{File: file, Line: e.Line, Column: e.Column, Path: e.Path.String(), Err: ErrSyntax, Msg: e.Msg}
		}
		return nil, errs
	}
	if doc.Empty() {
		return nil, Errors{{File: file, Line: 1, Err: ErrSyntax, Msg: "plan is empty"}}
	}
	schema, err := envelope.LookupSchema(envelope.SchemaPlan)
	if err != nil {
		return nil, err
	}
	vs := schema.Validate(doc.Value())
	var errs Errors
	for _, v := range vs {
		errs = append(errs, schemaError(file, doc, v))
	}
	// What fits the plan's shape decodes even when some of it does not,
	// so the checks below run on the rest; where the schema failed, they
	// would only repeat it.
	var r raw
	if derr := doc.Decode(&r); derr != nil && len(vs) == 0 {
		// The schema accepted the document, so this is a number out of
		// range for its field.
		var ses strictyaml.Errors
		if !errors.As(derr, &ses) {
			return nil, derr
		}
		for _, e := range ses {
			errs = append(errs, &FieldError{File: file, Line: e.Line, Column: e.Column, Path: e.Path.String(), Err: ErrSchema, Msg: e.Msg})
		}
	}
	p := build(file, &r, doc, opt.Agents)
	errs = append(errs, p.validate(rejected(vs))...)
	if len(errs) > 0 {
		sortErrors(errs)
		return nil, errs
	}
	return p, nil
}

// rejected returns a test of whether a path is at or under a value the
// schema rejected. A missing required field counts as rejected, and so
// does the object that misses it, though not its other fields.
func rejected(vs []envelope.Violation) func(path []any) bool {
	var under, at [][]any
	for _, v := range vs {
		if v.Missing != "" {
			at = append(at, v.Path)
			under = append(under, append(v.Path[:len(v.Path):len(v.Path)], v.Missing))
			continue
		}
		under = append(under, v.Path)
	}
	return func(path []any) bool {
		for _, b := range under {
			if len(b) <= len(path) && slices.Equal(b, path[:len(b)]) {
				return true
			}
		}
		for _, b := range at {
			if slices.Equal(b, path) {
				return true
			}
		}
		return false
	}
}

func schemaError(file string, doc *strictyaml.Document, v envelope.Violation) *FieldError {
	at := doc.Pos(v.Path)
	kind := ErrSchema
	// A task id (or a reference to one) that breaks [a-z0-9-]{1,64}.
	if v.Keyword == "pattern" && len(v.Path) >= 2 {
		switch last := v.Path[len(v.Path)-1]; {
		case last == "id" && v.Path[0] == "tasks",
			last == "task" || last == "name" && v.Path[0] == "groups",
			v.Path[0] == "tasks" && len(v.Path) == 4 && v.Path[2] == "deps",
			v.Path[0] == "groups" && len(v.Path) == 4 && v.Path[2] == "tasks":
			kind = ErrBadID
		}
	}
	return &FieldError{File: file, Line: at.Line, Column: at.Column, Path: envelope.FormatPath(v.Path), Err: kind, Msg: v.Message}
}

func build(file string, r *raw, doc *strictyaml.Document, extra map[string]Agent) *Plan {
	p := &Plan{
		File:              file,
		Version:           r.Version,
		IntegrationBranch: r.IntegrationBranch,
		MaxParallel:       r.MaxParallel,
		IntentWaitS:       r.IntentWaitS,
		Sealed:            r.Sealed,
		Agents:            map[string]Agent{},
		Groups:            r.Groups,
		Merge:             r.Merge,
		index:             make(map[string]int, len(r.Tasks)),
		doc:               doc,
	}
	if p.MaxParallel == 0 {
		p.MaxParallel = DefaultMaxParallel
	}
	for _, b := range BuiltinAgents() {
		p.Agents[b] = Agent{Kind: b, Builtin: true}
	}
	for name, a := range extra {
		p.Agents[name] = a
	}
	for name, a := range r.Agents {
		p.Agents[name] = a
	}
	for i := range r.Tasks {
		rt := &r.Tasks[i]
		t := rt.Task
		t.Deps = make([]envelope.Dep, len(rt.Deps))
		for j, d := range rt.Deps {
			t.Deps[j] = dep(d)
		}
		t.Forbidden = envelope.BuiltinPatterns()
		if rt.Forbidden != nil {
			t.Forbidden = *rt.Forbidden
		}
		t.EstimateS, t.EstimateDefaulted = DefaultEstimateS, true
		if rt.EstimateS != nil {
			t.EstimateS, t.EstimateDefaulted = *rt.EstimateS, false
		}
		t.LeaseS = DefaultLeaseS
		if rt.LeaseS != nil {
			t.LeaseS = *rt.LeaseS
		}
		t.CheckTimeoutS = DefaultCheckTimeoutS
		if rt.CheckTimeoutS != nil {
			t.CheckTimeoutS = *rt.CheckTimeoutS
		}
		if t.WriteScope == nil {
			t.WriteScope = []string{}
		}
		t.Sealed = append(append([]string{}, t.Sealed...), r.Sealed...)
		p.Tasks = append(p.Tasks, &t)
		if _, dup := p.index[t.ID]; !dup {
			p.index[t.ID] = i
		}
	}
	return p
}

// Summary is the one line `apiary plan validate` prints for a valid plan:
// its file, how many tasks and agent profiles of its own it has and, when
// not "", the branch it integrates into.
func (p *Plan) Summary(branch string) string {
	defined := 0
	for _, a := range p.Agents {
		if !a.Builtin {
			defined++
		}
	}
	s := fmt.Sprintf("%s: ok: %d tasks, %d agent profile", p.File, len(p.Tasks), defined)
	if defined != 1 {
		s += "s"
	}
	if branch != "" {
		s += ", integrating into " + branch
	}
	return s
}
