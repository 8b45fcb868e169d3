// Package layout is swarm mode's board layout, shared by its workers,
// gatekeepers and merge role: the keys of a run, the records stored under
// them and their encoding, and the task transitions (settle, requeue,
// promote, the speculative attempts' slots), each one transaction.
//
// Swarm mode keeps a run on a board (see package board) instead of in one
// process: `apiary run PLAN --mode swarm` publishes the plan's tasks, and
// workers on any number of machines claim them. The board holds, for run R:
//
//	swarmruns/R                      the run's record (Record)
//	tasks/R%2FNAME                   each task (board.Task; its Payload)
//	swarm/R/feed/sNN/ready/TASK      announcements of ready tasks, by shard
//	swarm/R/feed/sNN/run/TASK        run markers: the shard's claimed tasks
//	swarm/R/feed/cooldown            set while the merge role cools down
//	swarm/R/open/sNN/TASK            the watchdog opened the task to anyone
//	swarm/R/bids/sNN/TASK/WORKER     claim requests for the shard gatekeeper
//	swarm/R/inbox/HOST/grant/TASK    a task claimed for (or offered to) one
//	                                 of HOST's workers, on HOST's lease
//	swarm/R/inbox/HOST/cancel/TASK   a speculative attempt to cancel
//	swarm/R/inbox/HOST/lost/WORKER   the worker's last claim request lost
//	swarm/R/hosts/HOST/LEASE         the live hosts (bound to their lease)
//	swarm/R/workers/WORKER           the live workers (bound to their lease)
//	swarm/R/req/HOST                 central mode: a host's standing request
//	swarm/R/cands/TASK               finished work waiting for the merge role
//	swarm/R/merge/...                merge role output (utility index, hot
//	                                 files, duplicates, statistics)
//	swarm/R/declared/TASK            conflicts declared at claim time
//	swarm/R/intentlog/TASK, archive/ intents of integrated tasks, compacted
//
// plus the board's own claims/, fences/, elections/, intents/, conflicts/
// and hints/. Every transition of a task is one transaction guarded by the
// claim's fencing token or the deciding leader's election key; the claim
// protocol is decision D-7.
package layout
