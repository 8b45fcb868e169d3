package plan

import (
	"fmt"
	"path"
	"strings"

	"github.com/apiary-dev/apiary/internal/envelope"
)

// validate runs the checks a schema cannot express and normalizes scopes.
// A problem at or under a path rejected reports true for is left out: the
// schema has reported that value already.
func (p *Plan) validate(rejected func(path []any) bool) Errors {
	var errs Errors
	add := func(kind error, at []any, format string, args ...any) {
		if rejected(at) {
			return
		}
		ps := p.doc.Pos(at)
		errs = append(errs, &FieldError{File: p.File, Line: ps.Line, Column: ps.Column, Path: envelope.FormatPath(at), Err: kind, Msg: fmt.Sprintf(format, args...)})
	}
	// Agents: a command profile needs argv.
	for name, a := range p.Agents {
		at := []any{"agents", name}
		if a.Kind == "command" && len(a.Argv) == 0 && !rejected(append(at, "argv")) && !rejected(append(at, "kind")) {
			add(ErrInvalid, at, "a command agent needs argv")
		}
	}
	rawPlanSealed := len(p.Sealed) // each task's Sealed ends with these, uncleaned
	p.Sealed = p.cleanScopes(p.Sealed, []any{"sealed"}, add)
	first := map[string]int{}
	for i, t := range p.Tasks {
		at := []any{"tasks", i}
		if j, dup := first[t.ID]; dup {
			add(ErrDuplicateID, append(at, "id"), "task id %q already used by tasks[%d] (line %d)", t.ID, j, p.doc.Pos([]any{"tasks", j, "id"}).Line)
		} else {
			first[t.ID] = i
		}
		if _, ok := p.Agents[t.Agent]; !ok {
			add(ErrUnknownAgent, append(at, "agent"), "unknown agent %q (define it under agents: or use %s)", t.Agent, strings.Join(BuiltinAgents(), ", "))
		}
		if t.HedgeAgent != "" {
			if _, ok := p.Agents[t.HedgeAgent]; !ok {
				add(ErrUnknownAgent, append(at, "hedge_agent"), "unknown agent %q", t.HedgeAgent)
			}
		}
		if q := t.Quorum; q != nil && q.K > q.N && !rejected(append(at, "quorum", "n")) {
			add(ErrInvalid, append(at, "quorum", "k"), "k = %d exceeds n = %d", q.K, q.N)
		}
		t.WriteScope = p.cleanScopes(t.WriteScope, append(at, "write_scope"), add)
		own := len(t.Sealed) - rawPlanSealed
		t.Sealed = append(p.cleanScopes(t.Sealed[:own], append(at, "sealed"), add), p.Sealed...)
		t.Inputs = p.cleanScopes(t.Inputs, append(at, "inputs"), add)
	}
	graphOK := len(first) == len(p.Tasks)
	for i, t := range p.Tasks {
		seen := map[string]bool{}
		for j, d := range t.Deps {
			at := []any{"tasks", i, "deps", j}
			switch _, known := p.index[d.Task]; {
			case !known:
				add(ErrUnknownDep, at, "unknown task %q", d.Task)
				graphOK = false
			case seen[d.Task]:
				add(ErrInvalid, at, "dependency on %q listed twice", d.Task)
			}
			seen[d.Task] = true
		}
	}
	groupOf := map[string]string{}
	groupNames := map[string]bool{}
	for i, g := range p.Groups {
		if groupNames[g.Name] {
			add(ErrInvalid, []any{"groups", i, "name"}, "group name %q already used", g.Name)
		}
		groupNames[g.Name] = true
		for j, id := range g.Tasks {
			at := []any{"groups", i, "tasks", j}
			if _, ok := p.index[id]; !ok {
				add(ErrUnknownDep, at, "unknown task %q", id)
				continue
			}
			if other, ok := groupOf[id]; ok {
				add(ErrInvalid, at, "task %q is already in group %q", id, other)
				continue
			}
			groupOf[id] = g.Name
		}
	}
	if graphOK {
		for _, c := range p.cycles() {
			names := make([]string, len(c)+1)
			for k, ti := range c {
				names[k] = p.Tasks[ti].ID
			}
			names[len(c)] = names[0]
			// c[0] depends on c[1]; locate the deps entry naming c[1].
			at := []any{"tasks", c[0], "deps"}
			for j, d := range p.Tasks[c[0]].Deps {
				if d.Task == names[1] {
					at = append(at, j)
					break
				}
			}
			add(ErrCycle, at, "dependency cycle: %s (each task depends on the next)", strings.Join(names, " → "))
		}
	}
	return errs
}

// cleanScopes normalizes repository-relative paths and reports any that
// escape the repository: absolute paths, ".." beyond the root, paths into
// .git. A trailing "/" is kept (it marks a directory prefix).
func (p *Plan) cleanScopes(in []string, at []any, add func(error, []any, string, ...any)) []string {
	out := make([]string, 0, len(in))
	for i, s := range in {
		c, err := CleanPath(s)
		if err != nil {
			add(ErrScopeEscape, append(at, i), "%v", err)
			continue
		}
		out = append(out, c)
	}
	return out
}

// CleanPath normalizes a path relative to the repository root ("./src//a/"
// becomes "src/a/"; "" and "./" become ".") and rejects paths that leave
// the repository's working tree.
func CleanPath(s string) (string, error) {
	switch {
	case strings.ContainsRune(s, 0):
		return "", fmt.Errorf("path %q contains a NUL byte", s)
	case strings.HasPrefix(s, "/"):
		return "", fmt.Errorf("path %q is absolute; scopes are relative to the repository root", s)
	case len(s) >= 2 && s[1] == ':' && (s[0]|0x20) >= 'a' && (s[0]|0x20) <= 'z':
		return "", fmt.Errorf("path %q is absolute; scopes are relative to the repository root", s)
	}
	c := path.Clean(s)
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", fmt.Errorf("path %q escapes the repository", s)
	}
	if first, _, _ := strings.Cut(c, "/"); strings.EqualFold(first, ".git") {
		return "", fmt.Errorf("path %q is inside .git", s)
	}
	if c != "." && strings.HasSuffix(s, "/") {
		c += "/"
	}
	return c, nil
}
