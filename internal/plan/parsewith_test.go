package plan

import (
	"errors"
	"testing"
)

// TestParseWithAgents: extra profiles satisfy tasks that name them, and the
// plan's own definition of the same name wins.
func TestParseWithAgents(t *testing.T) {
	t.Parallel()
	src := "version: 1\ntasks:\n  - {id: a, objective: x, agent: worker, write_scope: [a/]}\n"
	if _, err := Parse("p.yaml", []byte(src)); !errors.Is(err, ErrUnknownAgent) {
		t.Fatalf("without the extra profile: %v, want ErrUnknownAgent", err)
	}
	extra := map[string]Agent{"worker": {Kind: "command", Argv: []string{"true"}}}
	p, err := ParseWith("p.yaml", []byte(src), Options{Agents: extra})
	if err != nil {
		t.Fatal(err)
	}
	if a := p.Agents["worker"]; a.Kind != "command" || a.Argv[0] != "true" {
		t.Errorf("worker = %+v", a)
	}
	own := src + "agents:\n  worker: {kind: claude}\n"
	p, err = ParseWith("p.yaml", []byte(own), Options{Agents: extra})
	if err != nil {
		t.Fatal(err)
	}
	if a := p.Agents["worker"]; a.Kind != "claude" {
		t.Errorf("the plan's own worker profile should win: %+v", a)
	}
}
