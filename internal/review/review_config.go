package review

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/apiary-dev/apiary/internal/agent"
	"github.com/apiary-dev/apiary/internal/envelope"
)

// ErrConfig is wrapped by every problem of a review configuration.
var ErrConfig = errors.New("review: invalid review configuration")

// ConfigError locates one problem in a review configuration.
type ConfigError struct {
	File  string
	Line  int // 1-based; 0 if unknown
	Field string
	Msg   string
}

func (e *ConfigError) Error() string {
	loc := e.File
	if e.Line > 0 {
		loc += ":" + strconv.Itoa(e.Line)
	}
	if e.Field != "" {
		return loc + ": " + e.Field + ": " + e.Msg
	}
	return loc + ": " + e.Msg
}

func (e *ConfigError) Unwrap() error { return ErrConfig }

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
	Optional bool      `yaml:"optional"`
	With     yaml.Node `yaml:"with"` // the built-in's options

	opts any // the decoded options of a built-in
}

// When selects the changes an analyser runs on: some changed path matches
// one of Paths (globs: "*" within a path element, "**" across elements, a
// pattern without "/" matches a file name anywhere, "dir/" everything
// below dir) and, if Tags is set, the change carries one of them. Empty
// means always.
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
	BlockSeverity Severity `yaml:"block_severity"`
	// MinCoverageDelta: the total coverage may drop at most this much
	// (percentage points, e.g. -1); nil: no coverage rule.
	MinCoverageDelta *float64 `yaml:"min_coverage_delta"`
	// MaxBenchRegressionPct: a benchmark significantly slower by more than
	// this (percent) blocks; default 10; negative: no benchmark rule.
	MaxBenchRegressionPct *float64 `yaml:"max_bench_regression_pct"`
	// APIBreak: block, version-bump (default) or allow.
	APIBreak string `yaml:"api_break"`
	// Severity overrides the severity of findings by kind.
	Severity map[string]Severity `yaml:"severity"`
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

// DefaultConfig is the configuration used when a repository has
// none: every built-in but the benchmark comparison, the Go ones only on
// changes to Go files, and the default rules.
func DefaultConfig() *Config {
	goFiles := When{Paths: []string{"*.go", "go.mod", "go.sum"}}
	c := &Config{File: "(default)", Version: 1, Analysers: []AnalyserConfig{
		{Name: "secrets", Builtin: BuiltinSecretScan},
		{Name: "forbidden", Builtin: BuiltinForbidden},
		{Name: "tests", Builtin: BuiltinGoTest, When: goFiles},
		{Name: "api", Builtin: BuiltinAPIDiff, When: When{Paths: []string{"*.go"}}},
		{Name: "decisions", Builtin: BuiltinDecisions},
	}}
	if err := c.validate(nil); err != nil {
		panic(err) // a bug in the defaults
	}
	return c
}

var (
	reviewNameRE  = regexp.MustCompile(`^[a-z0-9-]{1,64}$`)
	findingKindRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._/-]{0,63}$`)
)

// ParseConfig reads a review configuration (YAML or JSON) and
// validates it; every problem is reported with its line, joined in one
// error whose parts are *ReviewConfigError.
func ParseConfig(file string, data []byte) (*Config, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, &ConfigError{File: file, Line: yamlErrLine(err), Msg: err.Error()}
	}
	if root.Kind == 0 || len(root.Content) == 0 {
		return nil, &ConfigError{File: file, Msg: "empty document"}
	}
	doc := root.Content[0]
	if doc.Kind != yaml.MappingNode {
		return nil, &ConfigError{File: file, Line: doc.Line, Msg: "the document must be a mapping"}
	}
	var errs []error
	errs = append(errs, unknownKeys(file, "", doc, "version", "agents", "analysers", "decision", "reviewers", "apply")...)
	for _, sec := range []struct {
		key  string
		keys []string
	}{
		{"decision", []string{"block_severity", "min_coverage_delta", "max_bench_regression_pct", "api_break", "severity"}},
		{"reviewers", []string{"agents", "objective", "escalate", "budget"}},
		{"apply", []string{"branch", "checks", "check_timeout_s"}},
	} {
		if n := child(doc, sec.key); n != nil {
			errs = append(errs, unknownKeys(file, sec.key, n, sec.keys...)...)
		}
	}
	if list := child(doc, "analysers"); list != nil && list.Kind == yaml.SequenceNode {
		for i, n := range list.Content {
			errs = append(errs, unknownKeys(file, fmt.Sprintf("analysers[%d]", i), n,
				"name", "builtin", "agent", "objective", "when", "subscribe", "budget", "optional", "with")...)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	c := &Config{File: file}
	if err := doc.Decode(c); err != nil {
		return nil, &ConfigError{File: file, Line: yamlErrLine(err), Msg: strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	if err := c.validate(doc); err != nil {
		return nil, err
	}
	return c, nil
}

// validate checks c and decodes the built-ins' options; doc (nil for a
// config built in code) gives the lines.
func (c *Config) validate(doc *yaml.Node) error {
	var errs []error
	bad := func(n *yaml.Node, field, format string, args ...any) {
		line := 0
		if n != nil {
			line = n.Line
		}
		errs = append(errs, &ConfigError{File: c.File, Line: line, Field: field, Msg: fmt.Sprintf(format, args...)})
	}
	if c.Version == 0 {
		c.Version = 1
	}
	if c.Version != 1 {
		bad(child(doc, "version"), "version", "unsupported version %d (want 1)", c.Version)
	}
	names := make([]string, 0, len(c.Agents))
	for n := range c.Agents {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		p := c.Agents[n]
		p.Name = n
		c.Agents[n] = p
		if !reviewNameRE.MatchString(strings.ReplaceAll(n, "_", "-")) {
			bad(child(child(doc, "agents"), n), "agents."+n, "profile names are [a-z0-9_-]{1,64}")
		}
		if err := p.Validate(); err != nil {
			bad(child(child(doc, "agents"), n), "agents."+n, "%v", err)
		}
	}
	seen := map[string]bool{}
	list := child(doc, "analysers")
	for i := range c.Analysers {
		a := &c.Analysers[i]
		n := item(list, i)
		field := fmt.Sprintf("analysers[%d]", i)
		switch {
		case !reviewNameRE.MatchString(a.Name):
			bad(n, field+".name", "want [a-z0-9-]{1,64}, got %q", a.Name)
		case seen[a.Name]:
			bad(n, field+".name", "duplicate analyser %q", a.Name)
		case a.Name == reviewSelf || a.Name == "tiebreaker" || strings.HasPrefix(a.Name, "reviewer-"):
			bad(n, field+".name", "%q is reserved for the review's own tasks", a.Name)
		}
		seen[a.Name] = true
		switch {
		case (a.Builtin == "") == (a.Agent == ""):
			bad(n, field, "set exactly one of builtin and agent")
		case !slices.Contains(Builtins(), a.Builtin) && a.Builtin != "":
			bad(n, field+".builtin", "unknown built-in %q (want one of %s)", a.Builtin, strings.Join(Builtins(), ", "))
		case a.Builtin != "":
			if len(a.Subscribe) > 0 {
				bad(n, field+".subscribe", "a built-in analyser cannot react to findings; subscribe an agent")
			}
			opts, err := decodeOpts(a.Builtin, &a.With)
			var ce *ConfigError
			switch {
			case errors.As(err, &ce):
				bad(&yaml.Node{Line: ce.Line}, field+".with."+ce.Field, "%s", ce.Msg)
			case err != nil:
				bad(n, field+".with", "%v", err)
			}
			a.opts = opts
		default:
			if _, ok := c.profile(a.Agent); !ok {
				bad(n, field+".agent", "unknown agent profile %q", a.Agent)
			}
		}
		for _, p := range a.When.Paths {
			if _, err := path.Match(strings.ReplaceAll(p, "**", "*"), ""); err != nil || p == "" {
				bad(n, field+".when.paths", "bad pattern %q", p)
			}
		}
		for _, s := range a.Subscribe {
			if name, ok := strings.CutPrefix(s, "analyser:"); ok {
				if !reviewNameRE.MatchString(name) {
					bad(n, field+".subscribe", "bad analyser name in %q", s)
				}
			} else if !findingKindRE.MatchString(s) {
				bad(n, field+".subscribe", "bad finding kind %q", s)
			}
		}
	}
	dn := child(doc, "decision")
	d := &c.Decision
	if d.BlockSeverity == "" {
		d.BlockSeverity = SevHigh
	} else if s, err := ParseSeverity(string(d.BlockSeverity)); err != nil {
		bad(child(dn, "block_severity"), "decision.block_severity", "%v", err)
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
		bad(child(dn, "api_break"), "decision.api_break", "want block, version-bump or allow, got %q", d.APIBreak)
	}
	for k, v := range d.Severity {
		s, err := ParseSeverity(string(v))
		if err != nil {
			bad(child(child(dn, "severity"), k), "decision.severity."+k, "%v", err)
			continue
		}
		d.Severity[k] = s
	}
	if r := c.Reviewers; r != nil {
		rn := child(doc, "reviewers")
		if len(r.Agents) < 2 {
			bad(child(rn, "agents"), "reviewers.agents", "an adversarial review needs at least two reviewers, got %d", len(r.Agents))
		}
		for _, a := range r.Agents {
			if _, ok := c.profile(a); !ok {
				bad(child(rn, "agents"), "reviewers.agents", "unknown agent profile %q", a)
			}
		}
		if r.Escalate == "" {
			r.Escalate = EscalateHuman
		} else if _, ok := c.profile(r.Escalate); !ok && r.Escalate != EscalateHuman {
			bad(child(rn, "escalate"), "reviewers.escalate", "want %q or an agent profile, got %q", EscalateHuman, r.Escalate)
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
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

// decodeOpts decodes a built-in's "with:" options strictly.
func decodeOpts(builtin string, n *yaml.Node) (any, error) {
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
		return nil, fmt.Errorf("unknown built-in %q (want one of %s)", builtin, strings.Join(Builtins(), ", "))
	}
	if n.Kind == 0 {
		return opts, nil
	}
	if n.Kind != yaml.MappingNode {
		return nil, errors.New("want a mapping")
	}
	if errs := unknownKeys("", "", n, yamlKeys(opts)...); len(errs) > 0 {
		return nil, errs[0]
	}
	if err := n.Decode(opts); err != nil {
		return nil, errors.New(strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if o, ok := opts.(*forbiddenOpts); ok {
		for _, p := range o.Patterns {
			if !slices.Contains(envelope.BuiltinPatterns(), p) {
				return nil, fmt.Errorf("unknown forbidden pattern %q", p)
			}
		}
	}
	if o, ok := opts.(*secretOpts); ok {
		for _, v := range o.Severity {
			if _, err := ParseSeverity(v); err != nil {
				return nil, err
			}
		}
	}
	return opts, nil
}

// yamlKeys lists the yaml keys of a pointer to an options struct.
func yamlKeys(v any) []string {
	switch v.(type) {
	case *secretOpts:
		return []string{"max_file_bytes", "severity"}
	case *forbiddenOpts:
		return []string{"patterns", "sealed"}
	case *goTestOpts:
		return []string{"packages", "args", "timeout_s"}
	case *goBenchOpts:
		return []string{"packages", "pattern", "benchtime", "count", "alpha", "timeout_s"}
	case *apiOpts:
		return []string{"include_internal", "version_files"}
	case *decisionOpts:
		return []string{"dir"}
	}
	return nil
}

// unknownKeys reports the keys of mapping n that are not allowed.
func unknownKeys(file, field string, n *yaml.Node, allowed ...string) []error {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	var errs []error
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if !slices.Contains(allowed, k.Value) {
			f := k.Value
			if field != "" {
				f = field + "." + f
			}
			errs = append(errs, &ConfigError{File: file, Line: k.Line, Field: f,
				Msg: fmt.Sprintf("unknown field (want one of %s)", strings.Join(allowed, ", "))})
		}
	}
	return errs
}

// child returns the value of key in mapping n, or nil.
func child(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// item returns element i of sequence n, or nil.
func item(n *yaml.Node, i int) *yaml.Node {
	if n == nil || n.Kind != yaml.SequenceNode || i >= len(n.Content) {
		return nil
	}
	return n.Content[i]
}

var yamlLineRE = regexp.MustCompile(`line (\d+)`)

// yamlErrLine extracts the first line number of a yaml error.
func yamlErrLine(err error) int {
	if m := yamlLineRE.FindStringSubmatch(err.Error()); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n
	}
	return 0
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

// MatchGlob reports whether the slash-separated path p matches pattern:
// "*", "?" and classes within one path element (path.Match), "**" for any
// number of elements, "dir/" for everything below dir, and a pattern
// without "/" against the file name in any directory.
func MatchGlob(pattern, p string) bool {
	if dir, ok := strings.CutSuffix(pattern, "/"); ok {
		return strings.HasPrefix(p, dir+"/") || MatchGlob(dir+"/**", p)
	}
	if !strings.Contains(pattern, "/") { // the file name, in any directory
		ok, err := path.Match(pattern, path.Base(p))
		return err == nil && ok
	}
	return matchParts(strings.Split(pattern, "/"), strings.Split(p, "/"))
}

// matchParts matches path elements against pattern elements by dynamic
// programming (so "**" costs O(len(pat)·len(parts)), never exponential):
// ok[j] says whether the pattern elements so far match parts[:j].
func matchParts(pat, parts []string) bool {
	ok := make([]bool, len(parts)+1)
	ok[0] = true
	for _, pe := range pat {
		next := make([]bool, len(parts)+1)
		if pe == "**" {
			reach := false
			for j := range ok {
				reach = reach || ok[j]
				next[j] = reach
			}
		} else {
			for j := 1; j <= len(parts); j++ {
				if ok[j-1] {
					m, err := path.Match(pe, parts[j-1])
					next[j] = err == nil && m
				}
			}
		}
		ok = next
	}
	return ok[len(parts)]
}
