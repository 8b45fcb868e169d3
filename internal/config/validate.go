package config

import (
	"cmp"
	"fmt"
	"net"
	"net/url"
	"slices"

	"github.com/apiary-dev/apiary/internal/strictyaml"
)

// Providers the gateway knows; an upstream may name one or leave it empty.
var providers = []string{"anthropic", "openai", "azure", "gemini", "ollama", "openai-compatible"}

// DefaultGatewayListen is used when the file leaves gateway.listen out.
// gateway.ledger has no default here: left out, it stays empty, and the
// gateway puts its ledger at its per-user state path.
const DefaultGatewayListen = "127.0.0.1:7420"

type validator struct {
	doc  *strictyaml.Document
	errs Errors
}

// errorf records a problem at the field path, located where the file
// wrote it (or its nearest ancestor).
func (v *validator) errorf(path strictyaml.Path, format string, args ...any) {
	at := v.doc.Pos(path)
	v.errs = append(v.errs, &Error{File: v.doc.File(), Line: at.Line, Column: at.Column, Field: path.String(), Msg: fmt.Sprintf(format, args...)})
}

// validate checks cross-field rules and fills defaults; doc locates the
// fields.
func (c *Config) validate(doc *strictyaml.Document) Errors {
	v := &validator{doc: doc}
	g := &c.Gateway
	if g.Listen == "" {
		g.Listen = DefaultGatewayListen
	} else if _, _, err := net.SplitHostPort(g.Listen); err != nil {
		v.errorf(strictyaml.Path{"gateway", "listen"}, "must be HOST:PORT: %v", err)
	}
	names := map[string]bool{}
	for i := range g.Upstreams {
		u := &g.Upstreams[i]
		p := func(f ...any) strictyaml.Path { return append(strictyaml.Path{"gateway", "upstreams", i}, f...) }
		switch {
		case u.Name == "":
			v.errorf(p("name"), "required")
		case names[u.Name]:
			v.errorf(p("name"), "duplicate upstream name %q", u.Name)
		}
		names[u.Name] = true
		if pu, err := url.Parse(u.URL); err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
			v.errorf(p("url"), "must be an absolute http(s) URL, got %q", u.URL)
		}
		if u.Provider != "" && !slices.Contains(providers, u.Provider) {
			v.errorf(p("provider"), "unknown provider %q (known: %v)", u.Provider, providers)
		}
		if u.MaxConcurrency < 0 {
			v.errorf(p("max_concurrency"), "must not be negative")
		}
		if u.AgentMaxConc < 0 {
			v.errorf(p("agent_max_concurrency"), "must not be negative")
		}
		for name, val := range map[string]int64{"rpm": u.Limits.RPM, "tpm": u.Limits.TPM, "itpm": u.Limits.ITPM, "otpm": u.Limits.OTPM} {
			if val < 0 {
				v.errorf(p("limits", name), "must not be negative")
			}
		}
	}
	for name, a := range g.Agents {
		p := func(f string) strictyaml.Path { return strictyaml.Path{"gateway", "agents", name, f} }
		if a.BudgetUSD < 0 {
			v.errorf(p("budget_usd"), "must not be negative")
		}
		if a.BudgetTokens < 0 {
			v.errorf(p("budget_tokens"), "must not be negative")
		}
		if a.MaxConcurrency < 0 {
			v.errorf(p("max_concurrency"), "must not be negative")
		}
	}
	if g.Queue.MaxWaiting < 0 {
		v.errorf(strictyaml.Path{"gateway", "queue", "max_waiting"}, "must not be negative")
	}
	if g.Retry.MaxAttempts < 0 {
		v.errorf(strictyaml.Path{"gateway", "retry", "max_attempts"}, "must not be negative")
	}
	if g.Retry.Base > 0 && g.Retry.Max > 0 && g.Retry.Base > g.Retry.Max {
		v.errorf(strictyaml.Path{"gateway", "retry", "base"}, "must not exceed gateway.retry.max")
	}
	if d := g.AIMD.Decrease; d != 0 && (d <= 0 || d >= 1) {
		v.errorf(strictyaml.Path{"gateway", "aimd", "decrease"}, "must be between 0 and 1 (exclusive), got %v", d)
	}
	if r := g.Breaker.FailureRate; r != 0 && (r <= 0 || r > 1) {
		v.errorf(strictyaml.Path{"gateway", "breaker", "failure_rate"}, "must be in (0, 1], got %v", r)
	}
	if g.Breaker.Probes < 0 {
		v.errorf(strictyaml.Path{"gateway", "breaker", "probes"}, "must not be negative")
	}
	if g.InjectIncludeUsage == nil {
		t := true
		g.InjectIncludeUsage = &t
	}
	for model, p := range c.Prices {

		for name, val := range map[string]float64{"input": p.Input, "output": p.Output, "cache_write_5m": p.CacheWrite5m, "cache_write_1h": p.CacheWrite1h, "cache_read": p.CacheRead} {
			if val < 0 {
				v.errorf(strictyaml.Path{"prices", model, name}, "must not be negative")
			}
		}
	}
	slices.SortStableFunc(v.errs, func(a, b *Error) int {
		return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column), cmp.Compare(a.Field, b.Field))
	})
	m := c.Swarm.Merge
	mp := func(f string) strictyaml.Path { return strictyaml.Path{"swarm", "merge", f} }
	for _, f := range [...]struct{ name, val string }{{"on_exact", m.OnExact}, {"on_near", m.OnNear}} {
		if f.val != "" && !slices.Contains(DupPolicies, f.val) {
			v.errorf(mp(f.name), "unknown policy %q (want one of %v)", f.val, DupPolicies)
		}
	}
	if m.NearDup < 0 || m.NearDup > 1 {
		v.errorf(mp("near_dup"), "must be in (0, 1], got %v", m.NearDup)
	}
	if m.HotTouches < 0 {
		v.errorf(mp("hot_touches"), "must not be negative, got %d", m.HotTouches)
	}
	return v.errs
}
