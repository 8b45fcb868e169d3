package review

import (
	"errors"
	"fmt"
	"maps"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/apiary-dev/apiary/internal/agent"
	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/strictyaml"
	"github.com/bmatcuk/doublestar/v4"
)

// ErrConfig is wrapped by every problem of a review configuration.
var ErrConfig = errors.New("review: invalid review configuration")

// ConfigError locates one problem in a review configuration.
type ConfigError struct {
	File   string
	Line   int    // 1-based; 0 if unknown
	Column int    // 1-based, in bytes; 0 if unknown
	Field  string // the field path, "analysers[2].with.count"; empty for the whole file
	Msg    string
	// Err is the class of a problem strictyaml found (strictyaml.ErrSyntax,
	// ErrDuplicateKey, ErrUnknownField, ErrType, ErrLimit); nil for the
	// rules of review configurations.
	Err error
}

// Error renders "file:line:col: field: msg", leaving out what is unknown.
func (e *ConfigError) Error() string {
	loc := e.File
	if e.Line > 0 {
		loc += ":" + strconv.Itoa(e.Line)
		if e.Column > 0 {
			loc += ":" + strconv.Itoa(e.Column)
		}
	}
	if e.Field != "" {
		return loc + ": " + e.Field + ": " + e.Msg
	}
	return loc + ": " + e.Msg
}

// Unwrap returns ErrConfig and, for a problem strictyaml found, its class.
func (e *ConfigError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrConfig}
	}
	return []error{ErrConfig, e.Err}
}

// Built-in analysers a review configuration can name.
const (
	BuiltinSecretScan = "secret-scan"
	BuiltinForbidden  = "forbidden-patterns"
	BuiltinGoTest     = "go-test"
	BuiltinGoBench    = "go-bench"
	BuiltinAPIDiff    = "api-diff"
	BuiltinDecisions  = "decisions"
)

// Builtins lists the built-in analysers.
func Builtins() []string {
	return []string{BuiltinSecretScan, BuiltinForbidden, BuiltinGoTest, BuiltinGoBench, BuiltinAPIDiff, BuiltinDecisions}
}

// API-break policies of DecisionRules.APIBreak.
const (
	APIBreakBlock       = "block"        // any break blocks
	APIBreakVersionBump = "version-bump" // a break blocks unless the change bumps the version
	APIBreakAllow       = "allow"
)

// Escalation to a human (EscalateHuman) or, for any other value of
// ReviewerConfig.Escalate, to a third reviewer with that profile.
const EscalateHuman = "human"

// Config is a review configuration (review.yaml): which analysers
// run on which changes, the decision rules, the optional adversarial
// reviewer stage and how --apply integrates. See examples/review.yaml.
type Config struct {
	File      string                   `yaml:"-"`
	Version   int                      `yaml:"version"`
	Agents    map[string]agent.Profile `yaml:"agents"`
	Analysers []AnalyserConfig         `yaml:"analysers"`
	Decision  DecisionRules            `yaml:"decision"`
	Reviewers *ReviewerConfig          `yaml:"reviewers"`
	Apply     ApplyConfig              `yaml:"apply"`
}

// AnalyserConfig is one analyser: a built-in (no model) or an agent
// profile given an objective. An analyser with Subscribe runs only in the
// reaction round, and only if findings it subscribes to exist.
type AnalyserConfig struct {
	Name      string   `yaml:"name"`
	Builtin   string   `yaml:"builtin"`
	Agent     string   `yaml:"agent"`
	Objective string   `yaml:"objective"`
	When      When     `yaml:"when"`
	Subscribe []string `yaml:"subscribe"` // finding kinds, or "analyser:NAME"
	Budget    Budget   `yaml:"budget"`
	// Optional analysers that fail report a low-severity analyser-error
	// instead of a high one (which blocks by default).
	Optional bool `yaml:"optional"`
	// With is a built-in's options as written (the generic tree of
	// strictyaml's Value); ParseConfig decodes them strictly into the
	// built-in's own options type.
	With any `yaml:"with"`

	opts any // the decoded options of a built-in
}

// When selects the changes an analyser runs on: some changed path matches
// one of Paths (globs, see MatchGlob: "*" within a path element, "**"
// across elements, a pattern without "/" matches a file name anywhere,
// "dir/" everything below dir) and, if Tags is set, the change carries one
// of them. Empty means always.
type When struct {
	Paths []string `yaml:"paths"`
	Tags  []string `yaml:"tags"`
}

// Budget bounds an agent analyser or reviewer.
type Budget struct {
	USD          float64 `yaml:"usd"`
	InputTokens  int64   `yaml:"input_tokens"`
	OutputTokens int64   `yaml:"output_tokens"`
	WallClockS   float64 `yaml:"wall_clock_s"`
}

func (b Budget) envelope() envelope.Budget {
	return envelope.Budget{USD: b.USD, InputTokens: b.InputTokens, OutputTokens: b.OutputTokens, WallClockS: b.WallClockS}
}

// DecisionRules are the thresholds that decide merge or block.
type DecisionRules struct {
	// BlockSeverity: any finding at or above it blocks; default high.
	BlockSeverity Severity `yaml:"block_severity" json:"block_severity"`
	// MinCoverageDelta: the total coverage may drop at most this much
	// (percentage points, e.g. -1); nil: no coverage rule.
	MinCoverageDelta *float64 `yaml:"min_coverage_delta" json:"min_coverage_delta,omitempty"`
	// MaxBenchRegressionPct: a benchmark significantly slower by more than
	// this (percent) blocks; default 10; negative: no benchmark rule.
	MaxBenchRegressionPct *float64 `yaml:"max_bench_regression_pct" json:"max_bench_regression_pct,omitempty"`
	// APIBreak: block, version-bump (default) or allow.
	APIBreak string `yaml:"api_break" json:"api_break"`
	// Severity overrides the severity of findings by kind.
	Severity map[string]Severity `yaml:"severity" json:"severity,omitempty"`
}

// ReviewerConfig is the adversarial reviewer stage, run only when the
// rules decided merge: every reviewer, in its own context, returns a
// verdict and objections. Reviewers can block, never merge: unanimous
// approval keeps the rules' merge, unanimous blocking blocks, and a
// disagreement escalates to a human (the review blocks, awaiting one) or
// to a third reviewer whose verdict settles it.
type ReviewerConfig struct {
	Agents    []string `yaml:"agents"`
	Objective string   `yaml:"objective"`
	Escalate  string   `yaml:"escalate"` // EscalateHuman (default) or a profile
	Budget    Budget   `yaml:"budget"`
}

// ApplyConfig is how --apply integrates a change the review decided to
// merge: as a one-task run of the runtime on Branch (default: the review's
// base branch, else the current branch), with Checks run on the tree being
// integrated.
type ApplyConfig struct {
	Branch        string   `yaml:"branch"`
	Checks        []string `yaml:"checks"`
	CheckTimeoutS float64  `yaml:"check_timeout_s"`
}

// Options of the built-in analysers (the "with:" mapping).
type (
	secretOpts struct {
		MaxFileBytes int               `yaml:"max_file_bytes"`
		Severity     map[string]string `yaml:"severity"`
	}
	forbiddenOpts struct {
		Patterns []string `yaml:"patterns"`
		Sealed   []string `yaml:"sealed"`
	}
	goTestOpts struct {
		Packages []string `yaml:"packages"`
		Args     []string `yaml:"args"`
		TimeoutS float64  `yaml:"timeout_s"`
	}
	goBenchOpts struct {
		Packages  []string `yaml:"packages"`
		Pattern   string   `yaml:"pattern"`
		Benchtime string   `yaml:"benchtime"`
		Count     int      `yaml:"count"`
		Alpha     float64  `yaml:"alpha"`
		TimeoutS  float64  `yaml:"timeout_s"`
	}
	apiOpts struct {
		IncludeInternal bool     `yaml:"include_internal"`
		VersionFiles    []string `yaml:"version_files"`
	}
	decisionOpts struct {
		Dir string `yaml:"dir"`
	}
)

// DefaultConfig is the configuration used when a repository has none:
// every built-in, the Go ones only on changes to Go files — the benchmark
// comparison on the packages whose code the change edits, when they have
// benchmarks — and the default rules.
func DefaultConfig() *Config {
	c, err := ParseConfig("(default)", []byte(defaultConfig))
	if err != nil {
		panic(err) // a bug in the defaults
	}
	return c
}

// defaultConfig is DefaultConfig as a user would write it, so that it is
// decoded and checked like any other.
const defaultConfig = `version: 1
analysers:
  - {name: secrets, builtin: secret-scan}
  - {name: forbidden, builtin: forbidden-patterns}
  - {name: tests, builtin: go-test, when: {paths: ["*.go", go.mod, go.sum]}}
  - {name: bench, builtin: go-bench, when: {paths: ["*.go"]}}
  - {name: api, builtin: api-diff, when: {paths: ["*.go"]}}
  - {name: decisions, builtin: decisions}
`

var (
	reviewNameRE  = regexp.MustCompile(`^[a-z0-9-]{1,64}$`)
	findingKindRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._/-]{0,63}$`)
)

// maxConfigBytes bounds a review configuration.
const maxConfigBytes = 1 << 20

// ParseConfig reads a review configuration (YAML, or JSON when it starts
// with "{") strictly and validates it. Unknown fields, values of the wrong
// type and duplicate keys are errors, in the built-ins' "with:" options as
// everywhere else; every problem is reported, located at file:line:col and
// named by its field path, in one error whose parts are *ConfigError.
func ParseConfig(file string, data []byte) (*Config, error) {
	doc, err := strictyaml.ParseAuto(file, data, strictyaml.Options{MaxBytes: maxConfigBytes})
	if err != nil {
		return nil, errors.Join(configErrors(file, err)...)
	}
	if doc.Empty() {
		return nil, &ConfigError{File: file, Line: 1, Msg: "empty document"}
	}
	if _, ok := doc.Value().(map[string]any); !ok {
		at := doc.Pos(nil)
		return nil, &ConfigError{File: file, Line: at.Line, Column: at.Column, Msg: "the document must be a mapping", Err: strictyaml.ErrType}
	}
	c := &Config{File: file}
	if err := doc.Decode(c); err != nil {
		return nil, errors.Join(configErrors(file, err)...)
	}
	if err := c.validate(doc); err != nil {
		return nil, err
	}
	return c, nil
}

// configErrors turns strictyaml's problems into ConfigErrors, keeping
// their places, field paths and classes.
func configErrors(file string, err error) []error {
	var ses strictyaml.Errors
	if !errors.As(err, &ses) {
		return []error{&ConfigError{File: file, Msg: err.Error()}} // not a problem of the file; not expected
	}
	errs := make([]error, len(ses))
	for i, e := range ses {
		errs[i] = &ConfigError{File: e.File, Line: e.Line, Column: e.Column, Field: e.Path.String(), Msg: e.Msg, Err: e.Err}
	}
	return errs
}

// validator collects the problems validate finds, each located where the
// document wrote its field (or the nearest enclosing one it did write).
type validator struct {
	doc  *strictyaml.Document
	errs []error
}

func (v *validator) errorf(path strictyaml.Path, format string, args ...any) {
	at := v.doc.Pos(path)
	v.errs = append(v.errs, &ConfigError{File: v.doc.File(), Line: at.Line, Column: at.Column, Field: path.String(), Msg: fmt.Sprintf(format, args...)})
}

// add records the problems of a strictyaml call (DecodeAt).
func (v *validator) add(err error) {
	v.errs = append(v.errs, configErrors(v.doc.File(), err)...)
}

// validate checks c, fills the defaults and decodes the built-ins'
// options; doc is the document c was decoded from.
func (c *Config) validate(doc *strictyaml.Document) error {
	v := &validator{doc: doc}
	if c.Version == 0 {
		c.Version = 1
	}
	if c.Version != 1 {
		v.errorf(strictyaml.Path{"version"}, "unsupported version %d (want 1)", c.Version)
	}
	for _, n := range slices.Sorted(maps.Keys(c.Agents)) {
		p := c.Agents[n]
		p.Name = n
		c.Agents[n] = p
		if !reviewNameRE.MatchString(strings.ReplaceAll(n, "_", "-")) {
			v.errorf(strictyaml.Path{"agents", n}, "profile names are [a-z0-9_-]{1,64}")
		}
		if err := p.Validate(); err != nil {
			v.errorf(strictyaml.Path{"agents", n}, "%v", err)
		}
	}
	seen := map[string]bool{}
	for i := range c.Analysers {
		a := &c.Analysers[i]
		at := func(f ...any) strictyaml.Path { return append(strictyaml.Path{"analysers", i}, f...) }
		switch {
		case !reviewNameRE.MatchString(a.Name):
			v.errorf(at("name"), "want [a-z0-9-]{1,64}, got %q", a.Name)
		case seen[a.Name]:
			v.errorf(at("name"), "duplicate analyser %q", a.Name)
		case a.Name == reviewSelf || a.Name == "tiebreaker" || strings.HasPrefix(a.Name, "reviewer-"):
			v.errorf(at("name"), "%q is reserved for the review's own tasks", a.Name)
		}
		seen[a.Name] = true
		switch {
		case (a.Builtin == "") == (a.Agent == ""):
			v.errorf(at(), "set exactly one of builtin and agent")
		case !slices.Contains(Builtins(), a.Builtin) && a.Builtin != "":
			v.errorf(at("builtin"), "unknown built-in %q (want one of %s)", a.Builtin, strings.Join(Builtins(), ", "))
		case a.Builtin != "":
			if len(a.Subscribe) > 0 {
				v.errorf(at("subscribe"), "a built-in analyser cannot react to findings; subscribe an agent")
			}
			a.opts = v.options(a.Builtin, at("with"))
		default:
			if _, ok := c.profile(a.Agent); !ok {
				v.errorf(at("agent"), "unknown agent profile %q", a.Agent)
			}
		}
		for j, p := range a.When.Paths {
			if !ValidGlob(p) {
				v.errorf(at("when", "paths", j), "bad pattern %q", p)
			}
		}
		for j, s := range a.Subscribe {
			if name, ok := strings.CutPrefix(s, "analyser:"); ok {
				if !reviewNameRE.MatchString(name) {
					v.errorf(at("subscribe", j), "bad analyser name in %q", s)
				}
			} else if !findingKindRE.MatchString(s) {
				v.errorf(at("subscribe", j), "bad finding kind %q", s)
			}
		}
	}
	d := &c.Decision
	if d.BlockSeverity == "" {
		d.BlockSeverity = SevHigh
	} else if s, err := ParseSeverity(string(d.BlockSeverity)); err != nil {
		v.errorf(strictyaml.Path{"decision", "block_severity"}, "%v", err)
	} else {
		d.BlockSeverity = s
	}
	if d.MaxBenchRegressionPct == nil {
		ten := 10.0
		d.MaxBenchRegressionPct = &ten
	}
	switch d.APIBreak {
	case "":
		d.APIBreak = APIBreakVersionBump
	case APIBreakBlock, APIBreakVersionBump, APIBreakAllow:
	default:
		v.errorf(strictyaml.Path{"decision", "api_break"}, "want block, version-bump or allow, got %q", d.APIBreak)
	}
	for _, k := range slices.Sorted(maps.Keys(d.Severity)) {
		s, err := ParseSeverity(string(d.Severity[k]))
		if err != nil {
			v.errorf(strictyaml.Path{"decision", "severity", k}, "%v", err)
			continue
		}
		d.Severity[k] = s
	}
	if r := c.Reviewers; r != nil {
		if len(r.Agents) < 2 {
			v.errorf(strictyaml.Path{"reviewers", "agents"}, "an adversarial review needs at least two reviewers, got %d", len(r.Agents))
		}
		for j, a := range r.Agents {
			if _, ok := c.profile(a); !ok {
				v.errorf(strictyaml.Path{"reviewers", "agents", j}, "unknown agent profile %q", a)
			}
		}
		if r.Escalate == "" {
			r.Escalate = EscalateHuman
		} else if _, ok := c.profile(r.Escalate); !ok && r.Escalate != EscalateHuman {
			v.errorf(strictyaml.Path{"reviewers", "escalate"}, "want %q or an agent profile, got %q", EscalateHuman, r.Escalate)
		}
	}
	if len(v.errs) > 0 {
		return errors.Join(v.errs...)
	}
	return nil
}

// profile resolves an agent profile: the config's own, else a built-in.
func (c *Config) profile(name string) (agent.Profile, bool) {
	if p, ok := c.Agents[name]; ok {
		return p, true
	}
	return agent.Builtin(name)
}

// options decodes a built-in's "with:" options, at the path at, strictly
// into the built-in's own options type, and checks the values that type
// alone cannot. A built-in without "with:" gets the zero options.
func (v *validator) options(builtin string, at strictyaml.Path) any {
	var opts any
	switch builtin {
	case BuiltinSecretScan:
		opts = &secretOpts{}
	case BuiltinForbidden:
		opts = &forbiddenOpts{}
	case BuiltinGoTest:
		opts = &goTestOpts{}
	case BuiltinGoBench:
		opts = &goBenchOpts{}
	case BuiltinAPIDiff:
		opts = &apiOpts{}
	case BuiltinDecisions:
		opts = &decisionOpts{}
	default:
		return nil // validate reported it
	}
	if err := v.doc.DecodeAt(at, opts); err != nil {
		// What did not decode would only be reported again below.
		v.add(err)
		return opts
	}
	switch o := opts.(type) {
	case *forbiddenOpts:
		for j, p := range o.Patterns {
			if !slices.Contains(envelope.BuiltinPatterns(), p) {
				v.errorf(slices.Concat(at, strictyaml.Path{"patterns", j}), "unknown forbidden pattern %q (want one of %s)", p, strings.Join(envelope.BuiltinPatterns(), ", "))
			}
		}
	case *secretOpts:
		for _, k := range slices.Sorted(maps.Keys(o.Severity)) {
			if _, err := ParseSeverity(o.Severity[k]); err != nil {
				v.errorf(slices.Concat(at, strictyaml.Path{"severity", k}), "%v", err)
			}
		}
	}
	return opts
}

// selected reports whether the analyser runs on a change with these
// changed paths and tags.
func (w When) selected(paths, tags []string) bool {
	if len(w.Tags) > 0 && !slices.ContainsFunc(w.Tags, func(t string) bool { return slices.Contains(tags, t) }) {
		return false
	}
	if len(w.Paths) == 0 {
		return true
	}
	for _, p := range paths {
		for _, pat := range w.Paths {
			if MatchGlob(pat, p) {
				return true
			}
		}
	}
	return false
}

// MatchGlob reports whether the slash-separated path p matches pattern, by
// doublestar's rules: "*", "?" and classes ("[a-z]", negated with "^" or
// "!") within one path element, "**" as a whole element for any number of
// elements. On top of them, "dir/" matches everything below dir (and dir
// itself), and a pattern without "/" matches the file name in any
// directory ("go.mod" is "**/go.mod"). Braces are literal characters, not
// alternatives: alternatives make matching exponential in their number,
// and review's patterns never had them. A malformed pattern matches
// nothing; ValidGlob tells it.
//
// doublestar keeps one backtracking point per "*" and "**", so matching
// costs at most the pattern's length times the path's, however many "**"
// the pattern has.
func MatchGlob(pattern, p string) bool {
	pattern = literalBraces(pattern)
	if dir, ok := strings.CutSuffix(pattern, "/"); ok {
		pattern = dir + "/**"
	} else if !strings.Contains(pattern, "/") {
		p = path.Base(p)
	}
	ok, err := doublestar.Match(pattern, p)
	return err == nil && ok
}

// ValidGlob reports whether pattern is a well-formed MatchGlob pattern.
func ValidGlob(pattern string) bool {
	return pattern != "" && doublestar.ValidatePattern(literalBraces(pattern))
}

// literalBraces escapes the braces of pattern that are not escaped
// already, so that doublestar matches them as themselves.
func literalBraces(pattern string) string {
	if !strings.ContainsAny(pattern, "{}") {
		return pattern
	}
	var b strings.Builder
	for i := 0; i < len(pattern); i++ {
		switch c := pattern[i]; c {
		case '\\':
			b.WriteByte(c)
			if i+1 < len(pattern) {
				i++
				b.WriteByte(pattern[i])
			}
		case '{', '}':
			b.WriteByte('\\')
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}
