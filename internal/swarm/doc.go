// Package swarm is apiary's self-organizing mode: a plan's tasks live on a
// shared board (package board: SQLite on one machine, etcd across
// machines) instead of in one process, and workers on any number of hosts
// claim them. Publish puts a plan on the board; RunHost serves a host's
// workers; Run publishes a plan and serves it until it is done.
//
// Claims are arbitrated per shard by an elected gatekeeper that weighs
// competing workers' competence; a watchdog offers and then opens tasks
// nobody claims; workers declare intents before they work, so that
// overlapping changes are seen before they collide. Finished work goes to
// a single merge role, which integrates candidates in batches behind the
// same invariant gates as a local run, detects duplicate functions, keeps
// a utility index and watches for hot files, and turns conflicts into
// resolution hints. Workers push their candidates to the run's shared
// git remote as refs/heads/apiary/RUN/NAME-TOKEN; what a host that died
// left there is deleted by ReapRemote once the run has finished.
//
// The board's layout and the transaction every transition is are
// described in package layout; a shard's gatekeeper is package
// gatekeeper.
package swarm
