//go:build !unix

package runs

// runnable is never asked here: Start and Resume refuse on this platform
// (proc.Supported), so no agent runs and no lease is renewed. An unknown
// process counts as not runnable, so a lease would lapse.
func runnable(int) bool { return false }
