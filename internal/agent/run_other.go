//go:build !unix

package agent

import (
	"context"
	"fmt"
	"runtime"
)

// Run refuses on systems without Unix process groups: apiary could not
// stop an agent's children (MCP servers, test binaries) with it, and an
// attempt whose processes can outlive it is not run. Invocation and Command
// work everywhere.
func Run(_ context.Context, s Spec) (Result, error) {
	return Result{}, fmt.Errorf("%w: running agents on %s: no process groups to stop an agent's children with", ErrUnsupported, runtime.GOOS)
}
