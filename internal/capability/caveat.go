package capability

import (
	"encoding/binary"
	"fmt"
	"math"
	"path"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Kind is the type of a caveat; it is the first byte of its encoding.
type Kind uint8

// Caveat kinds. Values are part of the wire format: never renumber.
const (
	KindTools   Kind = 1 // allowed tool names
	KindPaths   Kind = 2 // write-scope path prefixes
	KindNetwork Kind = 3 // none, a list of hosts, or any
	KindExpiry  Kind = 4 // not valid at or after a time
	KindBudget  Kind = 5 // token and/or micro-USD spend limits
	KindDepth   Kind = 6 // maximum further spawn depth
	KindLineage Kind = 7 // extends the lineage path by one segment
	KindFence   Kind = 8 // lease fencing token
)

var kindNames = [...]string{
	KindTools: "tools", KindPaths: "paths", KindNetwork: "network", KindExpiry: "expiry",
	KindBudget: "budget", KindDepth: "depth", KindLineage: "lineage", KindFence: "fence",
}

func (k Kind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Network is the mode of a network caveat.
type Network uint8

// Network modes. Values are part of the wire format.
const (
	NetNone  Network = 0 // no network access
	NetHosts Network = 1 // only the listed hosts
	NetAny   Network = 2 // any host
)

const (
	budgetTokens   = 1 << 0
	budgetMicroUSD = 1 << 1
)

// Caveat is one typed restriction in a token's chain. Build caveats with the
// constructors (Tools, PathPrefixes, NoNetwork, ...), which normalise their
// input; the value is immutable and safe to share. The zero Caveat carries no
// restriction and is ignored by Mint and Attenuate.
type Caveat struct {
	kind  Kind
	strs  []string // tools, path prefixes, hosts, or the lineage segment
	net   Network
	num   uint64 // depth, fence, tokens
	num2  uint64 // micro-USD
	flags uint8  // budget units present
	unix  int64  // expiry, Unix seconds
	raw   []byte // canonical encoding: what the chain signs
}

// Kind returns the caveat's type; 0 for the zero Caveat.
func (c Caveat) Kind() Kind { return c.kind }

// Tools admits a request only if it names one of the given tools (a request
// that names no tool is not a tool call and passes). Names are sorted and
// deduplicated; an empty list admits no tool call.
func Tools(names ...string) Caveat {
	return encodeStrs(KindTools, sortedUnique(names, func(s string) string { return s }))
}

// PathPrefixes admits a request only if every path it writes lies under one
// of the prefixes, component by component: "/ws" admits "/ws" and "/ws/a"
// but not "/ws_evil". Prefixes are cleaned with path.Clean. Request paths
// must be clean (no "..", no "//", no trailing "/"), or they are rejected.
func PathPrefixes(prefixes ...string) Caveat {
	return encodeStrs(KindPaths, sortedUnique(prefixes, cleanNonEmpty))
}

// NoNetwork admits only requests that name no host.
func NoNetwork() Caveat { return encodeNet(NetNone, nil) }

// AnyNetwork admits every host. It never widens an earlier network caveat,
// which is still evaluated.
func AnyNetwork() Caveat { return encodeNet(NetAny, nil) }

// Hosts admits requests to the listed hosts only, compared case-insensitively;
// an entry without a port matches the host on any port.
func Hosts(hosts ...string) Caveat {
	return encodeNet(NetHosts, sortedUnique(hosts, strings.ToLower))
}

// ExpiresAt admits requests strictly before t, truncated to the second.
func ExpiresAt(t time.Time) Caveat {
	c := Caveat{kind: KindExpiry, unix: t.Unix()}
	c.raw = binary.AppendVarint([]byte{byte(KindExpiry)}, c.unix)
	return c
}

// Budget limits the holder's cumulative spend: tokens and micro-USD. A
// negative value leaves that unit unlimited; if both are negative the caveat
// is the zero Caveat.
func Budget(tokens, microUSD int64) Caveat {
	c := Caveat{kind: KindBudget}
	if tokens >= 0 {
		c.flags |= budgetTokens
		c.num = uint64(tokens)
	}
	if microUSD >= 0 {
		c.flags |= budgetMicroUSD
		c.num2 = uint64(microUSD)
	}
	if c.flags == 0 {
		return Caveat{}
	}
	c.raw = c.appendBudget(nil)
	return c
}

func (c Caveat) appendBudget(b []byte) []byte {
	b = append(b, byte(KindBudget), c.flags)
	if c.flags&budgetTokens != 0 {
		b = binary.AppendUvarint(b, c.num)
	}
	if c.flags&budgetMicroUSD != 0 {
		b = binary.AppendUvarint(b, c.num2)
	}
	return b
}

// MaxDepth admits requests whose spawn depth is at most n (a negative n is
// treated as 0). Request.Depth is how many levels below the holder the
// request reaches: 0 for ordinary calls, 1 to spawn a direct child.
func MaxDepth(n int) Caveat {
	return encodeNum(KindDepth, uint64(max(n, 0)))
}

// Fence binds the token to a lease: it admits a request only if the
// verifier's current fencing token (Request.Fence) is at most fence, so a
// holder whose lease was superseded is rejected.
func Fence(fence uint64) Caveat { return encodeNum(KindFence, fence) }

// Lineage extends the token's lineage path by segment, so that revoking the
// node it names rejects this token and every token derived from it. An
// empty segment is stored as "_".
func Lineage(segment string) Caveat {
	if segment == "" {
		segment = "_"
	}
	return encodeStrs(KindLineage, []string{strings.ToValidUTF8(segment, "\uFFFD")})
}

func cleanNonEmpty(p string) string {
	if p == "" {
		return ""
	}
	return path.Clean(p)
}

func encodeNum(k Kind, n uint64) Caveat {
	c := Caveat{kind: k, num: n}
	c.raw = binary.AppendUvarint([]byte{byte(k)}, n)
	return c
}

func encodeNet(mode Network, hosts []string) Caveat {
	c := Caveat{kind: KindNetwork, net: mode, strs: hosts}
	c.raw = c.appendNet(nil)
	return c
}

func (c Caveat) appendNet(b []byte) []byte {
	b = append(b, byte(KindNetwork), byte(c.net))
	if c.net == NetHosts {
		b = appendStrList(b, c.strs)
	}
	return b
}

func encodeStrs(k Kind, strs []string) Caveat {
	c := Caveat{kind: k, strs: strs}
	if k == KindLineage {
		c.raw = appendStr([]byte{byte(k)}, strs[0])
	} else {
		c.raw = appendStrList([]byte{byte(k)}, strs)
	}
	return c
}

// sortedUnique normalises, sorts and deduplicates strs. Empty results of
// norm are dropped; invalid UTF-8 is replaced by U+FFFD first.
func sortedUnique(strs []string, norm func(string) string) []string {
	out := make([]string, 0, len(strs))
	for _, s := range strs {
		s = norm(strings.ToValidUTF8(s, "\uFFFD"))
		if s != "" {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func appendStr(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendStrList(b []byte, strs []string) []byte {
	b = binary.AppendUvarint(b, uint64(len(strs)))
	for _, s := range strs {
		b = appendStr(b, s)
	}
	return b
}

// parseCaveat decodes one caveat's canonical encoding. The caller checks
// canonicality by re-encoding.
func parseCaveat(raw []byte) (Caveat, error) {
	if len(raw) == 0 {
		return Caveat{}, malformed("empty caveat")
	}
	r := reader{b: raw[1:]}
	c := Caveat{kind: Kind(raw[0])}
	switch c.kind {
	case KindTools, KindPaths:
		c.strs = r.strList()
		for _, s := range c.strs {
			if c.kind == KindPaths && path.Clean(s) != s {
				r.fail("path prefix is not clean")
			}
		}
	case KindNetwork:
		c.net = Network(r.byte())
		switch c.net {
		case NetNone, NetAny:
		case NetHosts:
			c.strs = r.strList()
		default:
			r.fail("unknown network mode")
		}
	case KindExpiry:
		c.unix = r.varint()
	case KindBudget:
		c.flags = r.byte()
		if c.flags == 0 || c.flags&^(budgetTokens|budgetMicroUSD) != 0 {
			r.fail("bad budget units")
		}
		if c.flags&budgetTokens != 0 {
			c.num = r.uvarint()
		}
		if c.flags&budgetMicroUSD != 0 {
			c.num2 = r.uvarint()
		}
		if c.num > math.MaxInt64 || c.num2 > math.MaxInt64 {
			r.fail("budget out of range")
		}
	case KindDepth, KindFence:
		c.num = r.uvarint()
		if c.kind == KindDepth && c.num > math.MaxInt32 {
			r.fail("depth out of range")
		}
	case KindLineage:
		c.strs = []string{r.str()}
	default:
		return Caveat{}, malformed(fmt.Sprintf("unknown caveat kind %d", raw[0]))
	}
	if r.err == nil && len(r.b) != 0 {
		r.fail("trailing bytes in caveat")
	}
	if r.err != nil {
		return Caveat{}, r.err
	}
	c.raw = raw
	return c, nil
}

// check evaluates the caveat against req. It allocates only when it rejects.
func (c *Caveat) check(req *Request) (reason string, ok bool) {
	switch c.kind {
	case KindTools:
		if req.Tool == "" || slices.Contains(c.strs, req.Tool) {
			return "", true
		}
		return fmt.Sprintf("tool %q not allowed", req.Tool), false
	case KindPaths:
		for _, p := range req.Paths {
			if path.Clean(p) != p {
				return fmt.Sprintf("path %q is not clean", p), false
			}
			if !underAny(p, c.strs) {
				return fmt.Sprintf("path %q outside the write scope", p), false
			}
		}
		return "", true
	case KindNetwork:
		if req.Host == "" || c.net == NetAny {
			return "", true
		}
		if c.net == NetHosts && hostAllowed(req.Host, c.strs) {
			return "", true
		}
		return fmt.Sprintf("host %q not allowed", req.Host), false
	case KindExpiry:
		if req.Now.IsZero() {
			return "request carries no time", false
		}
		if req.Now.Before(time.Unix(c.unix, 0)) {
			return "", true
		}
		return "now is " + req.Now.UTC().Format(time.RFC3339), false
	case KindBudget:
		if c.flags&budgetTokens != 0 && req.Spend.Tokens > int64(c.num) {
			return fmt.Sprintf("spend of %d tokens exceeds %d", req.Spend.Tokens, c.num), false
		}
		if c.flags&budgetMicroUSD != 0 && req.Spend.MicroUSD > int64(c.num2) {
			return fmt.Sprintf("spend of %s exceeds %s", formatUSD(req.Spend.MicroUSD), formatUSD(int64(c.num2))), false
		}
		return "", true
	case KindDepth:
		if req.Depth <= int(c.num) {
			return "", true
		}
		return fmt.Sprintf("spawn depth %d exceeds %d", req.Depth, c.num), false
	case KindFence:
		if req.Fence <= c.num {
			return "", true
		}
		return fmt.Sprintf("stale fencing token: lease is at %d", req.Fence), false
	case KindLineage:
		return "", true // enforced through the Revoker
	}
	return "unknown caveat", false
}

// under reports whether p equals prefix or lies below it, component-wise.
// Both are clean paths.
func under(p, prefix string) bool {
	switch prefix {
	case "/":
		return strings.HasPrefix(p, "/")
	case ".":
		return !strings.HasPrefix(p, "/") && p != ".." && !strings.HasPrefix(p, "../")
	}
	return p == prefix || (len(p) > len(prefix) && p[len(prefix)] == '/' && p[:len(prefix)] == prefix)
}

func underAny(p string, prefixes []string) bool {
	for _, pre := range prefixes {
		if under(p, pre) {
			return true
		}
	}
	return false
}

// hostAllowed matches host against allowed entries case-insensitively; an
// entry without a port also matches host with any port.
func hostAllowed(host string, allowed []string) bool {
	bare := stripPort(host)
	for _, a := range allowed {
		if strings.EqualFold(a, host) || (bare != host && strings.EqualFold(a, bare) && stripPort(a) == a) {
			return true
		}
	}
	return false
}

// stripPort removes a trailing ":digits" from "host:port" or "[v6]:port".
func stripPort(h string) string {
	i := strings.LastIndexByte(h, ':')
	if i < 0 || i == len(h)-1 {
		return h
	}
	for _, ch := range h[i+1:] {
		if ch < '0' || ch > '9' {
			return h
		}
	}
	if strings.HasPrefix(h, "[") {
		if h[i-1] != ']' {
			return h
		}
		return h[1 : i-1]
	}
	if strings.Count(h, ":") > 1 {
		return h // a bare IPv6 address
	}
	return h[:i]
}

// String renders the caveat for people, e.g. "tools [read write]".
func (c Caveat) String() string {
	switch c.kind {
	case 0:
		return "none"
	case KindTools, KindPaths:
		return fmt.Sprintf("%s %v", c.kind, c.strs)
	case KindNetwork:
		switch c.net {
		case NetNone:
			return "network none"
		case NetAny:
			return "network any"
		}
		return fmt.Sprintf("network %v", c.strs)
	case KindExpiry:
		return "expires " + time.Unix(c.unix, 0).UTC().Format(time.RFC3339)
	case KindBudget:
		var parts []string
		if c.flags&budgetTokens != 0 {
			parts = append(parts, fmt.Sprintf("%d tokens", c.num))
		}
		if c.flags&budgetMicroUSD != 0 {
			parts = append(parts, formatUSD(int64(c.num2)))
		}
		return "budget " + strings.Join(parts, ", ")
	case KindDepth:
		return fmt.Sprintf("depth <= %d", c.num)
	case KindLineage:
		return "lineage +" + c.strs[0]
	case KindFence:
		return fmt.Sprintf("fence %d", c.num)
	}
	return c.kind.String()
}

// formatUSD renders micro-USD as dollars with six decimals trimmed.
func formatUSD(micro int64) string {
	neg := micro < 0
	if neg {
		micro = -micro
	}
	s := fmt.Sprintf("%d.%06d", micro/1_000_000, micro%1_000_000)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	if neg {
		s = "-" + s
	}
	return "$" + s
}

// reader decodes the binary form; the first error sticks and later reads
// return zero values.
type reader struct {
	b   []byte
	err error
}

func (r *reader) fail(msg string) {
	if r.err == nil {
		r.err = malformed(msg)
		r.b = nil
	}
}

func (r *reader) byte() byte {
	if len(r.b) == 0 {
		r.fail("truncated")
		return 0
	}
	v := r.b[0]
	r.b = r.b[1:]
	return v
}

func (r *reader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail("bad varint")
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) varint() int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.fail("bad varint")
		return 0
	}
	r.b = r.b[n:]
	return v
}

// count reads a list length; each element takes at least one byte, so a
// length beyond the remaining input is malformed (and never allocated).
func (r *reader) count() int {
	n := r.uvarint()
	if n > uint64(len(r.b)) {
		r.fail("list longer than input")
		return 0
	}
	return int(n)
}

func (r *reader) str() string {
	n := r.uvarint()
	if n > uint64(len(r.b)) {
		r.fail("string longer than input")
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	if s == "" || !utf8.ValidString(s) {
		r.fail("empty or invalid UTF-8 string")
	}
	return s
}

func (r *reader) strList() []string {
	n := r.count()
	out := make([]string, 0, n)
	for range n {
		out = append(out, r.str())
		if r.err != nil {
			return nil
		}
	}
	return out
}
