package plan

import "testing"

func TestSummary(t *testing.T) {
	t.Parallel()
	one, err := Parse("p.yaml", []byte("version: 1\nagents:\n  sh: {kind: command, argv: [sh]}\ntasks:\n  - {id: a, objective: x, agent: sh, write_scope: [a]}\n  - {id: b, objective: y, agent: claude, write_scope: [b]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := one.Summary(""), "p.yaml: ok: 2 tasks, 1 agent profile"; got != want {
		t.Errorf("Summary = %q, want %q", got, want)
	}
	none, err := Parse("q.yaml", []byte("version: 1\ntasks:\n  - {id: a, objective: x, agent: claude, write_scope: [a]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := none.Summary("main"), "q.yaml: ok: 1 tasks, 0 agent profiles, integrating into main"; got != want {
		t.Errorf("Summary = %q, want %q", got, want)
	}
}
