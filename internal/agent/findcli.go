package agent

import (
	"os"
	"os/exec"
	"path/filepath"
)

// FindCLI looks for the executable name of an agent CLI where apiary's
// tests install them — test/node_modules/.bin in the current directory or
// one above it — then on PATH. It returns "" when it is nowhere.
func FindCLI(name string) string {
	if wd, err := os.Getwd(); err == nil {
		for d := wd; ; d = filepath.Dir(d) {
			p := filepath.Join(d, "test", "node_modules", ".bin", name)
			if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
				return p
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	p, _ := exec.LookPath(name)
	return p
}
