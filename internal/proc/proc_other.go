//go:build !unix

package proc

import (
	"context"
	"fmt"
	"os/exec"
	"runtime"
	"time"
)

// errPlatform refuses every scope: without process groups (or cgroups) and
// readable process environments apiary could stop neither what an agent or
// a check starts (an MCP server, a test binary) nor, after a crash, find it
// again, and it runs nothing whose processes could outlive their owner.
var errPlatform = fmt.Errorf("%w on %s: no process groups to contain an agent's or a check's processes with; run agents and checks on linux, macOS or a BSD", ErrUnsupported, runtime.GOOS)

// Process is a started scope; none is ever started here.
type Process struct {
	scope Scope
}

// Scope describes the process's scope.
func (p *Process) Scope() Scope { return p.scope }

// Start refuses: see Supported.
func (t *Tracker) Start(*exec.Cmd, string) (*Process, error) { return nil, errPlatform }

// Members is empty: no scope is ever started here.
func (p *Process) Members() []int { return nil }

// Kill refuses: see Supported.
func (p *Process) Kill() error { return errPlatform }

// Close has nothing to end: no scope is ever started here.
func (p *Process) Close(time.Duration) int { return 0 }

// Reap refuses: see Supported.
func Reap(Scope) (int, error) { return 0, errPlatform }

// ReapOwner refuses: see Supported.
func ReapOwner(context.Context, string, ...string) (int, error) { return 0, errPlatform }

// OwnerProcesses is empty: no scope is ever started here.
func OwnerProcesses(string, string, ...string) []int { return nil }

// RemoveCgroup has nothing to remove here.
func RemoveCgroup(string) (int, error) { return 0, nil }

func ownerCgroup(string) string { return "" }

func bootID() string { return "" }

// Alive is empty: no scope is ever started here.
func Alive(Scope) []int { return nil }
