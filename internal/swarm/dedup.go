package swarm

import (
	"github.com/apiary-dev/apiary/internal/review"
	"github.com/apiary-dev/apiary/internal/swarm/layout"
)

// Duplicate is a function a worker added that duplicates another.
type Duplicate struct {
	Task   string      `json:"task"`
	Worker string      `json:"worker"`
	Func   review.Func `json:"func"`
	Of     review.Func `json:"of"`
	OfTask string      `json:"of_task,omitempty"` // "" when Of already existed
	Kind   string      `json:"kind"`
	Ratio  float64     `json:"ratio"`
}

// minDupTokens ignores trivial bodies ("{ return x }"), which are alike by
// nature.
const minDupTokens = 12

// dupIndex holds the functions known so far: those that existed in the
// repository and those added by integrated candidates.
type dupIndex struct {
	byHash map[string]indexed
	all    []indexed
}

type indexed struct {
	f    review.Func
	task string // "" for a function that existed before the run
}

func newDupIndex() *dupIndex { return &dupIndex{byHash: map[string]indexed{}} }

func (x *dupIndex) add(f review.Func, task string) {
	if len(f.Tokens) < minDupTokens {
		return
	}
	e := indexed{f: f, task: task}
	if _, ok := x.byHash[f.Hash]; !ok {
		x.byHash[f.Hash] = e
	}
	x.all = append(x.all, e)
}

// removeFile drops the functions of file, which the run rewrote: whoever
// wrote them, they are what the file held before, and the caller indexes
// what it holds now. An exact hash whose first holder was in file passes
// to the next function in the index that has it.
func (x *dupIndex) removeFile(file string) {
	keep := x.all[:0]
	for _, e := range x.all {
		if e.f.File != file {
			keep = append(keep, e)
		}
	}
	clear(x.all[len(keep):])
	x.all = keep
	lost := map[string]bool{}
	for h, e := range x.byHash {
		if e.f.File == file {
			delete(x.byHash, h)
			lost[h] = true
		}
	}
	for _, e := range x.all {
		if _, ok := x.byHash[e.f.Hash]; !ok && lost[e.f.Hash] {
			x.byHash[e.f.Hash] = e
		}
	}
}

// find reports the best duplicate of f among functions from other tasks
// (or that existed before): an exact one, else the most similar at or above
// near. ok is false when there is none.
func (x *dupIndex) find(f review.Func, task string, near float64) (Duplicate, bool) {
	if len(f.Tokens) < minDupTokens {
		return Duplicate{}, false
	}
	if e, ok := x.byHash[f.Hash]; ok && e.task != task && !(e.f.File == f.File && e.f.Name == f.Name) {
		return Duplicate{Task: task, Func: f, Of: e.f, OfTask: e.task, Kind: layout.DupExact, Ratio: 1}, true
	}
	var best Duplicate
	found := false
	for _, e := range x.all {
		if e.task == task || e.f.Lang != f.Lang || e.f.File == f.File && e.f.Name == f.Name {
			continue
		}
		la, lb := len(f.Tokens), len(e.f.Tokens)
		if 2*float64(min(la, lb))/float64(la+lb) < near {
			continue // too different in length to reach the threshold
		}
		if r := review.Similarity(f.Tokens, e.f.Tokens); r >= near && r > best.Ratio {
			best, found = Duplicate{Task: task, Func: f, Of: e.f, OfTask: e.task, Kind: layout.DupNear, Ratio: r}, true
		}
	}
	return best, found
}

// UtilFunc is one entry of the utility index the merge role publishes:
// where a reusable function is, its signature and the first line of its
// documentation, so that an agent can tell whether it fits.
type UtilFunc struct {
	Name      string `json:"name"`
	File      string `json:"file"`
	Line      int    `json:"line"`
	Lang      string `json:"lang"`
	Signature string `json:"signature,omitempty"`
	Doc       string `json:"doc,omitempty"`
}
