package layout

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/apiary-dev/apiary/internal/board"
	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/plan"
)

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
	IntentWaitS float64 `json:"intent_wait_s"`
	// HedgeAfterS is the run's hedge: a task without hedge_after_s,
	// hedge_agent or quorum of its own gets a second attempt when its
	// first has run this long (0: none). Speculative is set when some task
	// has speculative attempts.
	HedgeAfterS float64      `json:"hedge_after_s,omitempty"`
	Speculative bool         `json:"speculative,omitempty"`
	Merge       MergeOptions `json:"merge"`
}

// Defaults sets each zero field to its default.
func (o *Options) Defaults() {
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
	o.Merge.Defaults()
}

func Secs(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

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

// ModelOf is the model: of the run's agent profile of that name; "" for
// a profile without one (its CLI's default, as for a built-in) or one the
// run does not define. A kind: command profile's model counts as any
// other's: its agent is told it (APIARY_MODEL).
func (r *Record) ModelOf(profile string) string {
	if r == nil {
		return ""
	}
	return r.Agents[profile].Model
}

// Prefix of run records.
const PrefixRuns = "swarmruns/"

func Esc(s string) string                { return url.PathEscape(s) }
func RunKey(run string) string           { return PrefixRuns + Esc(run) }
func RunPrefix(run string) string        { return "swarm/" + Esc(run) + "/" }
func FeedPrefix(run string) string       { return RunPrefix(run) + "feed/" }
func shardSeg(s int) string              { return fmt.Sprintf("s%02d", s) }
func ShardFeed(run string, s int) string { return FeedPrefix(run) + shardSeg(s) + "/" }
func ReadyKey(run string, s int, task string) string {
	return ShardFeed(run, s) + "ready/" + Esc(task)
}
func MarkerPrefix(run string, s int) string { return ShardFeed(run, s) + "run/" }
func MarkerKey(run string, s int, task string) string {
	return MarkerPrefix(run, s) + Esc(task)
}
func CooldownKey(run string) string      { return FeedPrefix(run) + "cooldown" }
func OpenPrefix(run string) string       { return RunPrefix(run) + "open/" }
func OpenShard(run string, s int) string { return OpenPrefix(run) + shardSeg(s) + "/" }
func OpenKey(run string, s int, task string) string {
	return OpenShard(run, s) + Esc(task)
}
func BidPrefix(run string, s int) string { return RunPrefix(run) + "bids/" + shardSeg(s) + "/" }
func bidTaskPrefix(run string, s int, task string) string {
	return BidPrefix(run, s) + Esc(task) + "/"
}
func BidKey(run string, s int, task, worker string) string {
	return bidTaskPrefix(run, s, task) + Esc(worker)
}
func InboxPrefix(run, host string) string { return RunPrefix(run) + "inbox/" + Esc(host) + "/" }
func InboxKey(run, host, task string) string {
	return InboxPrefix(run, host) + "grant/" + Esc(task)
}
func CancelKey(run, host, task string) string {
	return InboxPrefix(run, host) + "cancel/" + Esc(task)
}
func LostKey(run, host, worker string) string {
	return InboxPrefix(run, host) + "lost/" + Esc(worker)
}
func HostsPrefix(run string) string { return RunPrefix(run) + "hosts/" }
func HostKey(run, host string, lease board.LeaseID) string {
	return HostsPrefix(run) + Esc(host) + "/" + strconv.FormatInt(int64(lease), 16)
}
func WorkersPrefix(run string) string     { return RunPrefix(run) + "workers/" }
func WorkerKey(run, worker string) string { return WorkersPrefix(run) + Esc(worker) }
func CandPrefix(run string) string        { return RunPrefix(run) + "cands/" }
func CandKey(run, task string) string     { return CandPrefix(run) + Esc(task) }
func DeclaredKey(run, task string) string { return RunPrefix(run) + "declared/" + Esc(task) }
func MergePrefix(run string) string       { return RunPrefix(run) + "merge/" }
func IntentLogPrefix(run string) string   { return RunPrefix(run) + "intentlog/" }
func ArchivePrefix(run string) string     { return RunPrefix(run) + "archive/" }
func ShardRole(run string, s int) string  { return "swarm/" + run + "/shard/" + shardSeg(s) }
func MergeRole(run string) string         { return "swarm/" + run + "/merge" }
func TaskID(run, name string) string      { return run + "/" + name }
func taskName(run, id string) string      { return id[len(run)+1:] }
func RunTaskPrefix(run string) string     { return board.TaskPrefix(run + "/") }
func RunClaimPrefix(run string) string    { return board.ClaimPrefix(run + "/") }

// ShardOf places a task (by name) in one of n shards.
func ShardOf(name string, n int) int {
	h := fnv.New32a()
	h.Write([]byte(name))
	return int(h.Sum32() % uint32(n))
}

// Payload is a task's payload on the board.
type Payload struct {
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
	// Usage is what its attempts spent, summed as each outcome is recorded;
	// Spent is each attempt's share, losers of a race included.
	Usage envelope.Usage `json:"usage,omitzero"`
	Spent []AttemptSpend `json:"spent,omitempty"`
	// Spec is the plan's speculation policy for the task (nil: none);
	// Live the speculative attempts of the current claim.
	Spec *Speculation `json:"spec,omitempty"`
	Live *specState   `json:"live,omitempty"`
}

// ReadyNote is a ready announcement: what a host needs to score the task,
// and what its gatekeeper needs to claim it for a worker without reading
// the task first — the task's record and its revision.
type ReadyNote struct {
	Task  string   `json:"task"`
	Tags  []string `json:"tags,omitempty"`
	Agent string   `json:"agent,omitempty"`
	Prio  float64  `json:"prio"`
	// Record is the task's record when the note was written; Rev its
	// revision, 0 when the note was written in the same transaction (the
	// note's own revision then).
	Record json.RawMessage `json:"record,omitempty"`
	Rev    int64           `json:"rev,omitempty"`
	// Of is set on a speculative attempt's announcement: the task (board
	// id) it is an attempt of, and the attempt's slot (1, 2, ...).
	Of   string `json:"of,omitempty"`
	Slot int    `json:"slot,omitempty"`
}

// GrantNote, in a host's inbox, is a task claimed for one of its workers by
// the shard's gatekeeper (on the host's lease, in the same transaction), or
// a watchdog offer the worker claims itself when it has a slot. Record is
// the task's record as that transaction wrote it — its revision is the
// transaction's, which is the claim's fencing token — or, for an offer, as
// it stood at revision Rev.
type GrantNote struct {
	Task   string          `json:"task"`
	Worker string          `json:"worker"`
	Score  float64         `json:"score"`
	Offer  bool            `json:"offer,omitempty"`
	Shard  int             `json:"shard"`
	Record json.RawMessage `json:"record"`
	Rev    int64           `json:"rev,omitempty"`
	Of     string          `json:"of,omitempty"`
	Slot   int             `json:"slot,omitempty"`
	// For is the task the worker asked for, when the claim answers a
	// request that lost it (a consolation): that request is settled too.
	For string `json:"for,omitempty"`
}

// RunMarker marks a claimed task in its shard's feed, written with the
// claim and deleted with the attempt's outcome (or by the gatekeeper that
// puts back the task of a host that died): it tells the shard's gatekeeper
// what runs where. Its CreateRevision is the claim's fencing token. It is
// not bound to a lease, so that its vanishing always means an outcome was
// recorded; a claim whose host died is found from the host's entry under
// hosts/, which is bound to the host's lease like the claim.
type RunMarker struct {
	Worker string        `json:"worker"`
	Host   string        `json:"host"`
	Lease  board.LeaseID `json:"lease"`
	// Spec is the task's speculation policy (slot 0 of a hedged or quorum
	// task), for the gatekeeper that starts the other attempts.
	Spec *Speculation `json:"spec,omitempty"`
	Of   string       `json:"of,omitempty"`
	Slot int          `json:"slot,omitempty"`
}

// LostNote, in a host's inbox under the worker, says the worker's claim
// request for Task lost and nothing else was claimed for it.
type LostNote struct {
	Task string `json:"task"`
}

// HostEntry is a live host, under hosts/HOST/LEASE: hosts follow the
// shards the set of live hosts assigns them, and gatekeepers learn of a
// host's death (and its claims') from its entry's deletion.
type HostEntry struct {
	Host    string `json:"host"`
	Workers int    `json:"workers"`
	Slots   int    `json:"slots"`
}

// BidNote is a claim request: the task, the worker and its competence.
type BidNote struct {
	Task   string  `json:"task"`
	Worker string  `json:"worker"`
	Host   string  `json:"host"`
	Score  float64 `json:"score"`
	// The worker's skills and profile, so that a gatekeeper can grant a
	// worker whose request lost another task it fits.
	Skills  []string `json:"skills,omitempty"`
	Profile string   `json:"profile,omitempty"`
}

func DecodePayload(t board.Task) (*Payload, error) {
	var p Payload
	if err := json.Unmarshal(t.Payload, &p); err != nil {
		return nil, fmt.Errorf("%w: task %s payload: %v", ErrBadRun, t.ID, err)
	}
	return &p, nil
}

func EncodeTask(t board.Task, p *Payload) ([]byte, error) {
	b, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	t.Payload = b
	return board.EncodeTask(t)
}

func MustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only plain structs are marshalled
	}
	return b
}

// ReadRecord returns run's record; ErrNoSwarmRun if the board has none.
func ReadRecord(ctx context.Context, st *board.Store, run string) (*Record, error) {
	kv, err := st.Get(ctx, RunKey(run))
	if errors.Is(err, board.ErrNotFound) {
		return nil, fmt.Errorf("%w: %s", ErrNoRun, run)
	}
	if err != nil {
		return nil, err
	}
	return DecodeRun(kv)
}

func DecodeRun(kv board.KV) (*Record, error) {
	var r Record
	if err := json.Unmarshal(kv.Value, &r); err != nil {
		return nil, fmt.Errorf("%w: run record %s: %v", ErrBadRun, kv.Key, err)
	}
	r.Options.Defaults()
	r.Revision = kv.ModRevision
	return &r, nil
}

// ListRecords returns every run recorded on the board, oldest first.
func ListRecords(ctx context.Context, st *board.Store) ([]*Record, error) {
	kvs, _, err := st.List(ctx, PrefixRuns)
	if err != nil {
		return nil, err
	}
	var out []*Record
	for _, kv := range kvs {
		r, err := DecodeRun(kv)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// NoteOf is the ready note of task t (payload p) whose record is val at
// revision rev (0: the note is written in the same transaction).
func NoteOf(t board.Task, p *Payload, val []byte, rev int64) ReadyNote {
	n := ReadyNote{Task: t.ID, Tags: t.Tags, Prio: p.Prio, Record: val, Rev: rev}
	if p.Envelope != nil {
		n.Agent = p.Envelope.Agent.Profile
	}
	return n
}

// Unesc reverses Esc; a malformed segment is returned as is.
func Unesc(s string) string {
	if u, err := url.PathUnescape(s); err == nil {
		return u
	}
	return s
}

// RunTasks lists the run's tasks.
func RunTasks(ctx context.Context, st *board.Store, run string) ([]board.Task, error) {
	kvs, _, err := st.List(ctx, RunTaskPrefix(run))
	if err != nil {
		return nil, err
	}
	out := make([]board.Task, 0, len(kvs))
	for _, kv := range kvs {
		t, err := board.DecodeTask(kv)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// ReadyAt is a ready announcement as the gatekeeper holds it: the note and
// the revision of the task record it carries.
type ReadyAt struct {
	Note ReadyNote
	Rev  int64
}

// ReadyBefore orders ready tasks: higher priority first, then by name.
func ReadyBefore(a, b string, na, nb ReadyNote) bool {
	if na.Prio != nb.Prio {
		return na.Prio > nb.Prio
	}
	return a < b
}

// HostOfKey returns the host and lease (hex) of a hosts/ key.
func HostOfKey(run, key string) (host, lease string, ok bool) {
	rest, found := strings.CutPrefix(key, HostsPrefix(run))
	if !found {
		return "", "", false
	}
	h, l, found := strings.Cut(rest, "/")
	if !found {
		return "", "", false
	}
	return Unesc(h), l, true
}
