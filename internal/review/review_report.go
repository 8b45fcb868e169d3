package review

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apiary-dev/apiary/internal/attempt"
	"github.com/apiary-dev/apiary/internal/rundir"
)

// Report is the outcome of a review: the change, every finding (each
// with an id the rules and the reviewers cite), the rules' verdicts, the
// decision and why, the analysers that ran, the decisions the change
// touches, the reviewer stage and, with --apply, how the change was
// integrated. It is written to .apiary/reviews/<id>/report.json and, as
// Markdown (WriteMarkdown), report.md.
type Report struct {
	ReviewID  string        `json:"review_id"`
	Repo      string        `json:"repo"`
	BaseRef   string        `json:"base_ref"`
	HeadRef   string        `json:"head_ref,omitempty"`
	Patch     string        `json:"patch,omitempty"`
	Base      string        `json:"base"`
	MergeBase string        `json:"merge_base"`
	Head      string        `json:"head"`
	Changes   []ChangedPath `json:"changes"`
	Tags      []string      `json:"tags,omitempty"`
	Decision  string        `json:"decision"` // merge | block
	Reasons   []string      `json:"reasons"`  // the failed rules
	// Next is what a blocked review waits for: NextResolve (a person,
	// apiary review resolve) or NextRerun (every reviewer failed); ""
	// when it merges or only a new version of the change can pass.
	Next  string       `json:"next,omitempty"`
	Rules []RuleResult `json:"rules"`
	// Config says where the rules came from (never the change); the
	// decision rules it set are Thresholds.
	Config     string            `json:"config"`
	Thresholds *DecisionRules    `json:"thresholds"`
	Findings   []Finding         `json:"findings"`
	Analysers  []AnalyserRun     `json:"analysers"`
	Decisions  []TouchedDecision `json:"decisions"`
	Reviewers  *ReviewerStage    `json:"reviewers,omitempty"`
	Applied    *AppliedChange    `json:"applied,omitempty"`
	Warnings   []string          `json:"warnings,omitempty"`
	Started    time.Time         `json:"started"`
	WallS      float64           `json:"wall_s"`
	Dir        string            `json:"dir"`
	// MAC authenticates the report: an HMAC-SHA256 with the review key
	// over the report without it (see Seal). Resolve refuses a report
	// whose MAC does not verify.
	MAC string `json:"mac"`
}

// ChangedPath is one changed path.
type ChangedPath struct {
	Status string `json:"status"` // A, D, M, T
	Path   string `json:"path"`
}

// TouchedDecision is a decision record the change touches.
type TouchedDecision struct {
	ID       string `json:"id"`
	Finding  string `json:"finding"`
	Evidence string `json:"evidence"`
}

// Finding returns the finding with id, or nil.
func (r *Report) Finding(id string) *Finding {
	for i := range r.Findings {
		if r.Findings[i].ID == id {
			return &r.Findings[i]
		}
	}
	return nil
}

// Rule returns the named rule's result, or nil.
func (r *Report) Rule(name string) *RuleResult {
	for i := range r.Rules {
		if r.Rules[i].Rule == name {
			return &r.Rules[i]
		}
	}
	return nil
}

// sortedFindings returns a copy of fs in report order.
func sortedFindings(fs []Finding) []Finding {
	out := slices.Clone(fs)
	SortFindings(out)
	return nonNil(out)
}

// currentFindings returns the findings so far, in report order.
func (rv *reviewRun) currentFindings() []Finding {
	rv.mu.Lock()
	defer rv.mu.Unlock()
	return sortedFindings(rv.findings)
}

// report applies the rules to the findings so far.
func (rv *reviewRun) report() *Report {
	rv.mu.Lock()
	defer rv.mu.Unlock()
	rep := &Report{ReviewID: rv.id, Repo: rv.root, BaseRef: rv.req.Base, HeadRef: rv.req.Head, Patch: rv.req.Patch,
		Base: rv.base, MergeBase: rv.mergeBase, Head: rv.head, Tags: rv.tags, Findings: sortedFindings(rv.findings),
		Started: rv.started.UTC(), Dir: rv.dir, Changes: []ChangedPath{}, Decisions: []TouchedDecision{}}
	for _, c := range rv.changes {
		rep.Changes = append(rep.Changes, ChangedPath{Status: string(c.Status), Path: c.Path})
	}
	_, rep.Rules = EvaluateRules(rv.cfg.Decision, rep.Findings)
	rep.Rules = append(rep.Rules, rulesRule(rep.Findings))
	rep.Decision, rep.Reasons = decide(rep.Rules), nonNil(reasons(rep.Rules))
	rep.Next = nextStep(rep.Rules, nil)
	th := rv.cfg.Decision
	rep.Config, rep.Thresholds = rv.cfgSource, &th
	for _, f := range rep.Findings {
		if f.Kind == KindDecision && len(f.Decisions) > 0 {
			rep.Decisions = append(rep.Decisions, TouchedDecision{ID: f.Decisions[0], Finding: f.ID, Evidence: f.Evidence})
		}
	}
	return rep
}

// save completes the report's analyser list and writes report.json and
// report.md; the decision goes to the board too.
func (rv *reviewRun) save(ctx context.Context, rep *Report) error {
	rv.mu.Lock()
	runs := append(slices.Clone(rv.runs), rv.skippedRuns()...)
	rep.Findings = sortedFindings(rv.findings)
	rv.mu.Unlock()
	slices.SortStableFunc(runs, func(a, b AnalyserRun) int {
		if a.Round != b.Round {
			return a.Round - b.Round
		}
		return strings.Compare(a.Name, b.Name)
	})
	rep.Analysers = runs
	return rv.writeReport(ctx, rep)
}

// writeReport seals the report with the review key and writes report.json
// and report.md, and the decision to the board.
func (rv *reviewRun) writeReport(ctx context.Context, rep *Report) error {
	if err := rep.Seal(rv.key); err != nil {
		return err
	}
	if err := rundir.WriteJSON(filepath.Join(rv.dir, "report.json"), rep); err != nil {
		return err
	}
	var md bytes.Buffer
	if err := rep.WriteMarkdown(&md); err != nil {
		return err
	}
	if err := rundir.WriteFile(filepath.Join(rv.dir, "report.md"), md.Bytes()); err != nil {
		return err
	}
	return rv.putBoard(ctx, "reviews/"+rv.id+"/decision", map[string]any{
		"decision": rep.Decision, "reasons": rep.Reasons, "base": rep.MergeBase, "head": rep.Head})
}

// WriteMarkdown renders the report for people: the decision and its
// reasons, every rule, every finding (id, severity, kind, place, evidence,
// analyser), the analysers, the decisions touched, the reviewers and how
// the change was applied.
func (r *Report) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# apiary review %s: %s\n\n", r.ReviewID, strings.ToUpper(r.Decision))
	head := r.HeadRef
	if r.Patch != "" {
		head = "patch " + r.Patch
	}
	fmt.Fprintf(&b, "Change: %s (%s) → %s (%s), %d path(s) changed", short(r.MergeBase), r.BaseRef, short(r.Head), head, len(r.Changes))
	if len(r.Tags) > 0 {
		fmt.Fprintf(&b, "; tags %s", strings.Join(r.Tags, ", "))
	}
	b.WriteString(".\n\n")
	if r.Decision == Merge {
		b.WriteString("**Decision: merge** — every rule passed.\n")
	} else {
		b.WriteString("**Decision: block**\n\n")
		for _, s := range r.Reasons {
			fmt.Fprintf(&b, "- %s\n", mdText(s))
		}
		switch r.Next {
		case NextResolve:
			fmt.Fprintf(&b, "\nNext: a person decides — `apiary review resolve %s approve` or `block`.\n", r.ReviewID)
		case NextRerun:
			b.WriteString("\nNext: every reviewer failed, so no review was done — re-run the review.\n")
		}
	}
	fmt.Fprintf(&b, "\nRules from: %s.\n", mdText(r.Config))
	b.WriteString("\n## Rules\n\n| rule | result | detail | findings |\n|---|---|---|---|\n")
	for _, rr := range r.Rules {
		res := "pass"
		switch {
		case rr.Pending:
			res = "**awaiting a person**"
		case !rr.Passed:
			res = "**fail**"
		case rr.By != "":
			res = "pass (" + mdText(rr.By) + ")"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", rr.Rule, res, mdCell(rr.Detail), mdCell(strings.Join(rr.Findings, ", ")))
	}
	fmt.Fprintf(&b, "\n## Findings (%d)\n\n", len(r.Findings))
	if len(r.Findings) == 0 {
		b.WriteString("None.\n")
	} else {
		b.WriteString("| id | severity | kind | where | evidence | suggested action | analyser |\n|---|---|---|---|---|---|---|\n")
		for _, f := range r.Findings {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n", f.ID, f.Severity, f.Kind, mdCell(f.Where()), mdCell(attempt.Clip(f.Evidence, 400)),
				mdCell(attempt.Clip(f.Action, 200)), f.Analyser)
		}
	}
	b.WriteString("\n## Analysers\n\n| analyser | kind | uses | round | status | findings | wall |\n|---|---|---|---|---|---|---|\n")
	for _, a := range r.Analysers {
		st := a.Status
		if a.Reason != "" {
			st += ": " + attempt.Clip(a.Reason, 200)
		}
		round := "–"
		if a.Round > 0 {
			round = strconv.Itoa(a.Round)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %d | %.1fs |\n", a.Name, a.Kind, a.Uses, round, mdCell(st), a.Findings, a.WallS)
	}
	if len(r.Decisions) > 0 {
		b.WriteString("\n## Decisions touched\n\n")
		for _, d := range r.Decisions {
			fmt.Fprintf(&b, "- %s — %s (%s)\n", d.ID, mdText(d.Evidence), d.Finding)
		}
	}
	if s := r.Reviewers; s != nil {
		fmt.Fprintf(&b, "\n## Reviewers: %s\n\n", s.Outcome)
		for _, v := range s.Reviews {
			fmt.Fprintf(&b, "- %s (%s", v.Reviewer, v.Profile)
			if v.Model != "" {
				fmt.Fprintf(&b, ", %s", v.Model)
			}
			fmt.Fprintf(&b, "): **%s**", v.Verdict)
			if v.Summary != "" {
				fmt.Fprintf(&b, " — %s", mdText(attempt.Clip(v.Summary, 400)))
			}
			if v.Error != "" {
				fmt.Fprintf(&b, " — %s", mdText(attempt.Clip(v.Error, 400)))
			}
			if len(v.Objections) > 0 {
				fmt.Fprintf(&b, " (objections %s)", strings.Join(v.Objections, ", "))
			}
			b.WriteString("\n")
		}
		if e := s.Escalation; e != nil {
			by := ""
			if e.By != "" {
				by = " (by " + mdText(e.By) + ", " + e.At + ")"
			}
			fmt.Fprintf(&b, "\nEscalated to %s: %s; resolution: %s%s.\n", e.To, mdText(e.Reason), e.Resolution, by)
		}
	}
	if a := r.Applied; a != nil {
		fmt.Fprintf(&b, "\n## Applied\n\nRun %s on %s: %s", a.Run, a.Branch, a.Status)
		if a.Commit != "" {
			fmt.Fprintf(&b, ", commit %s (%s)", short(a.Commit), a.Integrated)
		}
		if a.Reason != "" {
			fmt.Fprintf(&b, " — %s", mdText(a.Reason))
		}
		b.WriteString(".\n")
	}
	if len(r.Warnings) > 0 {
		b.WriteString("\n## Warnings\n\n")
		for _, wn := range r.Warnings {
			fmt.Fprintf(&b, "- %s\n", mdText(wn))
		}
	}
	fmt.Fprintf(&b, "\nReport: %s\n", filepath.Join(r.Dir, "report.json"))
	_, err := io.WriteString(w, b.String())
	return err
}

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// mdCell makes text safe inside a Markdown table cell.
func mdCell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	s = strings.ReplaceAll(s, "\r", "")
	return strings.ReplaceAll(strings.TrimSpace(s), "\n", "<br>")
}

// mdText keeps text on one line.
func mdText(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
