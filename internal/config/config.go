// Package config defines apiary.yaml: its schema, loading with line-numbered
// errors, validation and defaults. The zero Config is valid and means "all
// defaults"; Load fills defaults for fields the file leaves out.
//
// The file is read strictly (see internal/strictyaml): unknown fields,
// wrong types and duplicate keys are errors. Every error names the file,
// the line, the column and the field path, for example
// `apiary.yaml:12:7: gateway.upstreams[0].url: must be an absolute http(s) URL`,
// and every problem in a file is reported at once.
package config

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/apiary-dev/apiary/internal/strictyaml"
)

// Config is the whole of apiary.yaml.
type Config struct {
	Gateway Gateway          `yaml:"gateway"`
	Prices  map[string]Price `yaml:"prices"`
	Swarm   Swarm            `yaml:"swarm"`
}

// Swarm is swarm mode's defaults for this repository or machine: what a
// plan leaves out and the flags do not say.
type Swarm struct {
	Merge Merge `yaml:"merge"`
}

// Merge is the merge role's duplicate and hot-file policy. Empty fields
// leave the plan's, else the built-in defaults.
type Merge struct {
	// OnExact and OnNear are warn, reject or reuse: what happens to a
	// candidate that adds an exact or a near duplicate of a function.
	OnExact string `yaml:"on_exact"`
	OnNear  string `yaml:"on_near"`
	// NearDup is the similarity ratio, in (0, 1], at which a function is a
	// near duplicate.
	NearDup float64 `yaml:"near_dup"`
	// HotTouches is how many tasks writing one file make it hot; NoSplit
	// turns the split task off.
	HotTouches int  `yaml:"hot_touches"`
	NoSplit    bool `yaml:"no_split"`
}

// DupPolicies are the values of on_exact and on_near.
var DupPolicies = []string{"warn", "reject", "reuse"}

// Price overrides or adds a model's list price, in USD per million tokens.
// Zero cache prices mean "derive from input" (write 5m 1.25×, 1h 2×, read 0.1×).
type Price struct {
	Input        float64 `yaml:"input"`
	Output       float64 `yaml:"output"`
	CacheWrite5m float64 `yaml:"cache_write_5m"`
	CacheWrite1h float64 `yaml:"cache_write_1h"`
	CacheRead    float64 `yaml:"cache_read"`
}

// Gateway configures `apiary gateway`.
type Gateway struct {
	Listen    string           `yaml:"listen"`
	Ledger    string           `yaml:"ledger"`
	Upstreams []Upstream       `yaml:"upstreams"`
	Agents    map[string]Agent `yaml:"agents"`
	Queue     Queue            `yaml:"queue"`
	Retry     Retry            `yaml:"retry"`
	AIMD      AIMD             `yaml:"aimd"`
	Breaker   Breaker          `yaml:"breaker"`
	// InjectIncludeUsage adds stream_options.include_usage to OpenAI chat
	// streams so their usage can be counted, and strips the extra usage chunk
	// before it reaches a client that did not ask for it. Default true.
	InjectIncludeUsage *bool `yaml:"inject_include_usage"`
}

// Upstream is one model API the gateway forwards to.
type Upstream struct {
	Name     string `yaml:"name"`
	URL      string `yaml:"url"`
	Provider string `yaml:"provider"` // anthropic, openai, azure, gemini, ollama, openai-compatible; empty = detect
	// APIKeyEnv names the environment variable holding the real key that
	// virtual keys map to. Agents never see it.
	APIKeyEnv      string `yaml:"api_key_env"`
	MaxConcurrency int    `yaml:"max_concurrency"`
	AgentMaxConc   int    `yaml:"agent_max_concurrency"`
	Limits         Limits `yaml:"limits"`
}

// Limits are an upstream's rate limits per minute; zero means unknown (the
// gateway still learns limits from response headers).
type Limits struct {
	RPM  int64 `yaml:"rpm"`
	TPM  int64 `yaml:"tpm"`
	ITPM int64 `yaml:"itpm"`
	OTPM int64 `yaml:"otpm"`
}

// Agent sets an agent's priority, concurrency and budgets.
type Agent struct {
	Priority       int     `yaml:"priority"`
	MaxConcurrency int     `yaml:"max_concurrency"`
	BudgetUSD      float64 `yaml:"budget_usd"`
	BudgetTokens   int64   `yaml:"budget_tokens"`
}

// Queue bounds the admission wait queue.
type Queue struct {
	MaxWaiting int      `yaml:"max_waiting"`
	MaxWait    Duration `yaml:"max_wait"`
}

// Retry configures transparent retries.
type Retry struct {
	Disabled    bool     `yaml:"disabled"`
	MaxAttempts int      `yaml:"max_attempts"`
	Base        Duration `yaml:"base"`
	Max         Duration `yaml:"max"`
	// MaxWait is the longest server-requested wait the gateway absorbs; a
	// longer retry-after (a daily quota) is passed to the client at once.
	MaxWait Duration `yaml:"max_wait"`
}

// AIMD configures the adaptive concurrency limit.
type AIMD struct {
	Disabled   bool     `yaml:"disabled"`
	Min        int      `yaml:"min"`
	Decrease   float64  `yaml:"decrease"`
	TTFBTarget Duration `yaml:"ttfb_target"`
	Cooldown   Duration `yaml:"cooldown"`
}

// Breaker configures the per-upstream circuit breaker.
type Breaker struct {
	Disabled    bool     `yaml:"disabled"`
	FailureRate float64  `yaml:"failure_rate"`
	MinRequests int      `yaml:"min_requests"`
	Window      Duration `yaml:"window"`
	OpenFor     Duration `yaml:"open_for"`
	Probes      int      `yaml:"probes"`
	// FailFast answers at once with a typed error while the breaker is open,
	// instead of waiting for it to half-open.
	FailFast bool `yaml:"fail_fast"`
}

// Duration is a time.Duration written as "250ms", "30s", "2m".
type Duration time.Duration

// D returns the value as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// UnmarshalText parses a Go duration string.
func (d *Duration) UnmarshalText(b []byte) error {
	s := string(b)
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("not a duration (want e.g. 250ms, 30s, 2m): %q", s)
	}
	if v < 0 {
		return fmt.Errorf("must not be negative: %q", s)
	}
	*d = Duration(v)
	return nil
}

// Error is a configuration error at a place in a file.
type Error struct {
	File   string
	Line   int // 0 when unknown
	Column int // 0 when unknown
	Field  string
	Msg    string
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			fmt.Fprintf(&b, ":%d", e.Line)
			if e.Column > 0 {
				fmt.Fprintf(&b, ":%d", e.Column)
			}
		}
		b.WriteString(": ")
	}
	if e.Field != "" {
		b.WriteString(e.Field + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// ErrInvalid is wrapped by every validation error, for errors.Is.
var ErrInvalid = errors.New("config: invalid")

// Errors is a list of configuration errors; Unwrap exposes them to errors.As.
type Errors []*Error

func (es Errors) Error() string {
	msgs := make([]string, len(es))
	for i, e := range es {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "\n")
}

// Unwrap returns the individual errors and ErrInvalid.
func (es Errors) Unwrap() []error {
	out := []error{ErrInvalid}
	for _, e := range es {
		out = append(out, e)
	}
	return out
}

// LoadFile reads and validates a config file. A missing file is an error;
// callers that treat it as optional check os.IsNotExist first.
func LoadFile(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// maxFileSize bounds apiary.yaml.
const maxFileSize = 1 << 20

// Parse decodes and validates data; name labels errors.
func Parse(name string, data []byte) (*Config, error) {
	doc, err := strictyaml.Parse(name, data, strictyaml.Options{MaxBytes: maxFileSize})
	if err != nil {
		return nil, fromStrict(err)
	}
	cfg := &Config{}
	if err := doc.Decode(cfg); err != nil {
		return nil, fromStrict(err)
	}
	if errs := cfg.validate(doc); len(errs) > 0 {
		return nil, errs
	}
	return cfg, nil
}

// fromStrict converts strictyaml's Errors into this package's.
func fromStrict(err error) error {
	var ses strictyaml.Errors
	if !errors.As(err, &ses) {
		return err
	}
	out := make(Errors, len(ses))
	for i, e := range ses {
		out[i] = &Error{File: e.File, Line: e.Line, Column: e.Column, Field: e.Path.String(), Msg: e.Msg}
	}
	return out
}
