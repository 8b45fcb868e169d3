package capability

import (
	"encoding/binary"
	"strings"
	"sync"
)

// Node names one node of a lineage tree: a root and a path below it. Two
// nodes are equal exactly when their roots and segments are. Build one with
// NodeOf; the zero Node names nothing.
type Node string

// NodeOf returns the node for root and the lineage path below it.
func NodeOf(root string, path ...string) Node { return nodeOf(root, path) }

func nodeOf(root string, path []string) Node {
	var b strings.Builder
	b.Write(binary.AppendUvarint(nil, uint64(len(root))))
	b.WriteString(root)
	n := Node(b.String())
	for _, s := range path {
		n = n.child(s)
	}
	return n
}

// child returns the node for segment below n. Segments are length-prefixed,
// so no choice of segment strings makes two different paths collide.
func (n Node) child(segment string) Node {
	var b strings.Builder
	b.Grow(len(n) + binary.MaxVarintLen64 + len(segment))
	b.WriteString(string(n))
	b.Write(binary.AppendUvarint(nil, uint64(len(segment))))
	b.WriteString(segment)
	return Node(b.String())
}

// Revoker is the epoch store Verify consults. MinEpoch returns the lowest
// issue epoch that tokens issued under node (the node itself or any
// descendant) still have to carry; 0 if the node was never revoked. It is
// called once per lineage node on every Verify and must be safe for
// concurrent use and cheap.
type Revoker interface {
	MinEpoch(node Node) uint64
}

// Epochs is an in-memory Revoker with one epoch clock per root. Mint tokens
// with the epoch from Current; Revoke moves the root's clock forward and
// makes the node reject every token issued before. The zero value is not
// usable: call NewEpochs. Safe for concurrent use.
type Epochs struct {
	mu    sync.RWMutex
	clock map[string]uint64 // root -> current epoch
	min   map[Node]uint64   // node -> lowest accepted epoch
}

var _ Revoker = (*Epochs)(nil)

// NewEpochs returns an empty store: every clock at 0, nothing revoked.
func NewEpochs() *Epochs {
	return &Epochs{clock: map[string]uint64{}, min: map[Node]uint64{}}
}

// Current returns the epoch to put in the ID of a token minted now under
// root.
func (e *Epochs) Current(root string) uint64 {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.clock[root]
}

// Revoke rejects every token issued so far under the node (root, path...):
// its own tokens and all tokens derived below it. Tokens minted afterwards
// with the new Current epoch are valid again. It returns the new epoch.
// Lineage segments must not be reused for a different task after revocation
// unless its tokens are minted anew. O(1).
func (e *Epochs) Revoke(root string, path ...string) uint64 {
	n := nodeOf(root, path)
	e.mu.Lock()
	defer e.mu.Unlock()
	e.clock[root]++
	e.min[n] = e.clock[root]
	return e.clock[root]
}

// MinEpoch implements Revoker.
func (e *Epochs) MinEpoch(n Node) uint64 {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.min[n]
}
