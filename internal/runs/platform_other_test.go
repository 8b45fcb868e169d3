//go:build !unix

package runs

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/apiary-dev/apiary/internal/git"
	"github.com/apiary-dev/apiary/internal/proc"
)

// TestRefusedHere: where processes cannot be contained, Start and Resume
// refuse with proc.ErrUnsupported before they write anything.
func TestRefusedHere(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{Repo: git.New(dir, git.Options{})}
	plan := []byte("tasks:\n  a:\n    goal: x\n")
	if _, err := Start(t.Context(), cfg, NewRun{PlanFile: "plan.yaml", PlanData: plan}); !errors.Is(err, proc.ErrUnsupported) {
		t.Errorf("Start: %v, want proc.ErrUnsupported", err)
	}
	if _, err := Resume(t.Context(), cfg, "20260101-000000-abcd"); !errors.Is(err, proc.ErrUnsupported) {
		t.Errorf("Resume: %v, want proc.ErrUnsupported", err)
	}
	if _, err := os.Stat(filepath.Join(dir, ".apiary")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused run wrote .apiary: %v", err)
	}
}
