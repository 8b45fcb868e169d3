package llmfake

import (
	"math"
	"strings"
	"sync/atomic"
)

// stopReason is why a reply ended, in provider-neutral form.
type stopReason int

const (
	stopEnd stopReason = iota
	stopTool
	stopMax
)

// reply is a generated answer in provider-neutral form.
type reply struct {
	id    string
	text  string
	calls []toolCall
	stop  stopReason
	in    int
	out   int

	script string // for logs: the script and turn that answered, if any
	turn   int
}

type toolCall struct {
	id        string
	name      string
	namespace string // Responses API: the namespace the function belongs to
	args      []byte // JSON object; for a custom call, {"input": …}
	custom    bool   // a freeform tool call; input holds its text
	input     string
}

// idGen makes unique, seed-reproducible ids like the providers' own.
type idGen struct {
	seq  atomic.Uint64
	salt uint64
}

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// next returns prefix followed by 24 base62 characters.
func (g *idGen) next(prefix string) string { return g.nextN(prefix, 24) }

func (g *idGen) nextN(prefix string, n int) string {
	x := splitmix(g.seq.Add(1) ^ g.salt)
	b := make([]byte, 0, len(prefix)+n)
	b = append(b, prefix...)
	for i := range n {
		if i%10 == 0 {
			x = splitmix(x)
		}
		b = append(b, base62[x%62])
		x /= 62
	}
	return string(b)
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// fillerWords are four bytes each with the space, so n words are n tokens
// under tokensOf.
const fillerWords = "the fox ran far and saw one big red sun set low sky was not dim"

// wordCache is the default text for up to len/4 tokens, shared read-only.
type wordCache string

func newWordCache(tokens int) wordCache {
	var b strings.Builder
	b.Grow(tokens * 4)
	words := strings.Fields(fillerWords)
	for i := range tokens {
		b.WriteString(words[(i*7+i/len(words))%len(words)])
		b.WriteByte(' ')
	}
	return wordCache(b.String())
}

// text returns n tokens of deterministic filler ending in a period.
func (w wordCache) text(n int) string {
	if n <= 0 {
		return ""
	}
	if 4*n <= len(w) {
		return string(w[:4*n-1]) + "."
	}
	var b strings.Builder
	for b.Len() < 4*n {
		b.WriteString(string(w))
	}
	return b.String()[:4*n-1] + "."
}

// outputTokens turns a standard normal sample into an output length
// ~ N(mean, std) clamped to [1, maxTokens] (maxTokens 0: no upper bound);
// capped reports that max_tokens cut the reply.
func outputTokens(o *Output, z float64, maxTokens int) (n int, capped bool) {
	mean := o.TokensMean
	if mean == 0 {
		mean = defaultTokensMean
	}
	v := math.Round(mean + o.TokensStd*z)
	if v < 1 || math.IsNaN(v) {
		v = 1
	}
	if v > 1<<24 {
		v = 1 << 24
	}
	n = int(v)
	if maxTokens > 0 && n > maxTokens {
		return maxTokens, true
	}
	return n, false
}

// scriptedOut is the output token count of a scripted reply: the text and
// the tool calls as returned, at least 1.
func scriptedOut(text string, calls []toolCall) int {
	n := tokensOf(len(text))
	for _, c := range calls {
		n += tokensOf(len(c.name) + len(c.args))
	}
	return max(n, 1)
}

// chunks splits s into pieces of about size bytes, at rune boundaries; at
// least min(pieces, len) pieces when pieces > 0.
func chunks(s string, size int) []string {
	if s == "" {
		return nil
	}
	size = max(size, 1)
	out := make([]string, 0, len(s)/size+1)
	for len(s) > 0 {
		n := min(size, len(s))
		for n < len(s) && !runeStart(s[n]) {
			n++
		}
		out = append(out, s[:n])
		s = s[n:]
	}
	return out
}

func runeStart(b byte) bool { return b&0xC0 != 0x80 }

// jsonPieces splits tool arguments into several partial_json fragments, as
// the providers stream them.
func jsonPieces(args []byte) []string {
	s := string(args)
	return chunks(s, max((len(s)+3)/4, 1))
}
