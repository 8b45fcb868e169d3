package eval

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apiary-dev/apiary/internal/plan"
)

// FuzzParse: any manifest is either a typed ErrTaskSet or a task set whose
// plans build, parse as plans, and never carry a hidden check.
func FuzzParse(f *testing.F) {
	f.Add([]byte("version: 1\nname: s\ntasks: [{id: a, write_scope: [x], hidden_checks: [\"grep -q HIDDENMARK x\"]}]\n"))
	f.Add([]byte("version: 1\nname: s\nchecks: [\"true\"]\nswarm: {max_parallel: 2}\ntasks:\n" +
		"  - {id: a, write_scope: [x], estimate_s: 5, hidden_checks: [HIDDENMARK]}\n" +
		"  - {id: b, deps: [a], write_scope: [y], hidden_checks: [HIDDENMARK]}\n"))
	f.Add([]byte("version: 1\nname: s\ntasks: [{id: a, prompt: ../outside.md, write_scope: [x], hidden_checks: [true]}]\n"))
	f.Add([]byte("version: 1\nname: s\ntasks: [{id: a, write_scope: [x], hidden_checks: [true]}]\nscripted: {swarm: repo, reads: {a: [x, ../y]}, turn_s: 1}\n"))
	f.Add([]byte("version: [\n"))
	f.Add([]byte(""))
	dir := f.TempDir()
	for name, content := range map[string]string{"repo/x": "x", "tasks/a/prompt.md": "do a\n", "tasks/b/prompt.md": "do b\n"} {
		full := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			f.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			f.Fatal(err)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ts, err := Parse(dir, data)
		if err != nil {
			if !errors.Is(err, ErrTaskSet) {
				t.Fatalf("error %v does not match ErrTaskSet", err)
			}
			return
		}
		if len(ts.Tasks) == 0 {
			t.Fatal("a task set without tasks was accepted")
		}
		// Whatever the hidden checks say, no plan carries them: mark them
		// with a string the manifest cannot hold and look for it.
		const marker = "\x00hidden-check-marker\x00"
		for i := range ts.Tasks {
			for j := range ts.Tasks[i].HiddenChecks {
				ts.Tasks[i].HiddenChecks[j] += marker
			}
		}
		o := Options{Budget: Budget{USD: 2}, Agent: plan.Agent{Kind: "claude"}}
		for _, arm := range []Arm{Single, Swarm} {
			out, err := BuildPlan(ts, arm, o)
			if err != nil {
				t.Fatalf("%s plan of an accepted task set: %v", arm, err)
			}
			if _, err := plan.Parse("plan.json", out); err != nil {
				t.Fatalf("%s plan does not parse: %v\n%s", arm, err, out)
			}
			if strings.Contains(string(out), "hidden-check-marker") {
				t.Fatalf("%s plan carries a hidden check:\n%s", arm, out)
			}
		}
	})
}
