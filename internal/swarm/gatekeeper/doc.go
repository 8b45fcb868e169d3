// Package gatekeeper arbitrates the claims of one shard of a swarm run.
//
// A shard's gatekeeper is whichever of the shard's followers leads the
// shard's election (board.Campaign on swarm/RUN/shard/sNN). It alone
// decides who gets the shard's tasks: it collects claim requests for a bid
// window and claims each task for the best, on the winner's host lease,
// in the transaction that also moves the task's record, marks it claimed
// and tells the host (decision D-7); it runs the watchdog; it starts the
// speculative attempts of hedged and quorum tasks; it puts back the tasks
// of hosts that died; and it repairs what a crash can leave half-done.
// Every write it makes is guarded by its election key, so a deposed
// gatekeeper cannot act.
//
// Run serves one shard for as long as the caller holds the shard's
// leadership; package swarm starts it on the hosts that follow the shard.
package gatekeeper
