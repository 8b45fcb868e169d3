package llmapi

import (
	"math"
	"math/bits"
	"sort"
	"strconv"
	"strings"
)

// MicroUSD is an amount of money in millionths of a US dollar. Costs and
// budgets are integers so that sums never drift.
type MicroUSD int64

// USD converts dollars to MicroUSD, rounding to the nearest micro-dollar.
func USD(dollars float64) MicroUSD {
	return MicroUSD(saturate(math.Round(dollars * 1e6)))
}

// String formats m as dollars with six decimals: "$0.001234", "-$1.500000".
func (m MicroUSD) String() string {
	sign := ""
	u := uint64(m)
	if m < 0 {
		sign, u = "-", uint64(-m) // -MinInt64 wraps to itself, which is right as uint64
	}
	frac := strconv.FormatUint(u%1e6, 10)
	return sign + "$" + strconv.FormatUint(u/1e6, 10) + "." + strings.Repeat("0", 6-len(frac)) + frac
}

// Price is what a model costs per million tokens of each class, in
// MicroUSD (so $3 per million tokens is 3_000_000). A zero cache price means
// the usual multiple of Input: CacheWrite5m 1.25×, CacheWrite1h 2×,
// CacheRead 0.1×.
type Price struct {
	Input        MicroUSD
	Output       MicroUSD
	CacheWrite5m MicroUSD
	CacheWrite1h MicroUSD
	CacheRead    MicroUSD
}

// resolved fills in the derived cache prices.
func (p Price) resolved() Price {
	if p.CacheWrite5m == 0 {
		p.CacheWrite5m = p.Input * 5 / 4
	}
	if p.CacheWrite1h == 0 {
		p.CacheWrite1h = p.Input * 2
	}
	if p.CacheRead == 0 {
		p.CacheRead = p.Input / 10
	}
	return p
}

// Cost prices u: uncached input, output, cache writes (the 1-hour part of
// CacheCreationInputTokens at CacheWrite1h, the rest at CacheWrite5m) and
// cache reads, rounded once to the nearest micro-dollar. Negative counts
// count as 0; a result beyond the int64 range saturates.
func (p Price) Cost(u Usage) MicroUSD {
	p = p.resolved()
	w1h := max(u.CacheCreation1h, 0)
	w5m := max(u.CacheCreationInputTokens-w1h, 0)
	var hi, lo uint64
	overflow := false
	add := func(tokens int64, rate MicroUSD) {
		if tokens <= 0 || rate <= 0 {
			return
		}
		h, l := bits.Mul64(uint64(tokens), uint64(rate))
		var c uint64
		lo, c = bits.Add64(lo, l, 0)
		hi, c = bits.Add64(hi, h, c)
		overflow = overflow || c != 0
	}
	add(u.InputTokens, p.Input)
	add(u.OutputTokens, p.Output)
	add(w5m, p.CacheWrite5m)
	add(w1h, p.CacheWrite1h)
	add(u.CacheReadInputTokens, p.CacheRead)
	var c uint64
	lo, c = bits.Add64(lo, 500_000, 0) // round half up
	hi += c
	if overflow || hi >= 1e6 {
		return math.MaxInt64
	}
	q, _ := bits.Div64(hi, lo, 1e6)
	if q > math.MaxInt64 {
		return math.MaxInt64
	}
	return MicroUSD(q)
}

// PriceTable maps model ids to prices. Lookup tries the exact id, then the
// longest prefix in the table ("claude-sonnet-4-5-20250929" matches
// "claude-sonnet-4-5"). A table is immutable and safe for concurrent use.
type PriceTable struct {
	prices map[string]Price
	keys   []string // longest first
}

// NewPriceTable returns a table holding a copy of prices.
func NewPriceTable(prices map[string]Price) *PriceTable {
	t := &PriceTable{prices: make(map[string]Price, len(prices))}
	for k, v := range prices {
		t.prices[k] = v
		t.keys = append(t.keys, k)
	}
	sort.Slice(t.keys, func(i, j int) bool {
		if len(t.keys[i]) != len(t.keys[j]) {
			return len(t.keys[i]) > len(t.keys[j])
		}
		return t.keys[i] < t.keys[j]
	})
	return t
}

// With returns a new table: t's prices overridden and extended by
// overrides (from configuration).
func (t *PriceTable) With(overrides map[string]Price) *PriceTable {
	all := make(map[string]Price, len(t.prices)+len(overrides))
	for k, v := range t.prices {
		all[k] = v
	}
	for k, v := range overrides {
		all[k] = v
	}
	return NewPriceTable(all)
}

// Lookup returns the price of model. A "models/" prefix (Gemini) is ignored
// and ids compare case-insensitively.
func (t *PriceTable) Lookup(model string) (Price, bool) {
	if t == nil {
		return Price{}, false
	}
	model = strings.ToLower(strings.TrimPrefix(model, "models/"))
	if p, ok := t.prices[model]; ok {
		return p, true
	}
	for _, k := range t.keys {
		if strings.HasPrefix(model, k) {
			return t.prices[k], true
		}
	}
	return Price{}, false
}

// Cost prices u for model; ok is false when the model has no price.
func (t *PriceTable) Cost(model string, u Usage) (MicroUSD, bool) {
	p, ok := t.Lookup(model)
	if !ok {
		return 0, false
	}
	return p.Cost(u), true
}

// CostFor is Cost for a provider: models served by Ollama run locally and
// cost 0 unless the table prices them explicitly.
func (t *PriceTable) CostFor(p Provider, model string, u Usage) (MicroUSD, bool) {
	c, ok := t.Cost(model, u)
	if !ok && p == Ollama {
		return 0, true
	}
	return c, ok
}

// perM builds a Price from US dollars per million tokens; cacheRead 0 means
// 0.1× input.
func perM(input, output, cacheRead float64) Price {
	return Price{Input: USD(input), Output: USD(output), CacheRead: USD(cacheRead)}
}

// DefaultPrices returns list prices (USD per million tokens, standard tier,
// prompts up to 200k tokens) as of this code's writing, for current models.
// They are defaults only: providers change prices, so configuration can
// override and extend them (PriceTable.With). Anthropic cache writes cost
// 1.25× input (5 minutes) and 2× (1 hour), reads 0.1×; OpenAI and Gemini
// report no cache writes and their cached-input prices are listed. Ollama
// and other local models cost 0 (see CostFor).
func DefaultPrices() *PriceTable {
	return NewPriceTable(map[string]Price{
		// Anthropic. Family prefixes price unknown future ids conservatively.
		"claude-opus-4-6":   perM(5, 25, 0),
		"claude-opus-4-5":   perM(5, 25, 0),
		"claude-opus-4-1":   perM(15, 75, 0),
		"claude-opus-4":     perM(15, 75, 0),
		"claude-opus":       perM(15, 75, 0),
		"claude-3-opus":     perM(15, 75, 0),
		"claude-sonnet-4-6": perM(3, 15, 0),
		"claude-sonnet-4-5": perM(3, 15, 0),
		"claude-sonnet-4":   perM(3, 15, 0),
		"claude-sonnet":     perM(3, 15, 0),
		"claude-3-7-sonnet": perM(3, 15, 0),
		"claude-3-5-sonnet": perM(3, 15, 0),
		"claude-haiku-4-5":  perM(1, 5, 0),
		"claude-haiku":      perM(1, 5, 0),
		"claude-3-5-haiku":  perM(0.80, 4, 0),
		"claude-3-haiku":    perM(0.25, 1.25, 0),

		// OpenAI.
		"gpt-5.2":                perM(1.75, 14, 0.175),
		"gpt-5.1":                perM(1.25, 10, 0.125),
		"gpt-5":                  perM(1.25, 10, 0.125),
		"gpt-5-mini":             perM(0.25, 2, 0.025),
		"gpt-5-nano":             perM(0.05, 0.40, 0.005),
		"gpt-5-pro":              perM(15, 120, 15),
		"gpt-4.1":                perM(2, 8, 0.50),
		"gpt-4.1-mini":           perM(0.40, 1.60, 0.10),
		"gpt-4.1-nano":           perM(0.10, 0.40, 0.025),
		"gpt-4o":                 perM(2.50, 10, 1.25),
		"gpt-4o-mini":            perM(0.15, 0.60, 0.075),
		"o1":                     perM(15, 60, 7.50),
		"o1-mini":                perM(1.10, 4.40, 0.55),
		"o3":                     perM(2, 8, 0.50),
		"o3-mini":                perM(1.10, 4.40, 0.55),
		"o3-pro":                 perM(20, 80, 20),
		"o4-mini":                perM(1.10, 4.40, 0.275),
		"text-embedding-3-small": perM(0.02, 0, 0),
		"text-embedding-3-large": perM(0.13, 0, 0),
		"text-embedding-ada-002": perM(0.10, 0, 0),

		// Gemini.
		"gemini-3-pro":          perM(2, 12, 0.20),
		"gemini-3-flash":        perM(0.50, 3, 0.05),
		"gemini-2.5-pro":        perM(1.25, 10, 0.125),
		"gemini-2.5-flash":      perM(0.30, 2.50, 0.03),
		"gemini-2.5-flash-lite": perM(0.10, 0.40, 0.01),
		"gemini-2.0-flash":      perM(0.10, 0.40, 0.025),
		"gemini-2.0-flash-lite": perM(0.075, 0.30, 0),
		"gemini-embedding-001":  perM(0.15, 0, 0),
	})
}
