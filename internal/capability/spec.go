package capability

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

// Spec is a set of caveats in the form a person writes them (the flags of
// apiary cap mint and attenuate). A field counts only when its Set bit
// says it was given (Paths: when it is not empty), so a zero value asks
// for nothing.
type Spec struct {
	Tools        string   // comma-separated tool names; given and empty: no tools
	Paths        []string // write-scope path prefixes
	Network      string   // none, any, or comma-separated hosts
	Expires      string   // a duration from now (1h) or an RFC 3339 time
	BudgetUSD    string   // dollars
	BudgetTokens int64
	Depth        int
	Fence        uint64
	Set          SpecSet
}

// SpecSet says which fields of a Spec were given.
type SpecSet struct {
	Tools, Network, Expires, BudgetUSD, BudgetTokens, Depth, Fence bool
}

// SpecError is a value of a Spec (or of ParseUSD's field) that does not
// parse; Field is the field's name in lower-case-dashed form
// (budget-usd), which is also the flag's.
type SpecError struct {
	Field, Problem string
}

func (e *SpecError) Error() string { return e.Field + " " + e.Problem }

// Caveats are the caveats s asks for, in a fixed order: tools, paths,
// network, expiry (relative to now), budget, depth, fence.
func (s Spec) Caveats(now time.Time) ([]Caveat, error) {
	var out []Caveat
	if s.Set.Tools {
		out = append(out, Tools(splitList(s.Tools)...))
	}
	if len(s.Paths) > 0 {
		out = append(out, PathPrefixes(s.Paths...))
	}
	if s.Set.Network {
		switch hosts := splitList(s.Network); {
		case s.Network == "none":
			out = append(out, NoNetwork())
		case s.Network == "any":
			out = append(out, AnyNetwork())
		case len(hosts) == 0:
			return nil, &SpecError{"network", "wants none, any or a list of hosts"}
		default:
			out = append(out, Hosts(hosts...))
		}
	}
	if s.Set.Expires {
		t, err := ParseWhen(s.Expires, now)
		if err != nil {
			return nil, err
		}
		out = append(out, ExpiresAt(t))
	}
	if s.Set.BudgetUSD || s.Set.BudgetTokens {
		tokens, usd := int64(-1), int64(-1)
		if s.Set.BudgetTokens {
			if s.BudgetTokens < 0 {
				return nil, &SpecError{"budget-tokens", "must be >= 0"}
			}
			tokens = s.BudgetTokens
		}
		if s.Set.BudgetUSD {
			v, err := ParseUSD("budget-usd", s.BudgetUSD)
			if err != nil {
				return nil, err
			}
			usd = v
		}
		out = append(out, Budget(tokens, usd))
	}
	if s.Set.Depth {
		if s.Depth < 0 {
			return nil, &SpecError{"depth", "must be >= 0"}
		}
		out = append(out, MaxDepth(s.Depth))
	}
	if s.Set.Fence {
		out = append(out, Fence(s.Fence))
	}
	return out, nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// ParseWhen reads an expiry: a duration from now or an RFC 3339 time.
func ParseWhen(s string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(s); err == nil {
		return now.Add(d), nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	return time.Time{}, &SpecError{"expires", fmt.Sprintf("wants a duration (90m) or an RFC 3339 time, got %q", s)}
}

// ParseUSD reads a non-negative amount of dollars (at most 10^12) into
// micro-USD; a bad amount is a SpecError for field.
func ParseUSD(field, s string) (int64, error) {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || !(v >= 0) || v > 1e12 {
		return 0, &SpecError{field, fmt.Sprintf("wants a non-negative amount of dollars, got %q", s)}
	}
	return int64(math.Round(v * 1e6)), nil
}

// ReadToken decodes the one token r holds (surrounding white space
// ignored), reading at most a little more than the longest token.
func ReadToken(r io.Reader) (*Token, error) {
	b, err := io.ReadAll(io.LimitReader(r, MaxEncodedLen+2))
	if err != nil {
		return nil, err
	}
	return Decode(strings.TrimSpace(string(b)))
}
