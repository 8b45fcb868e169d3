package eval

import (
	"errors"
	"strings"
	"testing"
)

// TestParseErrorsLocated: a manifest's problems name the line, column and
// field; decoding problems are all reported at once.
func TestParseErrorsLocated(t *testing.T) {
	t.Parallel()
	base := map[string]string{"repo/x": "x", "tasks/a/prompt.md": "do a\n"}
	tests := map[string]struct{ manifest, want string }{
		"unknown fields": {
			"version: 1\nname: s\nbogus: 1\ntasks:\n  - {id: a, write_scope: [x], hidden_checks: [true], promt: p.md}\n",
			"eval: bad task set: taskset.yaml:3:1: bogus: unknown field (want one of version, name, description, repo, checks, check_timeout_s, swarm, tasks, scripted)\n" +
				"taskset.yaml:5:54: tasks[0].promt: unknown field (want one of id, prompt, write_scope, deps, checks, estimate_s, wall_clock_s, hidden, hidden_checks)",
		},
		"wrong type": {
			"version: one\nname: s\ntasks: [{id: a, write_scope: [x], hidden_checks: [true]}]\n",
			"eval: bad task set: taskset.yaml:1:10: version: cannot unmarshal !!str `one` into int",
		},
		"duplicate key": {
			"version: 1\nname: s\nname: t\ntasks: [{id: a, write_scope: [x], hidden_checks: [true]}]\n",
			`eval: bad task set: taskset.yaml:3:1: name: key "name" given twice (first at line 2)`,
		},
		"duplicate id": {
			"version: 1\nname: s\ntasks:\n  - {id: a, write_scope: [x], hidden_checks: [true]}\n  - {id: a, write_scope: [y], hidden_checks: [true]}\n",
			`eval: bad task set: taskset.yaml:5:6: tasks[1].id: task id "a" already used by tasks[0]`,
		},
		"missing hidden checks": {
			"version: 1\nname: s\ntasks:\n  - {id: a, write_scope: [x]}\n",
			"eval: bad task set: taskset.yaml:4:5: tasks[0].hidden_checks: required: a task is judged by checks its agent never sees",
		},
		"escaping prompt": {
			"version: 1\nname: s\ntasks:\n  - {id: a, prompt: ../p.md, write_scope: [x], hidden_checks: [true]}\n",
			`eval: bad task set: taskset.yaml:4:13: tasks[0].prompt: "../p.md" must be a relative path inside the task set`,
		},
		"unknown dependency": {
			"version: 1\nname: s\ntasks:\n  - id: a\n    deps: [b]\n    write_scope: [x]\n    hidden_checks: [true]\n",
			`eval: bad task set: taskset.yaml:5:12: tasks[0].deps[0]: unknown dependency "b"`,
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			files := map[string]string{ManifestName: tt.manifest}
			for k, v := range base {
				files[k] = v
			}
			_, err := Load(writeSet(t, files))
			if !errors.Is(err, ErrTaskSet) {
				t.Fatalf("err %v, want ErrTaskSet", err)
			}
			if got := err.Error(); got != tt.want {
				t.Errorf("error\n got %s\nwant %s", got, tt.want)
			}
		})
	}
	// A field without a tag is not part of the manifest.
	_, err := Parse(t.TempDir(), []byte("version: 1\nname: s\ndir: /etc\n"))
	if err == nil || !strings.Contains(err.Error(), "dir: unknown field") {
		t.Errorf("dir: %v", err)
	}
}
