package config

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParseValid(t *testing.T) {
	t.Parallel()
	cfg, err := Parse("apiary.yaml", []byte(`
gateway:
  listen: 127.0.0.1:9000
  upstreams:
    - name: anthropic
      url: https://api.anthropic.com
      provider: anthropic
      max_concurrency: 5
      limits: {rpm: 50, tpm: 100000}
  agents:
    alice: {priority: 2, budget_usd: 1.5}
  retry: {max_attempts: 5, base: 100ms, max: 10s}
  inject_include_usage: false
prices:
  my-model: {input: 1, output: 2}
swarm:
  merge: {on_exact: reject, on_near: reuse, near_dup: 0.9, hot_touches: 4, no_split: true}
`))
	if err != nil {
		t.Fatal(err)
	}
	g := cfg.Gateway
	if g.Listen != "127.0.0.1:9000" || g.Ledger != "" {
		t.Errorf("listen/ledger = %q/%q", g.Listen, g.Ledger)
	}
	if len(g.Upstreams) != 1 || g.Upstreams[0].Limits.RPM != 50 || g.Upstreams[0].MaxConcurrency != 5 {
		t.Errorf("upstreams = %+v", g.Upstreams)
	}
	if g.Agents["alice"].BudgetUSD != 1.5 || g.Agents["alice"].Priority != 2 {
		t.Errorf("agents = %+v", g.Agents)
	}
	if g.Retry.Base.D() != 100*time.Millisecond || g.Retry.Max.D() != 10*time.Second {
		t.Errorf("retry = %+v", g.Retry)
	}
	if *g.InjectIncludeUsage {
		t.Error("inject_include_usage: false was not kept")
	}
	if cfg.Prices["my-model"].Output != 2 {
		t.Errorf("prices = %+v", cfg.Prices)
	}
	if m := cfg.Swarm.Merge; m != (Merge{OnExact: "reject", OnNear: "reuse", NearDup: 0.9, HotTouches: 4, NoSplit: true}) {
		t.Errorf("swarm.merge = %+v", m)
	}
}

func TestParseEmptyIsDefaults(t *testing.T) {
	t.Parallel()
	cfg, err := Parse("apiary.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Gateway.Listen != DefaultGatewayListen || !*cfg.Gateway.InjectIncludeUsage {
		t.Errorf("defaults not applied: %+v", cfg.Gateway)
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, want string
	}{
		{"unknown field", "gateway:\n  listn: x\n", "apiary.yaml:2:3: gateway.listn: unknown field (want one of listen, ledger, upstreams,"},
		{"bad type", "gateway:\n  upstreams:\n    - name: a\n      url: http://x\n      max_concurrency: lots\n", "apiary.yaml:5:24: gateway.upstreams[0].max_concurrency: cannot unmarshal !!str `lots` into int"},
		{"bad url", "gateway:\n  upstreams:\n    - name: a\n      url: api.anthropic.com\n", `apiary.yaml:4:7: gateway.upstreams[0].url: must be an absolute http(s) URL, got "api.anthropic.com"`},
		{"missing name", "gateway:\n  upstreams:\n    - url: http://x\n", "apiary.yaml:3:7: gateway.upstreams[0].name: required"},
		{"duplicate name", "gateway:\n  upstreams:\n    - {name: a, url: 'http://x'}\n    - {name: a, url: 'http://y'}\n", `apiary.yaml:4:8: gateway.upstreams[1].name: duplicate upstream name "a"`},
		{"bad provider", "gateway:\n  upstreams:\n    - {name: a, url: 'http://x', provider: cohere}\n", `gateway.upstreams[0].provider: unknown provider "cohere"`},
		{"bad duration", "gateway:\n  retry:\n    base: soon\n", `apiary.yaml:3:11: gateway.retry.base: not a duration`},
		{"negative budget", "gateway:\n  agents:\n    bob:\n      budget_usd: -1\n", "apiary.yaml:4:7: gateway.agents.bob.budget_usd: must not be negative"},
		{"bad listen", "gateway:\n  listen: nocolon\n", "apiary.yaml:2:3: gateway.listen: must be HOST:PORT"},
		{"aimd decrease", "gateway:\n  aimd: {decrease: 1.5}\n", "gateway.aimd.decrease: must be between 0 and 1"},
		{"syntax", "gateway: [\n", "apiary.yaml:1: did not find expected node content"},
		{"duplicate key", "gateway:\n  listen: a:1\n  listen: b:2\n", `apiary.yaml:3:3: gateway.listen: key "listen" given twice (first at line 2)`},
		{"two documents", "gateway: {}\n---\nprices: {}\n", "apiary.yaml:2: a second YAML document"},
		{"yes is not a boolean", "gateway:\n  retry: {disabled: yes}\n", "apiary.yaml:2:21: gateway.retry.disabled: must be true or false"},
		{"not a mapping", "gateway: 3\n", "apiary.yaml:1:10: gateway: must be a mapping, not a number"},
		{"bad merge policy", "swarm:\n  merge: {on_near: drop}\n", `apiary.yaml:2:11: swarm.merge.on_near: unknown policy "drop" (want one of [warn reject reuse])`},
		{"bad near dup", "swarm:\n  merge:\n    near_dup: 1.5\n", "apiary.yaml:3:5: swarm.merge.near_dup: must be in (0, 1], got 1.5"},
		{"negative hot touches", "swarm:\n  merge:\n    hot_touches: -2\n", "apiary.yaml:3:5: swarm.merge.hot_touches: must not be negative, got -2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse("apiary.yaml", []byte(tt.in))
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("error %v does not wrap ErrInvalid", err)
			}
			var ce *Error
			if !errors.As(err, &ce) {
				t.Errorf("error %v is not a *config.Error", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %q, want it to contain %q", err, tt.want)
			}
		})
	}
}

// TestParseReportsEveryProblem: decoding and validation problems come
// back together, in file order.
func TestParseReportsEveryProblem(t *testing.T) {
	t.Parallel()
	src := "gateway:\n  listn: x\n  upstreams:\n    - {name: a, url: 'ftp://x', max_concurrency: lots}\n  retry: {base: soon}\nprices:\n  m: {input: -1}\n"
	_, err := Parse("apiary.yaml", []byte(src))
	var errs Errors
	if !errors.As(err, &errs) {
		t.Fatalf("err = %v", err)
	}
	// Decoding problems stop before validation: validating half-decoded
	// values would report their zero values as problems too.
	want := []string{
		"apiary.yaml:2:3: gateway.listn: unknown field",
		"apiary.yaml:4:50: gateway.upstreams[0].max_concurrency: cannot unmarshal !!str `lots` into int",
		"apiary.yaml:5:17: gateway.retry.base: not a duration",
	}
	if len(errs) != len(want) {
		t.Fatalf("%d errors, want %d:\n%v", len(errs), len(want), err)
	}
	for i, w := range want {
		if !strings.HasPrefix(errs[i].Error(), w) {
			t.Errorf("errs[%d] = %q, want prefix %q", i, errs[i], w)
		}
	}
	_, err = Parse("apiary.yaml", []byte("gateway:\n  upstreams:\n    - {name: a, url: 'ftp://x'}\n    - {url: 'http://y'}\nprices:\n  m: {input: -1}\n"))
	if !errors.As(err, &errs) || len(errs) != 3 {
		t.Fatalf("validation: err = %v, want 3 errors", err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add("gateway:\n  upstreams:\n    - {name: a, url: 'http://x', limits: {rpm: 5}}\n")
	f.Add("prices:\n  m: {input: 1}\n")
	f.Add("gateway: [1, {a: b}]\n")
	f.Fuzz(func(t *testing.T, in string) {
		cfg, err := Parse("f.yaml", []byte(in))
		if err == nil && cfg.Gateway.Listen == "" {
			t.Fatal("valid config without default listen")
		}
		if err != nil && !errors.Is(err, ErrInvalid) {
			t.Fatalf("error %v does not wrap ErrInvalid", err)
		}
	})
}
