package swarm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"net/url"
	"time"

	"github.com/apiary-dev/apiary/internal/board"
	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/plan"
)

// Swarm mode keeps a run on a board (see package board) instead of in one
// process: `apiary run PLAN --mode swarm` publishes the plan's tasks, and
// workers on any number of machines claim them. The board holds, for run R:
//
//	swarmruns/R                      the run's record (SwarmRun)
//	tasks/R%2FNAME                   each task (board.Task; payload swarmTask)
//	swarm/R/feed/sNN/ready/TASK      announcements of ready tasks, by shard
//	swarm/R/feed/sNN/grant/TASK      a gatekeeper's grant (or watchdog offer)
//	swarm/R/feed/sNN/open/TASK       the watchdog opened the task to anyone
//	swarm/R/feed/cooldown            set while the merge role cools down
//	swarm/R/bids/sNN/TASK/WORKER     claim requests for the shard gatekeeper
//	swarm/R/workers/WORKER           the live workers (bound to their lease)
//	swarm/R/cands/TASK               finished work waiting for the merge role
//	swarm/R/merge/...                merge role output (utility index, hot
//	                                 files, duplicates, statistics)
//	swarm/R/declared/TASK            conflicts declared at claim time
//	swarm/R/intentlog/TASK, archive/ intents of integrated tasks, compacted
//
// plus the board's own claims/, fences/, elections/, intents/, conflicts/
// and hints/. Every transition of a task is one transaction guarded by the
// claim's fencing token or the deciding leader's election key.

// Errors of swarm mode.
var (
	// ErrNoRun: the board has no such run.
	ErrNoRun = errors.New("swarm: no such run on the board")
	// ErrLost: a claim or leadership was lost while acting under it.
	ErrLost = errors.New("swarm: claim or leadership lost")
)

// Run statuses on the board.
const (
	RunActive   = "active"
	RunFinished = "finished"
)

// Options are a swarm run's settings, published with it so every
// worker and the merge role use the same. The zero value of each field is
// its default.
type Options struct {
	// Shards is the number of task shards, each arbitrated by one
	// gatekeeper (default 4).
	Shards int `json:"shards"`
	// BidWindowMS is how long a gatekeeper collects competing claims for a
	// task before deciding (default 20).
	BidWindowMS int `json:"bid_window_ms"`
	// OfferAfterS: a ready task unclaimed this long is offered to the
	// best-scoring live worker (default 5); OpenAfterS later, anyone may
	// take it (default 2).
	OfferAfterS float64 `json:"offer_after_s"`
	OpenAfterS  float64 `json:"open_after_s"`
	// MaxAttempts bounds a task's attempts (default 3).
	MaxAttempts int `json:"max_attempts"`
	// ClaimTTLS is the claim lease when the task sets no lease_s (default 30).
	ClaimTTLS float64 `json:"claim_ttl_s"`
	// Intents makes workers declare intents before working (default on;
	// NoIntents turns it off).
	NoIntents bool `json:"no_intents,omitempty"`
	// IntentWaitS bounds how long a worker waits for an overlapping earlier
	// intent before it narrows or proceeds (default 10).
	IntentWaitS float64      `json:"intent_wait_s"`
	Merge       MergeOptions `json:"merge"`
}

func (o *Options) defaults() {
	if o.Shards <= 0 {
		o.Shards = 4
	}
	if o.BidWindowMS <= 0 {
		o.BidWindowMS = 20
	}
	if o.OfferAfterS <= 0 {
		o.OfferAfterS = 5
	}
	if o.OpenAfterS <= 0 {
		o.OpenAfterS = 2
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 3
	}
	if o.ClaimTTLS <= 0 {
		o.ClaimTTLS = 30
	}
	if o.IntentWaitS <= 0 {
		o.IntentWaitS = 10
	}
	o.Merge.defaults()
}

func secs(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// Record is a swarm run's record on the board.
type Record struct {
	Run               string                `json:"run"`
	Status            string                `json:"status"`
	PlanFile          string                `json:"plan_file,omitempty"`
	Remote            string                `json:"remote,omitempty"` // the shared git remote ("" for simulated runs)
	IntegrationBranch string                `json:"integration_branch,omitempty"`
	StartHead         string                `json:"start_head,omitempty"`
	TraceID           string                `json:"trace_id,omitempty"`
	Agents            map[string]plan.Agent `json:"agents,omitempty"`
	Options           Options               `json:"options"`
	Tasks             []string              `json:"tasks"` // names, in plan order
	Created           time.Time             `json:"created"`
	Finished          time.Time             `json:"finished,omitzero"`
	Revision          int64                 `json:"-"`
}

// Prefix of run records.
const prefixRuns = "swarmruns/"

func esc(s string) string                { return url.PathEscape(s) }
func runKey(run string) string           { return prefixRuns + esc(run) }
func runPrefix(run string) string        { return "swarm/" + esc(run) + "/" }
func feedPrefix(run string) string       { return runPrefix(run) + "feed/" }
func shardSeg(s int) string              { return fmt.Sprintf("s%02d", s) }
func shardFeed(run string, s int) string { return feedPrefix(run) + shardSeg(s) + "/" }
func readyKey(run string, s int, task string) string {
	return shardFeed(run, s) + "ready/" + esc(task)
}
func grantKey(run string, s int, task string) string {
	return shardFeed(run, s) + "grant/" + esc(task)
}
func openKey(run string, s int, task string) string { return shardFeed(run, s) + "open/" + esc(task) }
func markerKey(run string, s int, task string) string {
	return shardFeed(run, s) + "run/" + esc(task)
}
func cooldownKey(run string) string      { return feedPrefix(run) + "cooldown" }
func bidPrefix(run string, s int) string { return runPrefix(run) + "bids/" + shardSeg(s) + "/" }
func bidTaskPrefix(run string, s int, task string) string {
	return bidPrefix(run, s) + esc(task) + "/"
}
func bidKey(run string, s int, task, worker string) string {
	return bidTaskPrefix(run, s, task) + esc(worker)
}
func workersPrefix(run string) string     { return runPrefix(run) + "workers/" }
func workerKey(run, worker string) string { return workersPrefix(run) + esc(worker) }
func candPrefix(run string) string        { return runPrefix(run) + "cands/" }
func candKey(run, task string) string     { return candPrefix(run) + esc(task) }
func declaredKey(run, task string) string { return runPrefix(run) + "declared/" + esc(task) }
func mergePrefix(run string) string       { return runPrefix(run) + "merge/" }
func intentLogPrefix(run string) string   { return runPrefix(run) + "intentlog/" }
func archivePrefix(run string) string     { return runPrefix(run) + "archive/" }
func shardRole(run string, s int) string  { return "swarm/" + run + "/shard/" + shardSeg(s) }
func mergeRole(run string) string         { return "swarm/" + run + "/merge" }
func taskID(run, name string) string      { return run + "/" + name }
func taskName(run, id string) string      { return id[len(run)+1:] }
func runTaskPrefix(run string) string     { return board.TaskPrefix(run + "/") }
func runClaimPrefix(run string) string    { return board.ClaimPrefix(run + "/") }

// shardOf places a task (by name) in one of n shards.
func shardOf(name string, n int) int {
	h := fnv.New32a()
	h.Write([]byte(name))
	return int(h.Sum32() % uint32(n))
}

// swarmTask is a task's payload on the board.
type swarmTask struct {
	Name     string             `json:"name"`
	Envelope *envelope.Envelope `json:"envelope,omitempty"` // the template: no workspace, no trace
	Succ     []string           `json:"succ,omitempty"`     // dependents, by name
	Shard    int                `json:"shard"`
	Prio     float64            `json:"prio"`
	WorkS    float64            `json:"work_s,omitempty"` // simulated work (benchmarks)
	// Results.
	Commit     string   `json:"commit,omitempty"`
	Integrated string   `json:"integrated,omitempty"`
	Reason     string   `json:"reason,omitempty"`
	Notes      []string `json:"notes,omitempty"`
	Workers    []string `json:"workers,omitempty"` // who held each attempt
	// Usage is what its attempts spent, summed as each outcome is recorded.
	Usage envelope.Usage `json:"usage,omitzero"`
}

// readyNote is a ready announcement: what a host needs to score the task.
type readyNote struct {
	Task  string   `json:"task"`
	Tags  []string `json:"tags,omitempty"`
	Agent string   `json:"agent,omitempty"`
	Prio  float64  `json:"prio"`
}

// grantNote is a gatekeeper's grant, or a watchdog offer.
type grantNote struct {
	Task   string  `json:"task"`
	Worker string  `json:"worker"`
	Host   string  `json:"host"`
	Score  float64 `json:"score"`
	Offer  bool    `json:"offer,omitempty"`
}

// runMarker marks a task claimed, bound to the claim's lease: it vanishes
// with the claim, which tells the shard's gatekeeper — and only it — that
// the claim ended. Finished is set (in the same transaction) once the
// worker recorded the attempt's outcome, so a vanishing finished marker
// needs no look.
type runMarker struct {
	Worker   string `json:"worker"`
	Token    int64  `json:"token"`
	Finished bool   `json:"finished,omitempty"`
}

// bidNote is a claim request: the task, the worker and its competence.
type bidNote struct {
	Task   string  `json:"task"`
	Worker string  `json:"worker"`
	Host   string  `json:"host"`
	Score  float64 `json:"score"`
	// The worker's skills and profile, so that a gatekeeper can grant a
	// worker whose request lost another task it fits.
	Skills  []string `json:"skills,omitempty"`
	Profile string   `json:"profile,omitempty"`
}

func decodePayload(t board.Task) (*swarmTask, error) {
	var p swarmTask
	if err := json.Unmarshal(t.Payload, &p); err != nil {
		return nil, fmt.Errorf("%w: task %s payload: %v", ErrBadRun, t.ID, err)
	}
	return &p, nil
}

func encodeTask(t board.Task, p *swarmTask) ([]byte, error) {
	b, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	t.Payload = b
	return board.EncodeTask(t)
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only plain structs are marshalled
	}
	return b
}

// ReadRecord returns run's record; ErrNoSwarmRun if the board has none.
func ReadRecord(ctx context.Context, st *board.Store, run string) (*Record, error) {
	kv, err := st.Get(ctx, runKey(run))
	if errors.Is(err, board.ErrNotFound) {
		return nil, fmt.Errorf("%w: %s", ErrNoRun, run)
	}
	if err != nil {
		return nil, err
	}
	return decodeRun(kv)
}

func decodeRun(kv board.KV) (*Record, error) {
	var r Record
	if err := json.Unmarshal(kv.Value, &r); err != nil {
		return nil, fmt.Errorf("%w: run record %s: %v", ErrBadRun, kv.Key, err)
	}
	r.Options.defaults()
	r.Revision = kv.ModRevision
	return &r, nil
}

// ListRecords returns every run recorded on the board, oldest first.
func ListRecords(ctx context.Context, st *board.Store) ([]*Record, error) {
	kvs, _, err := st.List(ctx, prefixRuns)
	if err != nil {
		return nil, err
	}
	var out []*Record
	for _, kv := range kvs {
		r, err := decodeRun(kv)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// publishSpec is one task to publish.
type publishSpec struct {
	name  string
	env   *envelope.Envelope
	tags  []string
	deps  []envelope.Dep
	prio  float64
	workS float64
}

// publish writes run and its tasks: tasks without dependencies are ready
// and announced, the others pending. The run record goes last, so a worker
// that sees the run finds every task.
func publish(ctx context.Context, st *board.Store, r *Record, specs []publishSpec) error {
	if err := publishTasks(ctx, st, r, specs); err != nil {
		return err
	}
	return publishRun(ctx, st, r)
}

// publishTasks writes the run's tasks.
func publishTasks(ctx context.Context, st *board.Store, r *Record, specs []publishSpec) error {
	r.Options.defaults()
	succ := map[string][]string{}
	for _, sp := range specs {
		for _, d := range sp.deps {
			succ[d.Task] = append(succ[d.Task], sp.name)
		}
	}
	var ops []board.Op
	flush := func() error {
		if len(ops) == 0 {
			return nil
		}
		_, err := st.Txn(ctx, board.Txn{Then: ops})
		ops = ops[:0]
		return err
	}
	for _, sp := range specs {
		p := &swarmTask{Name: sp.name, Envelope: sp.env, Succ: succ[sp.name],
			Shard: shardOf(sp.name, r.Options.Shards), Prio: sp.prio, WorkS: sp.workS}
		deps := make([]string, len(sp.deps))
		for i, d := range sp.deps {
			deps[i] = taskID(r.Run, d.Task)
		}
		t := board.Task{ID: taskID(r.Run, sp.name), Status: board.TaskPending, Tags: sp.tags, Deps: deps}
		if len(sp.deps) == 0 {
			t.Status = board.TaskReady
		}
		val, err := encodeTask(t, p)
		if err != nil {
			return err
		}
		ops = append(ops, board.PutOp(board.TaskKey(t.ID), val, board.NoLease))
		if t.Status == board.TaskReady {
			ops = append(ops, board.PutOp(readyKey(r.Run, p.Shard, t.ID), mustJSON(noteOf(t, p)), board.NoLease))
		}
		if len(ops) >= 96 { // etcd bounds the operations of one transaction
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}

// publishRun writes the run's record, active; it fails if the run exists.
func publishRun(ctx context.Context, st *board.Store, r *Record) error {
	r.Status = RunActive
	rev, err := st.CAS(ctx, runKey(r.Run), mustJSON(r), 0, board.NoLease)
	if errors.Is(err, board.ErrRevisionMismatch) {
		return fmt.Errorf("%w: run %s is already on the board", ErrConfig, r.Run)
	}
	r.Revision = rev
	return err
}

// finishRun marks the run finished: hosts stop serving it.
func finishRun(ctx context.Context, st *board.Store, run string) error {
	for {
		r, err := ReadRecord(ctx, st, run)
		if err != nil {
			return err
		}
		if r.Status == RunFinished {
			return nil
		}
		r.Status, r.Finished = RunFinished, time.Now().UTC()
		_, err = st.CAS(ctx, runKey(run), mustJSON(r), r.Revision, board.NoLease)
		if !errors.Is(err, board.ErrRevisionMismatch) {
			return err
		}
	}
}

// depOn is a data dependency on task name.
func depOn(name string) envelope.Dep { return envelope.Dep{Task: name, Kind: envelope.DepData} }

func noteOf(t board.Task, p *swarmTask) readyNote {
	n := readyNote{Task: t.ID, Tags: t.Tags, Prio: p.Prio}
	if p.Envelope != nil {
		n.Agent = p.Envelope.Agent.Profile
	}
	return n
}
