package layout

import (
	"fmt"

	"github.com/apiary-dev/apiary/internal/plan"
)

// MergeOptions tune the merge role; zero fields take the defaults.
type MergeOptions struct {
	BatchTasks int     `json:"batch_tasks"`  // integrate a worker's work after N finished tasks (default 1)
	BatchLines int     `json:"batch_lines"`  // ... or L changed lines (default 0: no line trigger)
	BatchWaitS float64 `json:"batch_wait_s"` // a candidate waits at most this long for its batch (default 2)
	// NearDup is the similarity ratio at which a function counts as a near
	// duplicate (default 0.85).
	NearDup float64 `json:"near_dup"`
	// OnExact and OnNear say what happens to a candidate that adds an
	// exact or a near duplicate of a function: DupWarn (the default)
	// integrates it and reports the duplicate; DupReject rejects the
	// attempt with a receipt naming the function to use, and the task is
	// retried with that as a hint; DupReuse integrates it and adds a task
	// that makes the new function call the existing one.
	// RejectDuplicates is the older spelling of OnExact: DupReject.
	OnExact          DupPolicy `json:"on_exact,omitempty"`
	OnNear           DupPolicy `json:"on_near,omitempty"`
	RejectDuplicates bool      `json:"reject_duplicates,omitempty"`
	// Cool-down: over the last CooldownWindow integrations (default 20, and
	// at least CooldownMin = 8 of them), a duplicate rate above MaxDupRate
	// (0.25) or a gate pass rate below MinPassRate (0.75) stops new claims
	// until the work in flight has drained.
	CooldownWindow int     `json:"cooldown_window"`
	CooldownMin    int     `json:"cooldown_min"`
	MaxDupRate     float64 `json:"max_dup_rate"`
	MinPassRate    float64 `json:"min_pass_rate"`
	// HotTouches is the number of tasks writing one file that makes it hot
	// (default 3): a task that splits the file is then added and runs
	// before the tasks not yet started that write it, unless NoSplit.
	// CompactShare is the intent-log size, as a share of the run's tasks,
	// that triggers compaction (default 0.5).
	HotTouches   int     `json:"hot_touches"`
	NoSplit      bool    `json:"no_split,omitempty"`
	CompactShare float64 `json:"compact_share"`
}

// DupPolicy is what the merge role does with a duplicate function.
type DupPolicy string

// Duplicate policies.
const (
	DupWarn   DupPolicy = "warn"
	DupReject DupPolicy = "reject"
	DupReuse  DupPolicy = "reuse"
)

// Validate reports whether the options are usable: known policies and
// ratios in range.
func (o *MergeOptions) Validate() error {
	for _, p := range []DupPolicy{o.OnExact, o.OnNear} {
		switch p {
		case "", DupWarn, DupReject, DupReuse:
		default:
			return fmt.Errorf("%w: duplicate policy %q: want warn, reject or reuse", ErrConfig, p)
		}
	}
	if o.NearDup < 0 || o.NearDup > 1 {
		return fmt.Errorf("%w: near-duplicate ratio %g: want one in (0, 1]", ErrConfig, o.NearDup)
	}
	if o.HotTouches < 0 {
		return fmt.Errorf("%w: hot-file touches %d", ErrConfig, o.HotTouches)
	}
	return nil
}

// FromPlan fills the options the caller left unset from a plan's merge:
// section (what the caller sets — flags, apiary.yaml — wins).
func (o *MergeOptions) FromPlan(m *plan.Merge) {
	if m == nil {
		return
	}
	if o.OnExact == "" && !o.RejectDuplicates {
		o.OnExact = DupPolicy(m.OnExact)
	}
	if o.OnNear == "" {
		o.OnNear = DupPolicy(m.OnNear)
	}
	if o.NearDup == 0 {
		o.NearDup = m.NearDup
	}
	if o.HotTouches == 0 {
		o.HotTouches = m.HotTouches
	}
	o.NoSplit = o.NoSplit || m.NoSplit
}

// Over returns base with the policy fields o sets put over it.
func (o MergeOptions) Over(base MergeOptions) MergeOptions {
	if o.RejectDuplicates {
		o.OnExact = DupReject
	}
	if o.OnExact != "" {
		base.OnExact, base.RejectDuplicates = o.OnExact, false
	}
	if o.OnNear != "" {
		base.OnNear = o.OnNear
	}
	if o.NearDup != 0 {
		base.NearDup = o.NearDup
	}
	if o.HotTouches != 0 {
		base.HotTouches = o.HotTouches
	}
	base.NoSplit = base.NoSplit || o.NoSplit
	return base
}

// Policy is what to do with a duplicate of kind (DupExact or DupNear).
func (o *MergeOptions) Policy(kind string) DupPolicy {
	p := o.OnNear
	if kind == DupExact {
		p = o.OnExact
	}
	if p == "" {
		p = DupWarn
	}
	return p
}

// Defaults sets each zero field to its default.
func (o *MergeOptions) Defaults() {
	if o.RejectDuplicates && o.OnExact == "" {
		o.OnExact = DupReject
	}
	if o.BatchTasks <= 0 {
		o.BatchTasks = 1
	}
	if o.BatchWaitS <= 0 {
		o.BatchWaitS = 2
	}
	if o.NearDup <= 0 {
		o.NearDup = 0.85
	}
	if o.CooldownWindow <= 0 {
		o.CooldownWindow = 20
	}
	if o.CooldownMin <= 0 {
		o.CooldownMin = 8
	}
	if o.MaxDupRate <= 0 {
		o.MaxDupRate = 0.25
	}
	if o.MinPassRate <= 0 {
		o.MinPassRate = 0.75
	}
	if o.HotTouches <= 0 {
		o.HotTouches = 3
	}
	if o.CompactShare <= 0 {
		o.CompactShare = 0.5
	}
}

// DupKinds.
const (
	DupExact = "exact"
	DupNear  = "near"
)
