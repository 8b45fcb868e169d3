//go:build unix && !linux && !darwin && !aix

package durable

import "os"

// renameNoReplace is not available here; callers fall back to link+unlink,
// which also fails rather than replace an existing destination.
func renameNoReplace(fromDir *os.File, from string, toDir *os.File, to string) error {
	return errNoReplaceUnsupported
}
