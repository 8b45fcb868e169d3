package llmapi

import (
	"math"
	"testing"
)

func TestMicroUSD(t *testing.T) {
	t.Parallel()
	tests := map[MicroUSD]string{
		0: "$0.000000", 1234: "$0.001234", 1_500_000: "$1.500000", -1: "-$0.000001",
		123_456_789_012: "$123456.789012", math.MinInt64: "-$9223372036854.775808",
	}
	for m, want := range tests {
		if got := m.String(); got != want {
			t.Errorf("MicroUSD(%d) = %q, want %q", int64(m), got, want)
		}
	}
	if USD(3) != 3_000_000 || USD(0.075) != 75_000 || USD(-0.0000015) != -2 {
		t.Errorf("USD conversions: %d %d %d", USD(3), USD(0.075), USD(-0.0000015))
	}
}

func TestPriceLookup(t *testing.T) {
	t.Parallel()
	pt := DefaultPrices()
	tests := map[string]MicroUSD{ // model → input price
		"claude-sonnet-4-5":            USD(3),
		"claude-sonnet-4-5-20250929":   USD(3),
		"claude-opus-4-1-20250805":     USD(15),
		"claude-opus-4-20250514":       USD(15),
		"claude-opus-4-5-20251101":     USD(5),
		"claude-haiku-4-5-20251001":    USD(1),
		"claude-3-5-haiku-20241022":    USD(0.80),
		"gpt-4o-mini-2024-07-18":       USD(0.15),
		"gpt-4o-2024-08-06":            USD(2.50),
		"GPT-4o":                       USD(2.50),
		"gpt-5-mini-2025-08-07":        USD(0.25),
		"gpt-5-codex":                  USD(1.25),
		"gpt-4.1-nano":                 USD(0.10),
		"o3-2025-04-16":                USD(2),
		"o3-mini":                      USD(1.10),
		"o4-mini-2025-04-16":           USD(1.10),
		"models/gemini-2.5-pro":        USD(1.25),
		"gemini-2.5-flash-lite":        USD(0.10),
		"gemini-2.5-flash-preview-tts": USD(0.30),
		"gemini-3-pro-preview":         USD(2),
	}
	for model, want := range tests {
		p, ok := pt.Lookup(model)
		if !ok || p.Input != want {
			t.Errorf("Lookup(%q) = %v, %v; want input %v", model, p.Input, ok, want)
		}
	}
	for _, model := range []string{"llama3.2", "my-azure-deployment", ""} {
		if _, ok := pt.Lookup(model); ok {
			t.Errorf("Lookup(%q) found a price", model)
		}
	}
	var nilTable *PriceTable
	if _, ok := nilTable.Lookup("gpt-4o"); ok {
		t.Error("nil table found a price")
	}
}

func TestPriceCost(t *testing.T) {
	t.Parallel()
	pt := DefaultPrices()
	tests := []struct {
		name  string
		model string
		u     Usage
		want  MicroUSD
	}{
		{"sonnet one million each", "claude-sonnet-4-5", Usage{InputTokens: 1e6, OutputTokens: 1e6}, USD(18)},
		// 10×3 + 500×15 + 1000×3.75 (5m) + 2000×6 (1h) + 20000×0.30 = 29280 µ$.
		{"sonnet with both cache TTLs", "claude-sonnet-4-5-20250929", Usage{InputTokens: 10, OutputTokens: 500,
			CacheCreationInputTokens: 3000, CacheCreation5m: 1000, CacheCreation1h: 2000, CacheReadInputTokens: 20000}, 29280},
		{"cache writes without breakdown are 5m", "claude-sonnet-4-5", Usage{CacheCreationInputTokens: 1000}, 3750},
		{"openai cached input price", "gpt-4o", Usage{CacheReadInputTokens: 1e6}, USD(1.25)},
		{"gemini", "gemini-2.5-pro", Usage{InputTokens: 1050, CacheReadInputTokens: 3000, OutputTokens: 800}, 1313 + 375 + 8000},
		{"rounds half up", "claude-3-haiku", Usage{InputTokens: 2}, 1},
		{"rounds down below half", "claude-3-haiku", Usage{InputTokens: 1}, 0},
		{"negative counts ignored", "gpt-4o", Usage{InputTokens: -5, OutputTokens: 1000}, 10000},
		{"saturates", "claude-opus-4-1", Usage{InputTokens: math.MaxInt64, OutputTokens: math.MaxInt64}, math.MaxInt64},
	}
	for _, tt := range tests {
		got, ok := pt.Cost(tt.model, tt.u)
		if !ok || got != tt.want {
			t.Errorf("%s: Cost = %v, %v; want %v", tt.name, got, ok, tt.want)
		}
	}
	if _, ok := pt.Cost("unknown-model", Usage{InputTokens: 1}); ok {
		t.Error("unknown model priced")
	}
	if c, ok := pt.CostFor(Ollama, "llama3.2:3b", Usage{InputTokens: 1e6}); !ok || c != 0 {
		t.Errorf("ollama CostFor = %v, %v; want 0, true", c, ok)
	}
	if _, ok := pt.CostFor(OpenAI, "llama3.2:3b", Usage{}); ok {
		t.Error("unknown OpenAI model priced")
	}
}

// TestCostNoDrift: a budget that sums per-request costs equals the cost of
// the summed usage to within one micro-dollar per request (integer sums).
func TestCostNoDrift(t *testing.T) {
	t.Parallel()
	p, _ := DefaultPrices().Lookup("gpt-5-nano")
	var sum MicroUSD
	for range 1000 {
		sum += p.Cost(Usage{InputTokens: 100, OutputTokens: 250})
	}
	if want := MicroUSD(1000 * (5 + 100)); sum != want { // 100×0.05 + 250×0.40 µ$ each
		t.Errorf("sum = %v, want %v", sum, want)
	}
}

func TestPriceTableWith(t *testing.T) {
	t.Parallel()
	base := DefaultPrices()
	over := base.With(map[string]Price{"gpt-4o": {Input: USD(1), Output: USD(2)}, "my-deployment": {Input: USD(7)}})
	if p, _ := over.Lookup("gpt-4o-2024-08-06"); p.Input != USD(1) {
		t.Errorf("override not applied: %v", p.Input)
	}
	if p, ok := over.Lookup("my-deployment"); !ok || p.Input != USD(7) {
		t.Errorf("added model: %v %v", p.Input, ok)
	}
	if p, _ := base.Lookup("gpt-4o"); p.Input != USD(2.50) {
		t.Errorf("base table changed: %v", p.Input)
	}
	// Derived cache prices: 1.25×, 2×, 0.1× input.
	if c := (Price{Input: USD(4)}).Cost(Usage{CacheCreationInputTokens: 3e6, CacheCreation1h: 1e6, CacheReadInputTokens: 1e6}); c != USD(2*5+8+0.4) {
		t.Errorf("derived cache prices: %v", c)
	}
}
