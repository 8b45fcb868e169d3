package swarm

import "slices"

// Which host sees which shard. A host that followed every shard's feed
// would receive every ready announcement of the run, so the messages per
// task would grow with the hosts. Instead the live hosts (hosts/, one
// entry per host, bound to its lease) divide the shards among themselves:
// each host follows the announcements of its shards only, asks for their
// tasks, and stands for their gatekeepers. Every host computes the same
// division from the same list, so they agree once they have seen the same
// entries; while they disagree a shard may briefly have one follower too
// many or too few, which costs a bid round trip, never a task. A task of a
// shard whose followers' workers cannot do it still reaches a worker that
// can through the watchdog's offers, which go to any live worker.
// decision: D-7

// shardsOf returns the shards, in order, that host follows when hosts (any
// order, host included or not) are live and the run has n shards. The
// shards are dealt to the hosts, sorted by name, in seats: a shard has
// ceil(H/n) seats, so that every one of H hosts gets one when there are
// more hosts than shards, and seat j of shard s goes to host (s·r + j)
// mod H — consecutive hosts, distinct while r ≤ H. With one host it
// follows everything; with as many hosts as shards each has one.
func shardsOf(hosts []string, host string, n int) []int {
	hs := slices.Clone(hosts)
	if !slices.Contains(hs, host) {
		hs = append(hs, host)
	}
	slices.Sort(hs)
	hs = slices.Compact(hs)
	me := slices.Index(hs, host)
	h := len(hs)
	r := (h + n - 1) / n
	var out []int
	for s := range n {
		for j := range r {
			if (s*r+j)%h == me {
				out = append(out, s)
				break
			}
		}
	}
	return out
}
