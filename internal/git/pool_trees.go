package git

import (
	"context"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// treeCache keeps parsed tree objects by id (trees never change); it is
// cleared when full.
type treeCache struct {
	mu  sync.Mutex
	max int
	m   map[string][]treeEntry
}

func (c *treeCache) init(max int) { c.max, c.m = max, map[string][]treeEntry{} }

func (c *treeCache) get(oid string) ([]treeEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.m[oid]
	return t, ok
}

func (c *treeCache) put(oid string, t []treeEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= c.max {
		clear(c.m)
	}
	c.m[oid] = t
}

// readTrees returns the trees with the given (raw) ids, from the cache or
// in one request.
func (p *WorktreePool) readTrees(ctx context.Context, oids []string) (map[string][]treeEntry, error) {
	out := make(map[string][]treeEntry, len(oids))
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
		t, err := parseTree(ob.data, p.hashLen)
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
			ea, eb := trees[pr.a], trees[pr.b]
			i, j := 0, 0
			for i < len(ea) || j < len(eb) {
				var c int
				switch {
				case i == len(ea):
					c = 1
				case j == len(eb):
					c = -1
				default:
					c = strings.Compare(treeKey(ea[i]), treeKey(eb[j]))
				}
				switch {
				case c < 0:
					x := ea[i]
					if x.isTree() {
						next = append(next, pair{pr.prefix + x.name + "/", x.oid, ""})
					} else {
						out = append(out, change{path: pr.prefix + x.name, old: x, hasOld: true})
					}
					i++
				case c > 0:
					y := eb[j]
					if y.isTree() {
						next = append(next, pair{pr.prefix + y.name + "/", "", y.oid})
					} else {
						out = append(out, change{path: pr.prefix + y.name, new: y, hasNew: true})
					}
					j++
				default:
					x, y := ea[i], eb[j]
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

// treeKey orders tree entries as git does: a tree sorts as if its name
// ended in "/".
func treeKey(e treeEntry) string {
	if e.isTree() {
		return e.name + "/"
	}
	return e.name
}
