//go:build !unix

package git

import "os/exec"

// setProcessGroup is a no-op where process groups do not exist; the
// context still kills git itself.
func setProcessGroup(*exec.Cmd) {}
