package cli

import (
	"strings"
)

// ourPackages are the names of apiary's packages (and sub-packages whose
// errors carry their own prefix). Their errors begin with the package's
// name, as Go errors do ("swarm: no such run on the board"), which tells a
// developer where an error came from and a user nothing: userMessage drops
// those links. TestOurPackagesListed keeps the list complete.
var ourPackages = map[string]bool{
	"access": true, "agent": true, "atomicfile": true, "attempt": true, "bench": true, "board": true, "capability": true, "cli": true, "cmdtree": true,
	"config": true, "dashboard": true, "durable": true, "envelope": true, "envtest": true, "eval": true,
	"gate": true, "gateway": true, "git": true, "llmapi": true, "llmfake": true, "mcpserver": true,
	"plan": true, "plot": true, "proc": true, "review": true, "rundir": true, "runs": true,
	"sched": true, "secret": true, "sim": true, "sse": true, "strictyaml": true, "supervise": true,
	"swarm": true, "telemetry": true, "tui": true, "demo": true, "doctor": true, "runview": true,
	"connect": true, "etcd": true, "local": true, "sqlite": true, "policy": true,
	"layout": true, "gatekeeper": true,
}

// userMessage renders an error chain for a person: every link that is
// only one of our package names ("gateway: gateway: listen tcp ..." →
// "listen tcp ...") is dropped; the rest is kept as it was.
func userMessage(msg string) string {
	parts := strings.Split(msg, ": ")
	out := parts[:0]
	for i, p := range parts {
		if i < len(parts)-1 && ourPackages[p] {
			continue
		}
		out = append(out, p)
	}
	return strings.Join(out, ": ")
}
