// Package plan reads a plan file (YAML or JSON) into a validated DAG of tasks
// and analyses it: work, critical path, width (a maximum antichain), a
// list schedule on P workers, speedup and the Amdahl bound.
//
// Parse checks the document against the plan JSON Schema (see
// internal/envelope/schema/plan.json) and then checks what a schema cannot:
// unique ids, known deps and agents, no cycles, scopes inside the
// repository. Every problem is reported, each as a *FieldError naming the
// file, line and field path; CheckRepo adds the repository-side checks (a
// dirty working tree, a missing integration branch) that need a repository.
//
// Defaults applied by Parse: max_parallel 4, deps kind data, forbidden all
// built-in patterns, estimate_s 60, lease_s 30, check_timeout_s 600; an
// empty integration_branch means the repository's current branch, which
// CheckRepo resolves. Built-in agent profiles: claude, codex, gemini, aider.
package plan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/apiary-dev/apiary/internal/envelope"
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
	Sealed            []string // plan-wide sealed paths (also merged into each task's)
	Agents            map[string]Agent
	Groups            []Group
	Tasks             []*Task

	index map[string]int // task id → position in Tasks
	pos   *posTree
}

// Agent is an agent profile.
type Agent struct {
	Kind        string            `json:"kind"` // command | claude | codex | gemini | aider
	Argv        []string          `json:"argv,omitempty"`
	Env         map[string]string `json:"env,omitempty"`
	Model       string            `json:"model,omitempty"`
	Args        []string          `json:"args,omitempty"`
	Description string            `json:"description,omitempty"`
	Builtin     bool              `json:"-"` // true for a built-in the plan did not redefine
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

// raw mirrors the document for decoding after schema validation.
type raw struct {
	Version           int              `json:"version"`
	IntegrationBranch string           `json:"integration_branch"`
	MaxParallel       int              `json:"max_parallel"`
	Sealed            []string         `json:"sealed"`
	Agents            map[string]Agent `json:"agents"`
	Groups            []Group          `json:"groups"`
	Tasks             []rawTask        `json:"tasks"`
}

type rawTask struct {
	Task
	Deps          []rawDep  `json:"deps"`
	Forbidden     *[]string `json:"forbidden"`
	EstimateS     *float64  `json:"estimate_s"`
	LeaseS        *float64  `json:"lease_s"`
	CheckTimeoutS *float64  `json:"check_timeout_s"`
}

// rawDep is "id" or {task, kind}.
type rawDep envelope.Dep

func (d *rawDep) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		d.Kind = envelope.DepData
		return json.Unmarshal(b, &d.Task)
	}
	var o envelope.Dep
	if err := json.Unmarshal(b, &o); err != nil {
		return err
	}
	if o.Kind == "" {
		o.Kind = envelope.DepData
	}
	*d = rawDep(o)
	return nil
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
	tree, ps, err := decodeTree(file, data)
	if err != nil {
		return nil, Errors{err.(*FieldError)}
	}
	schema, err := envelope.LookupSchema(envelope.SchemaPlan)
	if err != nil {
		return nil, err
	}
	if vs := schema.Validate(tree); len(vs) > 0 {
		errs := make(Errors, 0, len(vs))
		for _, v := range vs {
			errs = append(errs, schemaError(file, ps, v))
		}
		sortErrors(errs)
		return nil, errs
	}
	// The tree satisfies the schema, so it decodes into raw.
	js, err := json.Marshal(tree)
	if err != nil {
		return nil, fmt.Errorf("plan: re-encoding %s: %w", file, err)
	}
	var r raw
	dec := json.NewDecoder(bytes.NewReader(js))
	if err := dec.Decode(&r); err != nil {
		return nil, Errors{{File: file, Line: 1, Err: ErrSchema, Msg: err.Error()}}
	}
	p := build(file, &r, ps, opt.Agents)
	if errs := p.validate(); len(errs) > 0 {
		sortErrors(errs)
		return nil, errs
	}
	return p, nil
}

func schemaError(file string, ps *posTree, v envelope.Violation) *FieldError {
	at := ps.lookup(v.Path)
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
	return &FieldError{File: file, Line: at.line, Column: at.col, Path: envelope.FormatPath(v.Path), Err: kind, Msg: v.Message}
}

func build(file string, r *raw, ps *posTree, extra map[string]Agent) *Plan {
	p := &Plan{
		File:              file,
		Version:           r.Version,
		IntegrationBranch: r.IntegrationBranch,
		MaxParallel:       r.MaxParallel,
		Sealed:            r.Sealed,
		Agents:            map[string]Agent{},
		Groups:            r.Groups,
		index:             make(map[string]int, len(r.Tasks)),
		pos:               ps,
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
			t.Deps[j] = envelope.Dep(d)
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
