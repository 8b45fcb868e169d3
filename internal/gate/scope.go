package gate

import (
	"fmt"
	"strings"

	"github.com/apiary-dev/apiary/internal/git"
)

// InScope reports whether path (relative to the repository root) falls
// under scope: "." is the whole tree; "dir/" is everything below dir;
// "name" is the file name itself or everything below a directory name.
// Matching is by whole path components: "src/parse" does not cover
// "src/parser.go".
func InScope(path, scope string) bool {
	if scope == "." || scope == "./" {
		return true
	}
	if dir, ok := strings.CutSuffix(scope, "/"); ok {
		return strings.HasPrefix(path, dir+"/")
	}
	return path == scope || strings.HasPrefix(path, scope+"/")
}

func inAny(path string, scopes []string) bool {
	for _, s := range scopes {
		if InScope(path, s) {
			return true
		}
	}
	return false
}

// scopeFailures checks changed paths against the write scope and the sealed
// paths: every changed path must be inside the write scope and none inside
// a sealed path. A deletion or a rename counts as changing the path.
func scopeFailures(changes []git.Change, writeScope, sealed []string) []Failure {
	var out []Failure
	for _, c := range changes {
		if !inAny(c.Path, writeScope) {
			scope := "nothing: the write scope is empty"
			if len(writeScope) > 0 {
				scope = "only " + strings.Join(writeScope, ", ")
			}
			out = append(out, Failure{Gate: GateScope, File: c.Path,
				Detail: fmt.Sprintf("%s %s is outside the write scope (the task may change %s)", ChangeVerb(c.Status), c.Path, scope)})
		}
		if inAny(c.Path, sealed) {
			out = append(out, Failure{Gate: GateSealed, File: c.Path,
				Detail: fmt.Sprintf("%s %s, which is sealed", ChangeVerb(c.Status), c.Path)})
		}
	}
	return out
}

// ChangeVerb says in words what a change of status (A, D, T, M) did to a
// path.
func ChangeVerb(status byte) string {
	switch status {
	case 'A':
		return "added"
	case 'D':
		return "deleted"
	case 'T':
		return "changed the type of"
	}
	return "modified"
}
