package swarm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/apiary-dev/apiary/internal/board"
	"github.com/apiary-dev/apiary/internal/git"
	"github.com/apiary-dev/apiary/internal/review"
	"github.com/apiary-dev/apiary/internal/swarm/layout"
)

// emptyTree is git's id of the empty tree: a diff from it lists every file.
const emptyTree = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"

// maxIndexFiles bounds the files the utility index reads.
const maxIndexFiles = 2000

// maxUtils and maxUtilsBytes bound the utility index published to
// workers (it is written into every worktree and named in every prompt);
// utilIndex says which entries a cut keeps.
const (
	maxUtils      = 2000
	maxUtilsBytes = 256 << 10
)

// scanIntegrated reads which tasks of the run the branch already holds, by
// the trailers of its first-parent history since the run started.
func (m *merger) scanIntegrated(ctx context.Context, head string) error {
	log, err := m.repo.repo.FirstParentLog(ctx, m.env.run.StartHead, head)
	if err != nil {
		return err
	}
	for _, e := range log {
		if r, _ := git.TrailerValue(e.Trailers, git.TrailerRun); r != m.env.run.Run {
			continue
		}
		name, _ := git.TrailerValue(e.Trailers, git.TrailerTask)
		tok, _ := git.TrailerValue(e.Trailers, TrailerFence)
		n, err := strconv.ParseInt(tok, 10, 64)
		if name != "" && err == nil {
			m.integrated[layout.TaskID(m.env.run.Run, name)] = n
		}
	}
	return nil
}

// buildIndex reads the functions of the repository at head into the
// duplicate index and publishes the utility index.
func (m *merger) buildIndex(ctx context.Context, head string) error {
	changes, err := m.repo.repo.DiffNameStatus(ctx, emptyTree, head)
	if err != nil {
		return err
	}
	var files []string
	for _, c := range changes {
		if review.UtilityFile(c.Path) {
			files = append(files, c.Path)
		}
	}
	if len(files) > maxIndexFiles {
		files = files[:maxIndexFiles]
	}
	if err := m.indexFiles(ctx, head, files, ""); err != nil {
		return err
	}
	// A merge role that takes over (its predecessor's lease lapsed) keeps
	// the duplicates found before it out of the utility index: they are on
	// the board, not in its memory.
	var dups []Duplicate
	if err := listJSON(ctx, m.env.st, layout.MergePrefix(m.env.run.Run)+"dups/", &dups); err != nil {
		return err
	}
	for _, d := range dups {
		m.dupFuncs[d.Func.File+"\x00"+d.Func.Name] = true
	}
	return m.publishUtils(ctx)
}

// indexFiles adds the functions of files at rev to the index, attributed to
// task ("" for code that predates the run).
func (m *merger) indexFiles(ctx context.Context, rev string, files []string, task string) error {
	if len(files) == 0 {
		return nil
	}
	blobs, err := m.repo.repo.ReadBlobs(ctx, rev, files)
	if err != nil {
		return err
	}
	for _, f := range files {
		if src, ok := blobs[f]; ok {
			for _, fn := range review.ExtractFuncs(f, src) {
				m.index.add(fn, task)
			}
		}
	}
	return nil
}

// publishUtils writes the utility index of the functions known so far to
// the board, within maxUtils and maxUtilsBytes.
func (m *merger) publishUtils(ctx context.Context) error {
	utils := utilIndex(m.index.all, m.dupFuncs, maxUtils, maxUtilsBytes)
	_, err := m.env.st.Txn(ctx, board.Txn{If: []board.Cmp{m.lead.Guard()},
		Then: []board.Op{board.PutOp(utilsKey(m.env.run.Run), layout.MustJSON(utils), board.NoLease)}})
	return err
}

// utilIndex is the utility index of the functions in all: the exported
// ones not found to be duplicates (skip holds file\x00name), each file and
// name once (its first entry in all), ordered by file and then line, and
// cut to at most maxN entries whose JSON is at most maxBytes. The cut
// keeps a prefix of that order — the files that sort first — and ranks
// nothing by usefulness: it is an order every publish and every merge role
// computes alike, so an index too big to publish whole loses the same
// functions each time rather than different ones from one prompt to the
// next.
func utilIndex(all []indexed, skip map[string]bool, maxN, maxBytes int) []UtilFunc {
	utils := []UtilFunc{}
	seen := map[string]bool{}
	for _, e := range all {
		k := e.f.File + "\x00" + e.f.Name
		if seen[k] || !exported(e.f) || skip[k] {
			continue
		}
		seen[k] = true
		utils = append(utils, UtilFunc{Name: e.f.Name, File: e.f.File, Line: e.f.Line, Lang: e.f.Lang, Signature: e.f.Signature, Doc: e.f.Doc})
	}
	sort.Slice(utils, func(i, j int) bool {
		if utils[i].File != utils[j].File {
			return utils[i].File < utils[j].File
		}
		return utils[i].Line < utils[j].Line
	})
	if len(utils) > maxN {
		utils = utils[:maxN]
	}
	// The JSON of a list is its entries' in brackets, a comma between two:
	// the longest prefix that fits is found encoding each entry once.
	size := len("[]")
	for i, u := range utils {
		n := len(layout.MustJSON(u))
		if i > 0 {
			n++
		}
		if size+n > maxBytes {
			return utils[:i]
		}
		size += n
	}
	return utils
}

// exported reports whether a function is worth offering for reuse: Go's
// exported names, and other languages' names without a leading underscore.
func exported(f review.Func) bool {
	name := f.Name
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		name = name[i+1:]
	}
	if name == "" || name == "main" || name == "init" {
		return false
	}
	if f.Lang == "go" {
		return name[0] >= 'A' && name[0] <= 'Z'
	}
	return name[0] != '_'
}

// ReadUtils returns the utility index the run's merge role published.
func ReadUtils(ctx context.Context, st *board.Store, run string) ([]UtilFunc, error) {
	kv, err := st.Get(ctx, utilsKey(run))
	if errors.Is(err, board.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []UtilFunc
	if err := json.Unmarshal(kv.Value, &out); err != nil {
		return nil, fmt.Errorf("%w: utility index: %v", layout.ErrBadRun, err)
	}
	return out, nil
}

// duplicates reports the functions c adds that duplicate existing ones,
// other workers' integrated additions or those of the candidates accepted
// before it into the same batch (batch, not yet in the index). It also
// returns the functions c adds, for batch.
func (m *merger) duplicates(ctx context.Context, c *layout.Candidate, batch *dupIndex) ([]Duplicate, []review.Func, error) {
	var files []string
	for _, p := range c.Paths {
		if review.UtilityFile(p) {
			files = append(files, p)
		}
	}
	if len(files) == 0 {
		return nil, nil, nil
	}
	after, err := m.repo.repo.ReadBlobs(ctx, c.Commit, files)
	if err != nil {
		return nil, nil, err
	}
	before, err := m.repo.repo.ReadBlobs(ctx, c.Base, files)
	if err != nil {
		return nil, nil, err
	}
	var out []Duplicate
	var added []review.Func
	for _, f := range files {
		old := map[string]string{}
		for _, fn := range review.ExtractFuncs(f, before[f]) {
			old[fn.Name] = fn.Hash
		}
		for _, fn := range review.ExtractFuncs(f, after[f]) {
			if h, ok := old[fn.Name]; ok && h == fn.Hash {
				continue // unchanged
			}
			added = append(added, fn)
			d, ok := m.index.find(fn, c.Task, m.opts.NearDup)
			if !ok {
				d, ok = batch.find(fn, c.Task, m.opts.NearDup)
			}
			if ok {
				d.Worker = c.Worker
				out = append(out, d)
			}
		}
	}
	return out, added, nil
}

// publishDups records duplicate reports on the board.
func (m *merger) publishDups(ctx context.Context, dups []Duplicate) {
	var ops []board.Op
	for _, d := range dups {
		ops = append(ops, board.PutOp(dupKey(m.env.run.Run, d.Task, d.Func.File+":"+d.Func.Name), layout.MustJSON(d), board.NoLease))
		m.env.log.Info("duplicate function", "task", d.Task, "func", d.Func.Name, "file", d.Func.File, "of", d.Of.Name,
			"of_file", d.Of.File, "kind", d.Kind, "ratio", d.Ratio)
	}
	if _, err := m.env.st.Txn(ctx, board.Txn{If: []board.Cmp{m.lead.Guard()}, Then: ops}); err != nil {
		m.env.log.Warn("recording duplicates", "err", err)
	}
}

// indexIntegrated adds the functions of a batch just integrated at commit
// to the index and publishes the utility index. It comes before the batch's
// tasks are done, so that whoever sees them done (a worker taking the next
// task, the end of the run) finds their functions in the utility index.
func (m *merger) indexIntegrated(ctx context.Context, acc []accepted, commit string) {
	for _, a := range acc {
		var files []string
		for _, p := range a.c.Paths {
			if review.UtilityFile(p) {
				m.index.removeFile(p)
				files = append(files, p)
			}
		}
		if err := m.indexFiles(ctx, commit, files, a.c.Task); err != nil {
			m.env.log.Warn("indexing functions", "err", err)
		}
	}
	if err := m.publishUtils(ctx); err != nil {
		m.env.log.Warn("publishing the utility index", "err", err)
	}
}

// compactIfDue compacts the intent log when due, after a batch's tasks are
// done.
func (m *merger) compactIfDue(ctx context.Context) {
	if compactDue(m.logged, len(m.env.run.Tasks), m.opts.CompactShare) {
		if err := m.compact(ctx); err != nil {
			m.env.log.Warn("compacting intents", "err", err)
		}
	}
}

// HotFile is a file many tasks write, with a suggested task that splits it.
type HotFile struct {
	File       string    `json:"file"`
	Touches    int       `json:"touches"`
	Conflicts  int       `json:"conflicts"`
	Tasks      []string  `json:"tasks"`
	Suggestion SplitTask `json:"suggestion"`
	// Created: the split task was added to the run.
	Created bool `json:"created,omitempty"`
}

// SplitTask is a suggested plan task.
type SplitTask struct {
	ID         string   `json:"id"`
	Objective  string   `json:"objective"`
	WriteScope []string `json:"write_scope"`
}

// hotFiles publishes the files whose writers reach HotTouches (or that
// conflicted twice), again whenever their count grows, and the first time
// adds the task that splits such a file, to run before the tasks not yet
// started that write it.
func (m *merger) hotFiles(ctx context.Context) {
	for file, tasks := range m.touches {
		if len(tasks) < m.opts.HotTouches && m.fileConfl[file] < 2 || m.hotDone[file] == len(tasks) {
			continue
		}
		first := m.hotDone[file] == 0
		dir := path.Dir(file)
		scope := dir + "/"
		if dir == "." {
			scope = file
		}
		h := HotFile{File: file, Touches: len(tasks), Conflicts: m.fileConfl[file], Tasks: slices.Clone(tasks),
			Suggestion: SplitTask{ID: splitName(file), WriteScope: []string{scope},
				Objective: fmt.Sprintf("Split %s into smaller files by responsibility, keeping its behaviour and API: %d tasks of this run wrote it (%d conflicts), so parallel work on it keeps colliding.", file, len(tasks), m.fileConfl[file])}}
		if first && !m.opts.NoSplit {
			var from *layout.Payload
			if t, err := m.env.st.Task(ctx, layout.TaskID(m.env.run.Run, tasks[len(tasks)-1])); err == nil {
				from, _ = layout.DecodePayload(t)
			}
			err := m.addTask(ctx, newTask{spec: publishSpec{name: h.Suggestion.ID, env: m.followUpEnvelope(from, h.Suggestion.Objective, h.Suggestion.WriteScope)}, before: file})
			switch {
			case err == nil, err == errTaskExists:
				m.split[file] = true
			default:
				m.env.log.Warn("adding a split task", "file", file, "err", err)
			}
		}
		h.Created = m.split[file]
		if _, err := m.env.st.Txn(ctx, board.Txn{If: []board.Cmp{m.lead.Guard()},
			Then: []board.Op{board.PutOp(hotKey(m.env.run.Run, file), layout.MustJSON(h), board.NoLease)}}); err != nil {
			m.env.log.Warn("recording a hot file", "file", file, "err", err)
			continue
		}
		m.hotDone[file] = len(tasks)
		m.env.log.Info("hot file", "file", file, "touches", len(tasks), "split", h.Suggestion.ID, "created", h.Created)
	}
}

// compact folds the intent log into patterns under archive/ and deletes
// the folded records.
func (m *merger) compact(ctx context.Context) error {
	run := m.env.run.Run
	kvs, _, err := m.env.st.List(ctx, layout.IntentLogPrefix(run))
	if err != nil {
		return err
	}
	var ins []loggedIntent
	for _, kv := range kvs {
		var in loggedIntent
		if json.Unmarshal(kv.Value, &in) == nil {
			ins = append(ins, in)
		}
	}
	pats := compactIntents(ins)
	ops := []board.Op{}
	for i, p := range pats {
		key := layout.ArchivePrefix(run) + fmt.Sprintf("%d-%03d", m.stats.Compactions, i)
		ops = append(ops, board.PutOp(key, layout.MustJSON(p), board.NoLease))
	}
	for _, kv := range kvs {
		ops = append(ops, board.DeleteOp(kv.Key))
	}
	for len(ops) > 0 {
		n := min(len(ops), 90)
		if _, err := m.env.st.Txn(ctx, board.Txn{If: []board.Cmp{m.lead.Guard()}, Then: ops[:n]}); err != nil {
			return err
		}
		ops = ops[n:]
	}
	m.stats.Compactions++
	m.logged = 0
	m.env.log.Info("intents compacted", "records", len(kvs), "patterns", len(pats))
	return nil
}

// conflictInfo is why a candidate could not be merged.
type conflictInfo struct {
	kind  string // overlap | textual
	paths []string
}

// conflict records an integration conflict, puts the task back to be
// redone on the new head with the approved hints, and counts the files.
func (m *merger) conflict(ctx context.Context, c *layout.Candidate, t board.Task, p *layout.Payload, head string, ci *conflictInfo) {
	m.stats.Conflicts++
	m.record(outcome{passed: false})
	kind := ci.kind
	if len(c.Declared) > 0 {
		kind = "declared-" + kind
	}
	others, workers := m.writersSince(ctx, c.Base, head, ci.paths)
	tasks := append([]string{c.Task}, others...)
	rec := board.Conflict{Type: conflictType(kind, ci.paths), Tasks: tasks, Workers: append([]string{c.Worker}, workers...),
		Files: ci.paths, Resolution: resolutionFor(kind, ci.paths)}
	rc, first, err := m.env.st.RecordConflict(ctx, rec)
	if err != nil {
		m.env.log.Warn("recording a conflict", "task", c.Task, "err", err)
	} else if first {
		m.env.log.Info("first conflict of its type: a resolution hint awaits review", "type", rc.Type, "conflict", rc.ID)
	}
	for _, f := range ci.paths {
		m.fileConfl[f]++
	}
	m.reject(ctx, c, t, p, fmt.Sprintf("%s conflict with the integration branch on %s; redo on the new head", kind, strings.Join(ci.paths, ", ")), false)
}

// writersSince names the run's tasks (and their workers) that changed paths
// on the branch between base and head.
func (m *merger) writersSince(ctx context.Context, base, head string, paths []string) (tasks, workers []string) {
	log, err := m.repo.repo.FirstParentLog(ctx, base, head)
	if err != nil {
		return nil, nil
	}
	for _, e := range log {
		name, _ := git.TrailerValue(e.Trailers, git.TrailerTask)
		if name == "" || len(e.Parents) == 0 {
			continue
		}
		changes, err := m.repo.repo.DiffNameStatus(ctx, e.Parents[0], e.ID)
		if err != nil {
			continue
		}
		if slices.ContainsFunc(changes, func(c git.Change) bool { return slices.Contains(paths, c.Path) }) {
			tasks = append(tasks, layout.TaskID(m.env.run.Run, name))
			if w, ok := git.TrailerValue(e.Trailers, TrailerWorker); ok {
				workers = append(workers, w)
			}
		}
	}
	return tasks, workers
}

// conflictType classifies a conflict by its kind and the languages of the
// files involved: "overlap:go", "textual:md+py".
func conflictType(kind string, paths []string) string {
	var langs []string
	for _, p := range paths {
		l := review.LangOf(p)
		if l == "" {
			l = strings.TrimPrefix(path.Ext(p), ".")
		}
		if l == "" {
			l = "file"
		}
		langs = append(langs, l)
	}
	slices.Sort(langs)
	return kind + ":" + strings.Join(slices.Compact(langs), "+")
}

// resolutionFor proposes the hint a reviewer approves or rejects for a
// conflict type.
func resolutionFor(kind string, paths []string) string {
	switch {
	case strings.HasSuffix(kind, "overlap"):
		return fmt.Sprintf("Another task changed %s after you started. Start from the integration head, keep its change, and re-apply only your task's intent; declare a file-scoped intent so overlaps surface at claim time.", strings.Join(paths, ", "))
	default:
		return fmt.Sprintf("Your change to %s does not merge with the integration head. Re-implement it on the head in small edits away from the lines the other task changed.", strings.Join(paths, ", "))
	}
}
