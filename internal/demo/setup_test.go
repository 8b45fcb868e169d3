package demo

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apiary-dev/apiary/internal/envtest"
)

// TestWorkers: command is taken as it is, a bad kind is an OptionError,
// and a named CLI uses the executable given.
func TestWorkers(t *testing.T) {
	t.Parallel()
	if kind, bin, err := Workers("command", ""); kind != "command" || bin != "" || err != nil {
		t.Errorf("command: %q %q %v", kind, bin, err)
	}
	if kind, bin, err := Workers("codex", "/opt/codex"); kind != "codex" || bin != "/opt/codex" || err != nil {
		t.Errorf("codex with --bin: %q %q %v", kind, bin, err)
	}
	var oe *OptionError
	if _, _, err := Workers("robot", ""); !errors.As(err, &oe) || !strings.Contains(err.Error(), `--agent must be`) {
		t.Errorf("a bad kind: %v", err)
	}
}

// TestSetup: a demo of command workers with grep checks has its
// repository and its plan, no model server, and Close removes it; a bad
// --checks is an OptionError and leaves nothing behind.
func TestSetup(t *testing.T) {
	t.Parallel()
	envtest.Command(t, "git")
	dir := filepath.Join(t.TempDir(), "demo")
	d, err := Setup(t.Context(), Options{Kind: "command", Dir: dir, Checks: "grep"})
	if err != nil {
		t.Fatal(err)
	}
	if d.Checks != "grep" || d.Agents != "command" || !d.Kept || d.ModelURL != "" || d.Repo != filepath.Join(dir, "repo") {
		t.Errorf("demo %+v", d.Result)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "plan.yaml")); err != nil || string(b) != string(d.Plan) {
		t.Errorf("plan.yaml: %v", err)
	}
	if _, err := os.Stat(filepath.Join(d.Repo, ".git")); err != nil {
		t.Errorf("no repository: %v", err)
	}
	d.Close()
	if _, err := os.Stat(dir); err != nil {
		t.Errorf("a kept demo was removed: %v", err)
	}

	var oe *OptionError
	if _, err := Setup(t.Context(), Options{Kind: "command", Checks: "make"}); !errors.As(err, &oe) || !strings.Contains(err.Error(), "--checks must be") {
		t.Errorf("bad checks: %v", err)
	}
}
