package review

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/apiary-dev/apiary/internal/gate"
	"github.com/apiary-dev/apiary/internal/git"
)

// DefaultConfigPath is where a repository keeps its review configuration.
const DefaultConfigPath = "review.yaml"

// defaultDecisionsDir is where decision records live unless the decisions
// analyser says otherwise.
const defaultDecisionsDir = "docs/decisions"

// loadConfig settles the review's rules. They never come from the change:
// the request's configuration (the operator's, from outside the
// repository), else the configuration file as the base commit has it,
// else the default. A change that edits the file does not change how it
// is reviewed; it is a rules-changed finding instead (see rulesChanged).
func (rv *reviewRun) loadConfig(ctx context.Context) error {
	if rv.req.Config != nil {
		rv.cfg, rv.cfgSource = rv.req.Config, rv.req.Config.File
		return nil
	}
	p := rv.configPath()
	b, err := rv.repo.ReadBlob(ctx, rv.base, p)
	if errors.Is(err, git.ErrNotFound) {
		rv.cfg, rv.cfgSource = DefaultConfig(), "(default: the base "+short(rv.base)+" has no "+p+")"
		return nil
	}
	if err != nil {
		return fmt.Errorf("review: reading %s at the base: %w", p, err)
	}
	name := p + "@" + short(rv.base)
	cfg, err := ParseConfig(name, b)
	if err != nil {
		return fmt.Errorf("%w: the base's configuration: %w", ErrRequest, err)
	}
	rv.cfg, rv.cfgSource = cfg, name
	return nil
}

// configPath is the repository path of the review configuration.
func (rv *reviewRun) configPath() string {
	if p := strings.Trim(path.Clean(rv.req.ConfigPath), "/"); rv.req.ConfigPath != "" && p != "." {
		return p
	}
	return DefaultConfigPath
}

// decisionsDir is the decisions directory of the configuration's
// decisions analyser (the default if it has none).
func decisionsDir(cfg *Config) string {
	for i := range cfg.Analysers {
		if o, ok := cfg.Analysers[i].opts.(*decisionOpts); ok && o.Dir != "" {
			return strings.Trim(path.Clean(o.Dir), "/")
		}
	}
	return defaultDecisionsDir
}

// isRecord reports whether p is a decision record of dir.
func isRecord(p, dir string) bool {
	base := path.Base(p)
	return path.Dir(p) == dir && strings.HasSuffix(base, ".md") && !strings.EqualFold(base, "README.md") && !strings.HasPrefix(base, "_")
}

// rulesChanged reports each path of the change that is one of the review's
// rules: the configuration file and the decision records. The review ran
// with the base's rules; whether the new ones should hold is a person's
// call, so the rules rule waits for one (see Resolve).
func (rv *reviewRun) rulesChanged() []Finding {
	cfgPath := rv.configPath()
	dir := decisionsDir(rv.cfg)
	var out []Finding
	for _, ch := range rv.changes {
		verb := gate.ChangeVerb(ch.Status)
		switch {
		case ch.Path == cfgPath:
			how := "the review ran with the base's version (" + rv.cfgSource + ")"
			if rv.req.Config != nil {
				how = "this review ran with the operator's " + rv.cfgSource + ", but reviews without --config use this file"
			}
			out = append(out, Finding{Kind: KindRulesChanged, Severity: SevHigh, File: ch.Path,
				Evidence: fmt.Sprintf("the change %s the review configuration %s; %s; a person must approve the new rules", verb, ch.Path, how)})
		case isRecord(ch.Path, dir):
			out = append(out, Finding{Kind: KindRulesChanged, Severity: SevHigh, File: ch.Path,
				Evidence: fmt.Sprintf("the change %s the decision record %s; the review checked the change against the base's records; a person must approve the decision", verb, ch.Path)})
		}
	}
	return out
}

// rulesRule is the rules rule: passed when the change leaves the review's
// rules alone, else pending a person.
func rulesRule(fs []Finding) RuleResult {
	res := RuleResult{Rule: RuleRules, Passed: true, Detail: "the change leaves the review's rules alone"}
	var files []string
	for _, f := range fs {
		if f.Kind == KindRulesChanged {
			res.Findings = append(res.Findings, f.ID)
			if !slices.Contains(files, f.File) {
				files = append(files, f.File)
			}
		}
	}
	if len(res.Findings) > 0 {
		res.Passed, res.Pending = false, true
		res.Detail = fmt.Sprintf("the change edits the review's rules (%s): a person must approve it", strings.Join(files, ", "))
	}
	return res
}
