package durable

import (
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"

	"go.yaml.in/yaml/v3"
)

// policyFile is the policy's name inside the state directory.
const policyFile = "policy.yaml"

// scoreUnit is the fixed-point scale of risk scores: 1.0 == 10000, so
// weights and thresholds add exactly (0.35 + 0.35 is exactly 0.70 = high).
const scoreUnit = 10000

// pattern is one named detector of a family.
type pattern struct {
	family, name string
	re           *regexp.Regexp
	fast         func(s string) [][2]int // nil: use re
}

// sizeRule adds a fixed score when a size metric strictly exceeds gt.
type sizeRule struct {
	name, key string // key: total_bytes, max_line_len, line_count
	gt        int
	score     int // in scoreUnit
	action    Action
}

// policy is a compiled classifier policy: defaults merged with overrides.
type policy struct {
	patterns    []pattern
	weights     map[string]int // family → weight in scoreUnit
	high        int
	medium      int
	low         int
	retryBudget int
	disabled    map[string]bool
}

var defaultWeights = map[string]int{
	"api_key": 3500, "github_pat": 3500, "jwt": 2500, "pem_block": 5000,
	"aws_secret": 4000, "pii": 1500, "binary_hint": 2000,
}

var sizeRules = []sizeRule{
	{"big_100kb", "total_bytes", 100_000, 1500, ActionSplit},
	{"big_500kb", "total_bytes", 500_000, 3000, ActionSplit},
	{"long_line", "max_line_len", 2_000, 2000, ActionEscape},
	{"many_lines", "line_count", 5_000, 1000, ActionSplit},
}

// defaultPatterns returns the shipped detectors in Resilient Write's order.
// The regular expressions are RE2 transcriptions of its Python ones (its
// only lookahead, openai_key's (?!ant-|proj-), is implied by the character
// class excluding "-"). Every detector has a scanner with identical
// leftmost-first matches (fuzzed against the regexp) that skips through the
// text on one rare byte instead of running 19 regexps over all of it.
func defaultPatterns() []pattern {
	mk := func(family, name, src string, fast func(string) [][2]int) pattern {
		return pattern{family: family, name: name, re: regexp.MustCompile(src), fast: fast}
	}
	// lit builds a pattern starting with a literal, scanned by its byte at
	// offset trig (chosen to be rare in prose and code).
	lit := func(family, name, literal string, trig int, src string) pattern {
		return mk(family, name, src, literalScan(literal, trig, regexp.MustCompile("^"+src)))
	}
	return []pattern{
		lit("api_key", "anthropic_oat", "sk-ant-oat", 2, `sk-ant-oat\d+-[A-Za-z0-9_\-]{40,}`),
		lit("api_key", "anthropic_api", "sk-ant-api", 2, `sk-ant-api\d+-[A-Za-z0-9_\-]{40,}`),
		lit("api_key", "openai_project_key", "sk-proj-", 2, `sk-proj-[A-Za-z0-9_\-]{40,}`),
		lit("api_key", "openai_key", "sk-", 2, `sk-[A-Za-z0-9]{30,}`),
		lit("api_key", "datadog_client_key", "pub", 2, `pub[a-f0-9]{32}`),
		lit("api_key", "statsig_client_key", "client-", 6, `client-[A-Za-z0-9]{30,}`),
		lit("api_key", "aws_access_key_id", "AKIA", 1, `AKIA[0-9A-Z]{16}`),
		mk("api_key", "bearer_token", `(?i)bearer\s+[A-Za-z0-9\-_\.=]{20,}`, scanBearer),
		lit("github_pat", "gho", "gho_", 3, `gho_[A-Za-z0-9]{36}`),
		lit("github_pat", "ghp", "ghp_", 3, `ghp_[A-Za-z0-9]{36}`),
		lit("github_pat", "ghu", "ghu_", 3, `ghu_[A-Za-z0-9]{36}`),
		lit("github_pat", "ghs", "ghs_", 3, `ghs_[A-Za-z0-9]{36}`),
		lit("github_pat", "ghr", "ghr_", 3, `ghr_[A-Za-z0-9]{36}`),
		lit("jwt", "jwt_triplet", "eyJ", 2, `eyJ[A-Za-z0-9_\-]+\.eyJ[A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]+`),
		lit("pem_block", "pem_private_key", "-----BEGIN ", 7, `-----BEGIN [A-Z ]+ PRIVATE KEY-----`),
		mk("aws_secret", "aws_secret_access_key", `(?i)aws_secret_access_key["'\s:=]+[A-Za-z0-9/+=]{40}`, scanAWSSecret),
		mk("pii", "email", `[A-Za-z0-9._%+\-]+@[A-Za-z0-9.\-]+\.[A-Za-z]{2,}`, scanEmail),
		mk("pii", "ssn", `\b\d{3}-\d{2}-\d{4}\b`, scanSSN),
		mk("binary_hint", "long_base64_blob", `[A-Za-z0-9+/=]{200,}`, scanBase64),
	}
}

// defaultPolicy compiles the shipped policy. The result is immutable.
func defaultPolicy() *policy {
	return &policy{
		patterns: defaultPatterns(), weights: defaultWeights,
		high: 7000, medium: 4000, low: 1000, retryBudget: 3, disabled: map[string]bool{},
	}
}

// verdict maps an exact score to safe, low, medium or high.
func (p *policy) verdict(score int) string {
	switch {
	case score >= p.high:
		return "high"
	case score >= p.medium:
		return "medium"
	case score >= p.low:
		return "low"
	}
	return "safe"
}

// loadPolicy reads the policy override (RW_POLICY_FILE, else
// <state>/policy.yaml) and merges it into the defaults. A missing file means
// defaults. Bad YAML, a non-mapping document or a bad regex is
// policy_violation/encoding, as in Resilient Write. The file is re-read on
// every call so edits apply at once.
func (w *Workspace) loadPolicy(base *policy) (*policy, error) {
	var data []byte
	var err error
	var where string
	switch pf := w.cfg.PolicyFile; {
	case pf != "" && filepath.IsAbs(pf):
		where = pf
		data, err = os.ReadFile(pf)
	case pf != "":
		where = filepath.ToSlash(pf)
		data, _, err = readChecked(w.ws().r, filepath.ToSlash(filepath.Clean(pf)), where, 1<<20)
	default:
		where = w.statePath(policyFile)
		data, _, err = readChecked(w.ws().r, where, where, 1<<20)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return base, nil
	}
	if err != nil {
		return nil, fsError(err, where)
	}
	var doc any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, encodingErr("yaml_error: "+err.Error(), map[string]any{"path": where})
	}
	if doc == nil {
		return base, nil
	}
	m, ok := doc.(map[string]any)
	if !ok {
		return nil, encodingErr("policy_yaml_not_mapping", map[string]any{"path": where})
	}
	return mergePolicy(base, m)
}

// mergePolicy applies the override keys Resilient Write understands;
// unknown keys are ignored. Extended patterns' weights are ignored (a
// workspace cannot amplify its own families); new families score 0.
func mergePolicy(base *policy, m map[string]any) (*policy, error) {
	p := *base
	p.disabled = map[string]bool{}
	if th, ok := m["thresholds"].(map[string]any); ok {
		for k, v := range th {
			f, ok := toFloat(v)
			if !ok {
				continue
			}
			u := int(math.Round(f * scoreUnit))
			switch k {
			case "high":
				p.high = u
			case "medium":
				p.medium = u
			case "low":
				p.low = u
			}
		}
	}
	if rb, ok := m["retry_budget"].(map[string]any); ok {
		if d, ok := rb["default"].(int); ok {
			p.retryBudget = d
		}
	}
	if dis, ok := m["disable_families"].([]any); ok {
		for _, f := range dis {
			if s, ok := f.(string); ok {
				p.disabled[s] = true
			}
		}
	}
	if ext, ok := m["extend_patterns"].(map[string]any); ok {
		p.patterns = append([]pattern{}, base.patterns...)
		for _, family := range sortedKeys(ext) {
			entries, ok := ext[family].([]any)
			if !ok {
				continue
			}
			for _, e := range entries {
				em, ok := e.(map[string]any)
				if !ok {
					continue
				}
				name, _ := em["name"].(string)
				src, _ := em["regex"].(string)
				if name == "" || src == "" {
					continue
				}
				re, err := regexp.Compile(src)
				if err != nil {
					return nil, encodingErr("bad_regex: "+err.Error(), map[string]any{"family": family, "name": name})
				}
				p.patterns = append(p.patterns, pattern{family: family, name: name, re: re})
			}
		}
	}
	return &p, nil
}

// toFloat accepts YAML ints and floats.
func toFloat(v any) (float64, bool) {
	switch n := v.(type) {
	case int:
		return float64(n), true
	case float64:
		return n, true
	}
	return 0, false
}
