package git

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// tree is a parsed tree object held without pointers but to its data, so
// that the garbage collector marks a cache of thousands of trees without
// scanning their hundreds of thousands of entries (which, on a loaded
// machine, stretched the acquisitions a collection overlapped several
// times over).
type tree struct {
	data    string
	ents    []treeRef
	hashLen int
}

// treeRef locates one entry in its tree's data: the name is
// data[name:nameEnd], the id the hashLen bytes after the NUL that ends it.
type treeRef struct{ name, nameEnd, mode uint32 }

func (t *tree) len() int {
	if t == nil {
		return 0
	}
	return len(t.ents)
}

func (t *tree) at(i int) treeEntry {
	r := t.ents[i]
	return treeEntry{name: t.data[r.name:r.nameEnd], mode: r.mode, oid: t.data[r.nameEnd+1 : int(r.nameEnd)+1+t.hashLen]}
}

// size is roughly what t takes in memory.
func (t *tree) size() int { return len(t.data) + 12*len(t.ents) + 64 }

// newTree parses a tree object (see parseTree).
func newTree(raw []byte, hashLen int) (*tree, error) {
	data := string(raw)
	if len(data) > 1<<31 {
		return nil, errors.New("git: tree object too large")
	}
	t := &tree{data: data, ents: make([]treeRef, 0, len(data)/(hashLen+16)), hashLen: hashLen}
	off := 0
	for off < len(data) {
		sp := strings.IndexByte(data[off:], ' ')
		if sp <= 0 {
			return nil, errors.New("git: malformed tree entry mode")
		}
		var mode uint32
		for _, c := range []byte(data[off : off+sp]) {
			if c < '0' || c > '7' {
				return nil, errors.New("git: malformed tree entry mode")
			}
			mode = mode<<3 | uint32(c-'0')
		}
		off += sp + 1
		nul := strings.IndexByte(data[off:], 0)
		if nul <= 0 || len(data)-off < nul+1+hashLen {
			return nil, errors.New("git: malformed tree entry name")
		}
		t.ents = append(t.ents, treeRef{name: uint32(off), nameEnd: uint32(off + nul), mode: mode})
		off += nul + 1 + hashLen
	}
	return t, nil
}

// treeCache keeps parsed tree objects by id (trees never change), up to
// about max bytes; when full it forgets an arbitrary quarter of them, not
// all (a cleared cache made the next acquisition read every tree again).
type treeCache struct {
	mu        sync.Mutex
	max, size int
	m         map[string]*tree
}

func (c *treeCache) init(max int) { c.max, c.m = max, map[string]*tree{} }

func (c *treeCache) get(oid string) (*tree, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.m[oid]
	return t, ok
}

func (c *treeCache) put(oid string, t *tree) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[oid]; ok {
		return
	}
	if c.size+t.size() > c.max {
		for k, v := range c.m { // in no particular order
			if c.size <= c.max*3/4 {
				break
			}
			c.size -= v.size()
			delete(c.m, k)
		}
	}
	c.m[oid] = t
	c.size += t.size()
}

// readTrees returns the trees with the given (raw) ids, from the cache or
// in one request.
func (p *WorktreePool) readTrees(ctx context.Context, oids []string) (map[string]*tree, error) {
	out := make(map[string]*tree, len(oids))
	var need []string
	for _, o := range oids {
		if t, ok := p.trees.get(o); ok {
			out[o] = t
		} else if _, dup := out[o]; !dup && !slices.Contains(need, o) {
			need = append(need, o)
		}
	}
	if len(need) == 0 {
		return out, nil
	}
	obs, err := p.objects.get(ctx, hexAll(need)...)
	if err != nil {
		return nil, err
	}
	for k, ob := range obs {
		if ob.typ != "tree" {
			return nil, fmt.Errorf("git: object %s is a %s, not a tree", ob.oid, ob.typ)
		}
		t, err := newTree(ob.data, p.hashLen)
		if err != nil {
			return nil, fmt.Errorf("%w (tree %s)", err, ob.oid)
		}
		p.trees.put(need[k], t)
		out[need[k]] = t
	}
	return out, nil
}

// change is one file that differs between two trees.
type change struct {
	path           string
	old, new       treeEntry
	hasOld, hasNew bool
}

// diffTrees lists the files that differ between trees a and b ("" is the
// empty tree), descending only into subtrees whose ids differ, one request
// per level of the trees.
func (p *WorktreePool) diffTrees(ctx context.Context, a, b string) ([]change, error) {
	type pair struct{ prefix, a, b string }
	level := []pair{{"", a, b}}
	var out []change
	for len(level) > 0 {
		var need []string
		for _, pr := range level {
			for _, o := range []string{pr.a, pr.b} {
				if o != "" {
					need = append(need, o)
				}
			}
		}
		trees, err := p.readTrees(ctx, need)
		if err != nil {
			return nil, err
		}
		var next []pair
		for _, pr := range level {
			ta, tb := trees[pr.a], trees[pr.b]
			na, nb := ta.len(), tb.len()
			i, j := 0, 0
			for i < na || j < nb {
				var c int
				switch {
				case i == na:
					c = 1
				case j == nb:
					c = -1
				default:
					c = compareTreeKeys(ta.at(i), tb.at(j))
				}
				switch {
				case c < 0:
					x := ta.at(i)
					if x.isTree() {
						next = append(next, pair{pr.prefix + x.name + "/", x.oid, ""})
					} else {
						out = append(out, change{path: pr.prefix + x.name, old: x, hasOld: true})
					}
					i++
				case c > 0:
					y := tb.at(j)
					if y.isTree() {
						next = append(next, pair{pr.prefix + y.name + "/", "", y.oid})
					} else {
						out = append(out, change{path: pr.prefix + y.name, new: y, hasNew: true})
					}
					j++
				default:
					x, y := ta.at(i), tb.at(j)
					switch {
					case x.isTree():
						if x.oid != y.oid {
							next = append(next, pair{pr.prefix + x.name + "/", x.oid, y.oid})
						}
					case x.oid != y.oid || x.mode != y.mode:
						out = append(out, change{path: pr.prefix + x.name, old: x, new: y, hasOld: true, hasNew: true})
					}
					i++
					j++
				}
			}
		}
		level = next
	}
	return out, nil
}

// hexAll returns raw object ids in hex.
func hexAll(raw []string) []string {
	out := make([]string, len(raw))
	for i, r := range raw {
		out[i] = hex.EncodeToString([]byte(r))
	}
	return out
}

// compareTreeKeys orders tree entries as git does: a tree sorts as if its
// name ended in "/". It allocates nothing.
func compareTreeKeys(a, b treeEntry) int {
	n := min(len(a.name), len(b.name))
	if c := strings.Compare(a.name[:n], b.name[:n]); c != 0 {
		return c
	}
	next := func(e treeEntry) int { // the byte after the common prefix; -1 for none
		switch {
		case len(e.name) > n:
			return int(e.name[n])
		case e.isTree():
			return '/'
		}
		return -1
	}
	ca, cb := next(a), next(b)
	switch {
	case ca < cb:
		return -1
	case ca > cb:
		return 1
	}
	if len(a.name) == len(b.name) || ca == -1 {
		return 0
	}
	// One name continues with a "/" where the other, a tree, has its own
	// (names never hold one; malformed data may): compare the whole keys.
	ka, kb := a.name, b.name
	if a.isTree() {
		ka += "/"
	}
	if b.isTree() {
		kb += "/"
	}
	return strings.Compare(ka, kb)
}
