package cli

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/apiary-dev/apiary/internal/capability"
	"github.com/apiary-dev/apiary/internal/durable"
	"github.com/apiary-dev/apiary/internal/mcpserver"
	"github.com/apiary-dev/apiary/internal/runs"
)

// capFlags are `apiary mcp`'s capability flags.
type capFlags struct {
	token, keyFile, revocations, control string
	escrowTools                          stringList
}

// wire sets cfg.Authority to verify the capability (alongside any write
// scope) and returns the apiary.spawn Spawner when the run's control
// socket is known; nil, nil without a capability.
func (f capFlags) wire(ctx context.Context, e *env, workspace string, cfg *durable.Config) (mcpserver.Spawner, error) {
	token := f.token
	if token == "" {
		token = e.Getenv("APIARY_CAPABILITY")
	}
	if token == "" {
		return nil, nil
	}
	keyFile := f.keyFile
	if keyFile == "" {
		if keyFile = runs.FindKey(workspace); keyFile == "" {
			return nil, usagef("--capability needs --key-file: no .apiary/cap.key above %s", workspace)
		}
	}
	key, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, fmt.Errorf("capability key: %w", err)
	}
	revFile := f.revocations
	if revFile == "" {
		revFile = e.Getenv("APIARY_REVOCATIONS")
	}
	var rev capability.Revoker
	if revFile != "" {
		rev = capability.NewFileRevoker(revFile, 250*time.Millisecond, nil)
	}
	capAuth, err := durable.NewCapability(key, token, rev, nil)
	if err != nil {
		return nil, usagef("--capability: %v", err)
	}
	control := f.control
	if control == "" {
		control = e.Getenv("APIARY_CONTROL")
	}
	var ctl *runs.Control
	if control != "" {
		ctl = runs.DialControl(control)
	}
	capAuth.EscrowTools = f.escrowTools
	capAuth.Escrow = func(tool string) error {
		if ctl == nil {
			return fmt.Errorf("no run to ask for approval of %s", tool)
		}
		_, err := ctl.Escrow(ctx, runs.EscrowCheck{Capability: token, Kind: runs.EscrowTool, Operation: tool})
		return err
	}
	if cfg.Authority != nil {
		cfg.Authority = durable.AllOf(cfg.Authority, capAuth)
	} else {
		cfg.Authority = capAuth
	}
	if ctl == nil {
		return nil, nil
	}
	return runs.AgentSpawner{Control: ctl, Capability: token}, nil
}
