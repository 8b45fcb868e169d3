//go:build unix

package agent

import (
	"os"
	"path/filepath"
	"testing"
)

// TestWriteFiles: an invocation's files land whole with mode 0600 in
// directories made 0700, replace what an earlier attempt left, and leave
// no temporary file beside them, even when a write fails.
func TestWriteFiles(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	settings := filepath.Join(home, ".claude", "settings.json")
	mcp := filepath.Join(home, "mcp.json")
	if err := os.MkdirAll(filepath.Dir(settings), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(settings, []byte(`{"old":true,"longer":"than the new one"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	files := []File{{Path: settings, Data: []byte(`{"new":1}`)}, {Path: mcp, Data: []byte(`{}`)}}
	if err := writeFiles(files); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f.Path)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != string(f.Data) {
			t.Errorf("%s holds %q, want %q", f.Path, b, f.Data)
		}
		fi, err := os.Stat(f.Path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", f.Path, fi.Mode().Perm())
		}
	}
	for dir, want := range map[string][]string{home: {".claude", "mcp.json"}, filepath.Dir(settings): {"settings.json"}} {
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range ents {
			got = append(got, e.Name())
		}
		if len(got) != len(want) || got[0] != want[0] || got[len(got)-1] != want[len(want)-1] {
			t.Errorf("%s holds %v, want %v", dir, got, want)
		}
	}

	// A directory in the way of a file: the error names the configuration.
	blocked := filepath.Join(home, "blocked")
	if err := os.MkdirAll(filepath.Join(blocked, "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := writeFiles([]File{{Path: blocked, Data: []byte("x")}}); err == nil {
		t.Fatal("writeFiles over a directory succeeded")
	}
	ents, err := os.ReadDir(home)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 3 {
		t.Errorf("a failed write left %d entries in the home, want 3 (.claude, blocked, mcp.json)", len(ents))
	}
}
