// Package bench holds the engines of apiary's benchmarks, whose numbers
// are in docs/benchmarks.md; the cli package keeps only their flags and
// tables, and `make bench` runs the long ones. For the gateway:
// RunScenario reproduces HIVEMIND's evaluation scenarios on llmfake, direct
// and through an in-process gateway; RunOverhead measures what one gateway
// hop costs; and RunZoo runs mock agents through a gateway against a zoo of
// independent upstream models (ZooModel), randomised per seed, whose
// windows, periods, reset formats, caps and faults the gateway is never
// told. For swarm mode: RunSwarm drains a simulated run on a board, by
// self-organizing claims or through one central scheduler, and Swarm
// measures both across boards and worker counts.
package bench
