package capability

import (
	"encoding/hex"
	"fmt"
	"strings"
	"time"
)

// Description is a token's content for people and tools; Inspect builds it
// without the key, so nothing in it is verified.
type Description struct {
	Root      string        `json:"root"`
	Path      []string      `json:"path"`
	Epoch     uint64        `json:"epoch"`
	Lineage   []string      `json:"lineage"`
	Caveats   []CaveatFacts `json:"caveats"`
	Signature string        `json:"signature"` // first 8 bytes, hex
}

// CaveatFacts is one caveat in a Description; only the fields of its kind
// are set.
type CaveatFacts struct {
	Kind     string     `json:"kind"`
	Text     string     `json:"text"`
	Tools    []string   `json:"tools,omitempty"`
	Paths    []string   `json:"paths,omitempty"`
	Network  string     `json:"network,omitempty"` // none | hosts | any
	Hosts    []string   `json:"hosts,omitempty"`
	Expires  *time.Time `json:"expires,omitempty"`
	Tokens   *int64     `json:"tokens,omitempty"`
	MicroUSD *int64     `json:"micro_usd,omitempty"`
	Depth    *int       `json:"depth,omitempty"`
	Segment  string     `json:"segment,omitempty"`
	Fence    *uint64    `json:"fence,omitempty"`
}

// Inspect describes t: identifier, full lineage and every caveat.
func Inspect(t *Token) Description {
	d := Description{
		Root:      t.id.Root,
		Path:      append([]string{}, t.id.Path...),
		Epoch:     t.id.Epoch,
		Lineage:   t.Lineage(),
		Caveats:   []CaveatFacts{},
		Signature: hex.EncodeToString(t.sig[:8]),
	}
	for _, c := range t.caveats {
		d.Caveats = append(d.Caveats, c.facts())
	}
	return d
}

func (c Caveat) facts() CaveatFacts {
	f := CaveatFacts{Kind: c.kind.String(), Text: c.String()}
	switch c.kind {
	case KindTools:
		f.Tools = append([]string{}, c.strs...)
	case KindPaths:
		f.Paths = append([]string{}, c.strs...)
	case KindNetwork:
		f.Network = [...]string{NetNone: "none", NetHosts: "hosts", NetAny: "any"}[c.net]
		f.Hosts = append([]string(nil), c.strs...)
	case KindExpiry:
		t := time.Unix(c.unix, 0).UTC()
		f.Expires = &t
	case KindBudget:
		if c.flags&budgetTokens != 0 {
			v := int64(c.num)
			f.Tokens = &v
		}
		if c.flags&budgetMicroUSD != 0 {
			v := int64(c.num2)
			f.MicroUSD = &v
		}
	case KindDepth:
		v := int(c.num)
		f.Depth = &v
	case KindLineage:
		f.Segment = c.strs[0]
	case KindFence:
		v := c.num
		f.Fence = &v
	}
	return f
}

// String renders the description as indented text, one caveat per line.
func (d Description) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "root:      %s\n", d.Root)
	fmt.Fprintf(&b, "lineage:   %s\n", strings.Join(d.Lineage, "/"))
	fmt.Fprintf(&b, "epoch:     %d\n", d.Epoch)
	fmt.Fprintf(&b, "signature: %s…\n", d.Signature)
	if len(d.Caveats) == 0 {
		b.WriteString("caveats:   none (unrestricted)\n")
		return b.String()
	}
	b.WriteString("caveats:\n")
	for i, c := range d.Caveats {
		fmt.Fprintf(&b, "  %d. %s\n", i, c.Text)
	}
	return b.String()
}
