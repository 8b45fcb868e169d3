package agent_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestOtherPlatforms: the package builds for macOS (no parent-death
// signal: the group is still swept) and vets for Windows (Run refuses with
// ErrUnsupported: no process groups to stop an agent's children with).
func TestOtherPlatforms(t *testing.T) {
	if testing.Short() {
		t.Skip("cross-compiles the package")
	}
	t.Parallel()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(wd, "..", "..")
	for _, c := range [][]string{
		{"darwin", "build", "-o", os.DevNull, "./internal/agent"},
		{"darwin", "vet", "./internal/agent"},
		{"windows", "vet", "./internal/agent"},
	} {
		cmd := exec.CommandContext(t.Context(), "go", c[1:]...)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "GOOS="+c[0], "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("GOOS=%s go %v: %v\n%s", c[0], c[1:], err, out)
		}
	}
}
