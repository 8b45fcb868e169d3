package durable

import (
	"errors"
	"testing"
)

// denyTool refuses one tool.
type denyTool string

func (d denyTool) Allow(tool, _ string) error {
	if tool == string(d) {
		return errors.New("denied " + tool)
	}
	return nil
}

// TestAllOf: a call passes only when every authority allows it, and the
// first refusal is the answer.
func TestAllOf(t *testing.T) {
	t.Parallel()
	a := AllOf(WriteScope{"src"}, denyTool("rw.chunk_append"))
	for _, c := range []struct {
		tool, path string
		ok         bool
	}{
		{"rw.safe_write", "src/a.go", true},
		{"rw.safe_write", "docs/a.md", false},
		{"rw.chunk_append", "src/a.go", false},
		{"rw.chunk_append", "", false},
		{"rw.validate", "", true},
	} {
		if err := a.Allow(c.tool, c.path); (err == nil) != c.ok {
			t.Errorf("Allow(%s, %q) = %v, want ok %v", c.tool, c.path, err, c.ok)
		}
	}
}
