package runs

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"

	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/gate"
	"github.com/apiary-dev/apiary/internal/rundir"
	"github.com/apiary-dev/apiary/internal/supervise"
)

// Limits on what an agent may hand back as child tasks.
const (
	maxChildFiles = 64
	maxChildBytes = 1 << 20
)

// Reasons a child envelope is refused; each wraps ErrChild.
var (
	ErrChildDepth  = fmt.Errorf("%w: depth limit", ErrChild)
	ErrChildScope  = fmt.Errorf("%w: write scope wider than the parent's", ErrChild)
	ErrChildBudget = fmt.Errorf("%w: budget exceeds what the parent has left", ErrChild)
	ErrChildName   = fmt.Errorf("%w: bad or duplicate name", ErrChild)
	ErrChildDeps   = fmt.Errorf("%w: unknown dependency", ErrChild)
	ErrChildAgent  = fmt.Errorf("%w: unknown agent profile", ErrChild)
	ErrChildFile   = fmt.Errorf("%w: unreadable or invalid envelope", ErrChild)
)

// childFile is one envelope an agent left in .apiary/out/tasks/.
type childFile struct {
	file string
	env  *envelope.Envelope
	err  error
}

// childSpec is an accepted child, waiting for its parent's success.
type childSpec struct {
	name   string
	env    *envelope.Envelope // complete but for inputs.workspace and trace
	file   string             // children/NAME.json, relative to the parent's task directory
	budget *supervise.Budget  // carved from the parent's
}

// keepChildren validates the child envelopes of a worker attempt and keeps
// the accepted ones (on disk and on the task) until the task succeeds.
func (r *runner) keepChildren(t *taskState, a *attemptState, files []childFile) {
	for _, k := range t.children { // an earlier attempt's: released
		if k.budget != nil {
			k.budget.Close()
		}
	}
	kids, notes := r.acceptChildren(t, files)
	t.children = nil
	for _, n := range notes {
		t.notes = append(t.notes, n)
		r.must(r.st.Emit(Event{Kind: rundir.EvChildRefused, Parent: t.name, Reason: n}))
	}
	for _, k := range kids {
		e := *k.env
		e.Inputs.Workspace = "git:" + a.base
		if err := rundir.WriteEnvelope(r.st.Task(t.name).ChildPath(k.name), &e, true); err != nil {
			t.notes = append(t.notes, fmt.Sprintf("child %s refused: %v", k.name, err))
			continue
		}
		t.children = append(t.children, k)
	}
}

// readChildren decodes the envelopes in dir (sorted by file name).
func readChildren(dir string) []childFile {
	names, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	sort.Strings(names)
	var out []childFile
	for i, n := range names {
		cf := childFile{file: filepath.Base(n)}
		if i >= maxChildFiles {
			cf.err = fmt.Errorf("%w: more than %d child envelopes", ErrChildFile, maxChildFiles)
			out = append(out, cf)
			break
		}
		b, err := rundir.ReadLimited(n, maxChildBytes)
		if err == nil {
			cf.env, err = envelope.DecodeEnvelope(b)
		}
		if err != nil {
			cf.err = fmt.Errorf("%w: %w", ErrChildFile, err)
		}
		out = append(out, cf)
	}
	return out
}

var taskNamePattern = regexp.MustCompile(`^[a-z0-9-]{1,64}$`)

// acceptChildren validates the envelopes a worker handed back against its
// task's authority and the run: depth, name, write scope within the
// parent's, sealed paths, forbidden patterns and checks inherited, budget
// carved from the parent's (at most SpawnAlpha of what it has left, see
// childBudget), dependencies on known tasks or earlier siblings, a known
// agent profile. It returns the accepted children and a
// note per refused one.
func (r *runner) acceptChildren(parent *taskState, files []childFile) ([]*childSpec, []string) {
	var ok []*childSpec
	var notes []string
	refuse := func(file string, err error) {
		notes = append(notes, fmt.Sprintf("child %s refused: %v", file, err))
	}
	names := map[string]bool{}
	for i, cf := range files {
		if cf.err != nil {
			refuse(cf.file, cf.err)
			continue
		}
		e := *cf.env
		name := e.Name
		if name == "" {
			name = parent.name + "-" + strconv.Itoa(i+1)
		}
		depth := parent.depth + 1
		switch {
		case depth > r.s.MaxDepth:
			refuse(cf.file, fmt.Errorf("%w: depth %d exceeds %d", ErrChildDepth, depth, r.s.MaxDepth))
			continue
		case !taskNamePattern.MatchString(name) || r.tasks[name] != nil || names[name]:
			refuse(cf.file, fmt.Errorf("%w: %q", ErrChildName, name))
			continue
		}
		if p := e.Agent.Profile; r.profiles[p].Kind == "" {
			refuse(cf.file, fmt.Errorf("%w: %q", ErrChildAgent, p))
			continue
		}
		if bad := outsideScope(e.Authority.WriteScope, parent.tmpl.Authority.WriteScope); bad != "" {
			refuse(cf.file, fmt.Errorf("%w: %q is not inside %v", ErrChildScope, bad, parent.tmpl.Authority.WriteScope))
			continue
		}
		deps := []envelope.Dep{{Task: parent.name, Kind: envelope.DepData}}
		var depErr error
		for _, d := range e.Deps {
			if d.Task == parent.name {
				continue
			}
			if r.tasks[d.Task] == nil && !names[d.Task] {
				depErr = fmt.Errorf("%w: %q (a child may depend on the run's tasks and on earlier siblings)", ErrChildDeps, d.Task)
				break
			}
			deps = append(deps, d)
		}
		if depErr != nil {
			refuse(cf.file, depErr)
			continue
		}
		kb, b, err := childBudget(parent.budget, parent.tmpl.Budget, r.s.SpawnAlpha, e.Budget)
		if err != nil {
			refuse(cf.file, err)
			continue
		}
		id, err := envelope.NewTaskID(r.s.now(), r.s.rnd)
		if err != nil {
			kb.Close()
			refuse(cf.file, err)
			continue
		}
		e.TaskID, e.ParentID, e.RunID, e.Name = id, parent.id, r.rec.RunID, name
		e.Depth, e.Budget, e.Deps = depth, b, deps
		e.Completion.Sealed = union(e.Completion.Sealed, parent.tmpl.Completion.Sealed)
		e.Completion.Forbidden = union(forbiddenOf(e.Completion.Forbidden), forbiddenOf(parent.tmpl.Completion.Forbidden))
		e.Completion.Checks = union(parent.tmpl.Completion.Checks, e.Completion.Checks)
		if e.Completion.CheckTimeoutS == 0 {
			e.Completion.CheckTimeoutS = parent.tmpl.Completion.CheckTimeoutS
		}
		if e.LeaseS == 0 {
			e.LeaseS = parent.tmpl.LeaseS
		}
		e.Trace, e.Reconcile = nil, nil
		names[name] = true
		ok = append(ok, &childSpec{name: name, env: &e, file: rundir.ChildName(name), budget: kb})
	}
	return ok, notes
}

// outsideScope returns the first path of child not covered by the parent's
// write scope, or "".
func outsideScope(child, parent []string) string {
	for _, c := range child {
		covered := false
		for _, p := range parent {
			if p == "." || c != "." && gate.InScope(trimSlash(c), p) {
				covered = true
				break
			}
		}
		if !covered {
			return c
		}
	}
	return ""
}

func trimSlash(s string) string {
	if len(s) > 1 && s[len(s)-1] == '/' {
		return s[:len(s)-1]
	}
	return s
}

func forbiddenOf(f []string) []string {
	if f == nil {
		return envelope.BuiltinPatterns()
	}
	return f
}

func union(a, b []string) []string {
	out := append([]string{}, a...)
	for _, x := range b {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}
