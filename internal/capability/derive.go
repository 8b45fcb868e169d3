package capability

import (
	"fmt"
	"time"
)

// Limits is what a parent grants a child task in Derive. Zero fields
// inherit the parent's restriction unchanged (the parent's caveats stay in
// the child's chain whatever Limits says).
type Limits struct {
	Tools       []string  // nil inherits; otherwise a subset of the parent's tools
	Paths       []string  // nil inherits; otherwise each under a parent prefix
	Hosts       []string  // nil inherits; empty non-nil means no network
	Expiry      time.Time // zero inherits; otherwise no later than the parent's
	MaxTokens   int64     // > 0 caps the child's token spend; 0 inherits
	MaxMicroUSD int64     // > 0 caps the child's spend in micro-USD; 0 inherits
	MaxDepth    int       // > 0 caps the child's spawn depth below depth-1; 0 inherits
}

// Derive returns the token for a child task named segment: t attenuated with
// a Lineage caveat for segment (so revoking the child's node, or any
// ancestor's, rejects it), the narrowed tools, paths, network, expiry and
// budget from l, and a depth one less than t's. It needs no key.
//
// Attenuation alone already guarantees the child can never do more than t;
// Derive also refuses, with ErrWiden, a Limits that asks for more than t
// allows (a tool, path, host, later expiry or larger budget t would reject),
// and with ErrDepth a t whose depth caveat is 0, so the caller learns of the
// mistake instead of minting a child that fails later.
func (t *Token) Derive(segment string, l Limits) (*Token, error) {
	depth, hasDepth := -1, false
	for _, c := range t.caveats {
		if c.kind == KindDepth && (!hasDepth || int(c.num) < depth) {
			depth, hasDepth = int(c.num), true
		}
	}
	if hasDepth && depth == 0 {
		return nil, ErrDepth
	}
	var add []Caveat
	add = append(add, Lineage(segment))
	if l.Tools != nil {
		for _, tool := range l.Tools {
			if err := t.admits(Request{Tool: tool}, "tool %q", tool); err != nil {
				return nil, err
			}
		}
		add = append(add, Tools(l.Tools...))
	}
	if l.Paths != nil {
		c := PathPrefixes(l.Paths...)
		for _, p := range c.strs {
			if err := t.admits(Request{Paths: []string{p}}, "path %q", p); err != nil {
				return nil, err
			}
		}
		add = append(add, c)
	}
	if l.Hosts != nil {
		if len(l.Hosts) == 0 {
			add = append(add, NoNetwork())
		} else {
			for _, h := range l.Hosts {
				if err := t.admits(Request{Host: h}, "host %q", h); err != nil {
					return nil, err
				}
			}
			add = append(add, Hosts(l.Hosts...))
		}
	}
	if !l.Expiry.IsZero() {
		for _, c := range t.caveats {
			if c.kind == KindExpiry && l.Expiry.Unix() > c.unix {
				return nil, detailf(ErrWiden, "expiry %s is after the parent's %s",
					l.Expiry.UTC().Format(time.RFC3339), time.Unix(c.unix, 0).UTC().Format(time.RFC3339))
			}
		}
		add = append(add, ExpiresAt(l.Expiry))
	}
	if l.MaxTokens > 0 || l.MaxMicroUSD > 0 {
		spend := Spend{Tokens: max(l.MaxTokens, 0), MicroUSD: max(l.MaxMicroUSD, 0)}
		if err := t.admits(Request{Spend: spend}, "budget %s", budgetText(spend)); err != nil {
			return nil, err
		}
		tokens, usd := int64(-1), int64(-1)
		if l.MaxTokens > 0 {
			tokens = l.MaxTokens
		}
		if l.MaxMicroUSD > 0 {
			usd = l.MaxMicroUSD
		}
		add = append(add, Budget(tokens, usd))
	}
	switch {
	case hasDepth && l.MaxDepth > 0:
		add = append(add, MaxDepth(min(depth-1, l.MaxDepth)))
	case hasDepth:
		add = append(add, MaxDepth(depth-1))
	case l.MaxDepth > 0:
		add = append(add, MaxDepth(l.MaxDepth))
	}
	return t.Attenuate(add...), nil
}

// admits evaluates t's caveats of the kinds the probe request exercises;
// time-, depth- and fence-based caveats are skipped (they are not about what
// a child may be granted).
func (t *Token) admits(probe Request, what string, args ...any) error {
	for i := range t.caveats {
		c := &t.caveats[i]
		switch c.kind {
		case KindExpiry, KindDepth, KindFence, KindLineage:
			continue
		}
		if reason, ok := c.check(&probe); !ok {
			return detailf(ErrWiden, "%s: parent caveat %d (%s): %s", fmt.Sprintf(what, args...), i, c, reason)
		}
	}
	return nil
}

func budgetText(s Spend) string {
	switch {
	case s.Tokens > 0 && s.MicroUSD > 0:
		return fmt.Sprintf("%d tokens, %s", s.Tokens, formatUSD(s.MicroUSD))
	case s.Tokens > 0:
		return fmt.Sprintf("%d tokens", s.Tokens)
	}
	return formatUSD(s.MicroUSD)
}
