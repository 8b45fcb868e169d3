package plan

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoadAgents: profiles are read strictly; check's error is located at
// the profile's name.
func TestLoadAgents(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := filepath.Join(dir, "agents.yaml")
	if err := os.WriteFile(good, []byte("a: {kind: claude}\nb:\n  kind: command\n  argv: [sh]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	unknown := filepath.Join(dir, "unknown.yaml")
	if err := os.WriteFile(unknown, []byte("a: {kind: claude, colour: red}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if m, err := LoadAgents("", nil); m != nil || err != nil {
		t.Errorf("no file: %v %v", m, err)
	}
	m, err := LoadAgents(good, nil)
	if err != nil || len(m) != 2 || m["b"].Argv[0] != "sh" {
		t.Fatalf("%v %v", m, err)
	}
	var seen []string
	bad := errors.New("not allowed")
	_, err = LoadAgents(good, func(name string, a Agent) error {
		seen = append(seen, name)
		if a.Kind == "command" {
			return bad
		}
		return nil
	})
	if !errors.Is(err, bad) || !strings.HasPrefix(err.Error(), good+":2:1: ") || strings.Join(seen, ",") != "a,b" {
		t.Errorf("check: %v after %v", err, seen)
	}
	if _, err := LoadAgents(unknown, nil); err == nil {
		t.Error("an unknown field was accepted")
	}
}
