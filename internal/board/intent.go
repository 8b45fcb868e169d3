package board

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"
)

// Scope is how far an intent's action boundary reaches from its files.
type Scope string

// Scope levels, narrowest first.
const (
	ScopeFile Scope = "file" // exactly the listed files
	ScopeDir  Scope = "dir"  // the directories holding them, recursively
	ScopeRepo Scope = "repo" // the whole repository
)

// ChangeKind is a kind of change an intent allows itself.
type ChangeKind string

// Change kinds.
const (
	ChangeAdd    ChangeKind = "add"
	ChangeModify ChangeKind = "modify"
	ChangeDelete ChangeKind = "delete"
	ChangeRename ChangeKind = "rename"
)

// Intent is what a worker declares before working on a task: its context
// anchor (Task, Base commit), its action boundary (Files at a Scope, the
// Changes it may make) and metadata (Risk 0–1, Deps). Files are
// repository-relative, slash-separated paths. Revision is the CreateRevision
// of the declaration, which orders intents: of two overlapping intents the
// one with the larger Revision is the later.
type Intent struct {
	Task     string       `json:"task"`
	Worker   string       `json:"worker"`
	Base     string       `json:"base,omitempty"`
	Files    []string     `json:"files,omitempty"`
	Scope    Scope        `json:"scope"`
	Changes  []ChangeKind `json:"changes,omitempty"`
	Risk     float64      `json:"risk,omitempty"`
	Deps     []string     `json:"deps,omitempty"`
	Lease    LeaseID      `json:"-"`
	Revision int64        `json:"-"`
}

func intentKey(task, worker string) string { return PrefixIntents + seg(task) + "/" + seg(worker) }

// region is a part of the repository: one file, or a directory subtree
// ("." is the whole repository).
type region struct {
	path string
	tree bool
}

func (a region) meets(b region) bool {
	switch {
	case !a.tree && !b.tree:
		return a.path == b.path
	case a.tree && b.tree:
		return within(a.path, b.path) || within(b.path, a.path)
	case a.tree:
		return within(b.path, a.path)
	default:
		return within(a.path, b.path)
	}
}

// within reports whether p lies in the subtree dir.
func within(p, dir string) bool {
	return dir == "." || p == dir || strings.HasPrefix(p, dir+"/")
}

func cleanPath(p string) string { return path.Clean(strings.TrimPrefix(path.Clean("/"+p), "/")) }

// regions returns the parts of the repository in's boundary covers, each with
// the declared path that produced it.
func (in Intent) regions() (rs []region, paths []string) {
	if in.Scope == ScopeRepo {
		return []region{{path: ".", tree: true}}, []string{"."}
	}
	for _, f := range in.Files {
		p := cleanPath(f)
		r := region{path: p}
		if in.Scope == ScopeDir {
			r = region{path: path.Dir(p), tree: true}
		}
		rs = append(rs, r)
		paths = append(paths, p)
	}
	return rs, paths
}

// Overlap returns the declared paths of a and b whose boundaries intersect,
// sorted and without repeats; nil means the intents are disjoint. A
// repository-wide intent is reported as ".".
func (a Intent) Overlap(b Intent) []string {
	ra, pa := a.regions()
	rb, pb := b.regions()
	var out []string
	for i := range ra {
		for j := range rb {
			if ra[i].meets(rb[j]) {
				out = append(out, pa[i], pb[j])
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func (in Intent) validate() error {
	if in.Task == "" || in.Worker == "" {
		return fmt.Errorf("intent: empty task or worker: %w", ErrInvalid)
	}
	switch in.Scope {
	case ScopeFile, ScopeDir, ScopeRepo:
	default:
		return fmt.Errorf("intent %s: unknown scope %q: %w", in.Task, in.Scope, ErrInvalid)
	}
	if in.Risk < 0 || in.Risk > 1 {
		return fmt.Errorf("intent %s: risk %v outside 0..1: %w", in.Task, in.Risk, ErrInvalid)
	}
	return nil
}

// DeclareIntent records in (replacing the same task and worker's earlier
// declaration), bound to in.Lease — normally the claim's, so the intent
// vanishes with the claim. It returns in with its Revision, and the intents of
// other tasks that overlap it and were declared before it: if that list is
// not empty, this worker is the later one and should wait, narrow its scope
// (and declare again) or proceed with a declared conflict.
func (s *Store) DeclareIntent(ctx context.Context, in Intent) (Intent, []Intent, error) {
	if err := in.validate(); err != nil {
		return Intent{}, nil, err
	}
	val, err := json.Marshal(in)
	if err != nil {
		return Intent{}, nil, err
	}
	key := intentKey(in.Task, in.Worker)
	if _, err := s.Put(ctx, key, val, in.Lease); err != nil {
		return Intent{}, nil, err
	}
	all, err := s.Intents(ctx)
	if err != nil {
		return Intent{}, nil, err
	}
	var earlier []Intent
	for _, o := range all {
		if o.Task == in.Task && o.Worker == in.Worker {
			in.Revision = o.Revision
		}
	}
	if in.Revision == 0 {
		return Intent{}, nil, fmt.Errorf("intent %s: vanished after declaration: %w", in.Task, ErrLeaseExpired)
	}
	for _, o := range all {
		if o.Task != in.Task && o.Revision < in.Revision && in.Overlap(o) != nil {
			earlier = append(earlier, o)
		}
	}
	return in, earlier, nil
}

// Intents returns every declared intent, ordered by key.
func (s *Store) Intents(ctx context.Context) ([]Intent, error) {
	kvs, _, err := s.List(ctx, PrefixIntents)
	if err != nil {
		return nil, err
	}
	out := make([]Intent, 0, len(kvs))
	for _, kv := range kvs {
		var in Intent
		if err := json.Unmarshal(kv.Value, &in); err != nil {
			return nil, fmt.Errorf("board: intent record %q: %w", kv.Key, err)
		}
		in.Lease, in.Revision = kv.Lease, kv.CreateRevision
		out = append(out, in)
	}
	return out, nil
}

// OverlappingIntents returns the intents of other tasks whose boundaries
// intersect in's, whenever declared.
func (s *Store) OverlappingIntents(ctx context.Context, in Intent) ([]Intent, error) {
	all, err := s.Intents(ctx)
	if err != nil {
		return nil, err
	}
	var out []Intent
	for _, o := range all {
		if o.Task != in.Task && in.Overlap(o) != nil {
			out = append(out, o)
		}
	}
	return out, nil
}

// WithdrawIntent deletes the task and worker's intent; ErrNotFound if none.
func (s *Store) WithdrawIntent(ctx context.Context, task, worker string) error {
	_, err := s.Delete(ctx, intentKey(task, worker))
	return err
}
