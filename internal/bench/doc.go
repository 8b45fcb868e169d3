// Package bench holds the engines of apiary's benchmarks — the gateway
// against direct access and against other upstreams, the swarm at scale —
// whose numbers are in docs/benchmarks.md. `apiary bench` parses the flags
// and calls them; `make bench` runs the long ones.
package bench
