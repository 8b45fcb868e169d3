package plan

import (
	"errors"
	"testing"
)

// FuzzParse: no input panics or hangs; errors are always located
// *FieldErrors; an accepted plan analyses within the schedule bounds.
func FuzzParse(f *testing.F) {
	f.Add([]byte(worked))
	f.Add([]byte(base))
	f.Add([]byte(`{"version":1,"tasks":[{"id":"a","objective":"x","agent":"claude","write_scope":["."],"deps":[{"task":"a"}]}]}`))
	f.Add([]byte("version: 1\ntasks:\n  - &a {id: a, objective: x, agent: aider, write_scope: []}\n  - {<<: *a, id: b, deps: [a]}\n"))
	f.Add([]byte("a: &a [*a]\n"))
	f.Add([]byte("version: 1\ntasks: [{id: x, objective: y, agent: claude, write_scope: [../up]}]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse("fuzz.yaml", data)
		if err != nil {
			var errs Errors
			if !errors.As(err, &errs) || len(errs) == 0 {
				t.Fatalf("error %v is not a non-empty Errors", err)
			}
			for _, e := range errs {
				if e.Err == nil || e.File != "fuzz.yaml" {
					t.Fatalf("unclassified or unlocated error %+v", e)
				}
			}
			return
		}
		a := p.Analyze(3)
		if len(a.CriticalPath) == 0 || a.MakespanS < a.CriticalPathS-eps || a.MakespanS > a.WorkS/3+a.CriticalPathS+eps {
			t.Fatalf("analysis out of bounds: %+v", a)
		}
	})
}
