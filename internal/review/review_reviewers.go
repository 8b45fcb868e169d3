package review

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/apiary-dev/apiary/internal/attempt"
	"github.com/apiary-dev/apiary/internal/board"
	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/rundir"
)

// Reviewer verdicts.
const (
	VerdictApprove = "approve"
	VerdictBlock   = "block"
	VerdictError   = "error" // the reviewer failed or answered nothing usable
)

// Outcomes of the reviewer stage.
const (
	ReviewersApproved  = "approved"
	ReviewersBlocked   = "blocked"
	ReviewersEscalated = "escalated" // awaiting a human
	// ReviewersFailed: no reviewer (or the third reviewer) answered, so
	// no review was done; the review must run again — a person cannot
	// stand in for reviews that never happened.
	ReviewersFailed = "failed"
)

// KindObjection is the finding kind of a reviewer's objections.
const KindObjection = "objection"

// ReviewerVerdict is one reviewer's answer.
type ReviewerVerdict struct {
	Reviewer   string          `json:"reviewer"` // reviewer-1, reviewer-2, ..., tiebreaker
	Profile    string          `json:"profile"`
	Model      string          `json:"model,omitempty"`
	Verdict    string          `json:"verdict"`
	Summary    string          `json:"summary,omitempty"`
	Objections []string        `json:"objections,omitempty"` // finding ids
	Error      string          `json:"error,omitempty"`
	Usage      *envelope.Usage `json:"usage,omitempty"`
}

// Escalation records a disagreement of the reviewers and where it went.
type Escalation struct {
	To         string `json:"to"` // human, or reviewer:<profile>
	Reason     string `json:"reason"`
	Resolution string `json:"resolution"` // pending (a human decides), approve or block
	// By and At record who settled an escalation to a human, and when
	// (see ResolveReview).
	By string `json:"by,omitempty"`
	At string `json:"at,omitempty"` // RFC 3339
}

// ReviewerStage is the adversarial review of a change the rules would
// merge.
type ReviewerStage struct {
	Reviews    []ReviewerVerdict `json:"reviews"`
	Outcome    string            `json:"outcome"` // approved | blocked | escalated | failed
	Escalation *Escalation       `json:"escalation,omitempty"`
	Warnings   []string          `json:"warnings,omitempty"`
}

// reviewerAnswer is the JSON a reviewer returns.
type reviewerAnswer struct {
	Verdict    string    `json:"verdict"`
	Summary    string    `json:"summary"`
	Objections []Finding `json:"objections"`
}

// reviewerFormat is the answer format of reviewers.
const reviewerFormat = `
Answer with JSON only, as your final message (or write it to the file $APIARY_FINDINGS):
{"verdict": "approve" or "block", "summary": "one paragraph", "objections": [{"kind": "objection", "severity": "info|low|medium|high|critical", "file": "path", "line": 1, "evidence": "what is wrong and why"}]}
You can block the change; you cannot merge it: the gates decide that.
`

// defaultReviewerObjective is the reviewers' objective when none is set.
const defaultReviewerObjective = "Review this change adversarially: look for what the analysers missed — wrong behaviour, unhandled cases, misleading names or docs, risky design. Block it if it should not be merged as it is."

// adversarial runs the reviewer stage on a change the rules decided to
// merge (or would, once a person settles what waits for one) and folds its
// outcome into rep. Reviewers work in independent contexts: separate
// processes, checkouts, homes and private directories; none sees anything
// of another until all have answered (see review_private.go). They are
// warned about when they share a profile or model. Unanimous approval
// keeps the merge; a block with no approval blocks; a disagreement, or
// approvals beside failures, escalates — to a human, which blocks pending
// their decision, or to a third reviewer, whose verdict settles it. When
// no reviewer answers the stage failed: nothing was reviewed, and the
// review must run again. Reviewers never turn a block into a merge: the
// stage runs only after the rules passed, and can only confirm or
// withdraw that merge.
func (rv *reviewRun) adversarial(ctx context.Context, rep *Report) error {
	rc := rv.cfg.Reviewers
	stage := &ReviewerStage{Warnings: rv.reviewerWarnings(rc.Agents)}
	rep.Reviewers = stage
	findings, err := json.MarshalIndent(nonNil(rep.Findings), "", "  ")
	if err != nil {
		return err
	}
	if err := rundir.WriteFile(filepath.Join(rv.dir, "findings.json"), append(findings, '\n')); err != nil {
		return err
	}
	objective := rc.Objective
	if objective == "" {
		objective = defaultReviewerObjective
	}
	verdicts := make([]ReviewerVerdict, len(rc.Agents))
	errs := make([]error, len(rc.Agents))
	var wg sync.WaitGroup
	for i, prof := range rc.Agents {
		wg.Add(1)
		go func() {
			defer wg.Done()
			verdicts[i], errs[i] = rv.runReviewer(ctx, "reviewer-"+strconv.Itoa(i+1), prof, objective, findings, nil)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	stage.Reviews = verdicts
	approve, block := 0, 0
	for _, v := range verdicts {
		switch v.Verdict {
		case VerdictApprove:
			approve++
		case VerdictBlock:
			block++
		}
	}
	failed := len(verdicts) - approve - block
	switch {
	case approve+block == 0:
		stage.Outcome = ReviewersFailed
	case approve == len(verdicts):
		stage.Outcome = ReviewersApproved
	case approve == 0:
		stage.Outcome = ReviewersBlocked
	default:
		esc := &Escalation{Reason: fmt.Sprintf("the reviewers disagree: %d approve, %d block, %d failed", approve, block, failed)}
		if block == 0 {
			esc.Reason = fmt.Sprintf("%d reviewer(s) approve but %d failed", approve, failed)
		}
		stage.Escalation = esc
		if rc.Escalate == EscalateHuman {
			esc.To, esc.Resolution, stage.Outcome = EscalateHuman, "pending", ReviewersEscalated
			break
		}
		esc.To = "reviewer:" + rc.Escalate
		reviews, err := json.MarshalIndent(verdicts, "", "  ")
		if err != nil {
			return err
		}
		if err := rundir.WriteFile(filepath.Join(rv.dir, "reviews.json"), append(reviews, '\n')); err != nil {
			return err
		}
		third, err := rv.runReviewer(ctx, "tiebreaker", rc.Escalate, objective, findings, reviews)
		if err != nil {
			return err
		}
		stage.Reviews = append(stage.Reviews, third)
		esc.Resolution = third.Verdict
		switch third.Verdict {
		case VerdictApprove:
			stage.Outcome = ReviewersApproved
		case VerdictBlock:
			stage.Outcome = ReviewersBlocked
		default:
			stage.Outcome = ReviewersFailed
		}
	}
	if stage.Escalation != nil {
		if err := rv.putBoard(ctx, "reviews/"+rv.id+"/escalation", stage.Escalation); err != nil {
			return err
		}
	}
	res := RuleResult{Rule: RuleReviewers, Passed: stage.Outcome == ReviewersApproved}
	for _, v := range stage.Reviews {
		res.Findings = append(res.Findings, v.Objections...)
	}
	settled := ""
	if stage.Escalation != nil {
		settled = "the reviewers disagreed; "
	}
	switch stage.Outcome {
	case ReviewersApproved:
		res.Detail = "the reviewers approve"
		if stage.Escalation != nil {
			res.Detail = settled + "the third reviewer approves"
		}
	case ReviewersBlocked:
		res.Detail = "the reviewers block"
		if stage.Escalation != nil {
			res.Detail = settled + "the third reviewer blocks"
		}
	case ReviewersFailed:
		res.Detail = fmt.Sprintf("every reviewer failed (%d): no review was done; re-run the review", failed)
		if stage.Escalation != nil {
			res.Detail = settled + "the third reviewer failed: no verdict; re-run the review"
		}
	default:
		res.Pending = true
		res.Detail = stage.Escalation.Reason + "; escalated to a human (pending)"
		if block > 0 {
			res.Detail = "the reviewers disagree; escalated to a human (pending)"
		}
	}
	rv.mu.Lock()
	rep.Findings = sortedFindings(rv.findings)
	rep.Warnings = append(rep.Warnings, stage.Warnings...)
	rv.mu.Unlock()
	rep.Rules = append(rep.Rules, res)
	return nil
}

// runReviewer runs one reviewer; a reviewer that fails is a verdict
// (error), not an error of the review. It is given the analysers' findings
// and, for the third reviewer, the others' verdicts, in its private
// directory.
func (rv *reviewRun) runReviewer(ctx context.Context, name, profile, objective string, findings, others []byte) (ReviewerVerdict, error) {
	start := rv.now()
	v := ReviewerVerdict{Reviewer: name, Profile: profile}
	p, _ := rv.cfg.profile(profile)
	v.Model = p.Model
	taskID, err := envelope.NewTaskID(start, rv.rnd)
	if err != nil {
		return v, err
	}
	env := rv.envelope(taskID, name, objective, rv.cfg.Reviewers.Budget, profile, true)
	if err := rv.holdEnvelope(name, env); err != nil {
		return v, err
	}
	t := reviewAgentTask{name: name, profile: profile, taskID: taskID, role: attempt.RoleReviewer, objective: objective,
		env: env, budget: env.Budget, files: map[string][]byte{"findings.json": findings},
		vars: map[string]string{"findings.json": "APIARY_REVIEW_FINDINGS", "reviews.json": "APIARY_REVIEWS"}}
	if others != nil {
		t.files["reviews.json"] = others
	}
	t.prompt = func(pp agentPaths) string {
		var b strings.Builder
		fmt.Fprintf(&b, "%s\n\nYou are %s of apiary review %s, one of several independent reviewers. Your working directory is a read-only checkout of the change's head %s; the change is `git diff %s %s`. Do not modify any file.\n",
			objective, name, rv.id, rv.head, rv.mergeBase, rv.head)
		fmt.Fprintf(&b, "\nTask envelope (JSON): %s\nThe analysers' findings (JSON): %s\n", pp.envelope, pp.files["findings.json"])
		if others != nil {
			fmt.Fprintf(&b, "The other reviewers disagree; their answers (JSON) are in %s. Settle it.\n", pp.files["reviews.json"])
		}
		b.WriteString(reviewerFormat)
		return b.String()
	}
	text, usage, err := rv.runAgentRaw(ctx, t)
	v.Usage = usage
	if ctx.Err() != nil {
		return v, ctx.Err()
	}
	var ans reviewerAnswer
	if err == nil {
		ans, err = parseReviewerAnswer(text)
	}
	run := AnalyserRun{Name: name, Kind: "reviewer", Uses: profile, TaskID: taskID, Status: "ok", Usage: usage}
	if err != nil {
		v.Verdict, v.Error = VerdictError, err.Error()
		run.Status, run.Reason = "failed", err.Error()
	} else {
		v.Verdict, v.Summary = ans.Verdict, attempt.Clip(ans.Summary, 2000)
		stored, err := rv.addFindings(ctx, name, ans.Objections, nil)
		if err != nil {
			return v, err
		}
		for _, f := range stored {
			v.Objections = append(v.Objections, f.ID)
		}
		run.Findings = len(stored)
	}
	if err := rv.holdJSON(name, "verdict.json", v); err != nil {
		return v, err
	}
	run.WallS = rv.now().Sub(start).Seconds()
	rv.record(run)
	return v, nil
}

// parseReviewerAnswer reads a reviewer's JSON answer (see reviewerFormat).
func parseReviewerAnswer(text string) (reviewerAnswer, error) {
	raw := ExtractJSON(text)
	if raw == nil || raw[0] != '{' {
		return reviewerAnswer{}, fmt.Errorf("%w: no JSON verdict in the answer", ErrFinding)
	}
	var a reviewerAnswer
	if err := json.Unmarshal(raw, &a); err != nil {
		return a, fmt.Errorf("%w: %v", ErrFinding, err)
	}
	a.Verdict = strings.ToLower(strings.TrimSpace(a.Verdict))
	if a.Verdict != VerdictApprove && a.Verdict != VerdictBlock {
		return a, fmt.Errorf("%w: verdict %q (want approve or block)", ErrFinding, a.Verdict)
	}
	if len(a.Objections) > MaxFindings {
		return a, fmt.Errorf("%w: %d objections", ErrFinding, len(a.Objections))
	}
	for i := range a.Objections {
		o := &a.Objections[i]
		if o.Kind == "" {
			o.Kind = KindObjection
		}
		o.ID, o.Analyser = "", ""
		if err := o.Normalize(); err != nil {
			return a, fmt.Errorf("objections[%d]: %w", i, err)
		}
	}
	return a, nil
}

// reviewerWarnings warns when reviewers are not independent by
// construction: the same profile, or the same kind and model.
func (rv *reviewRun) reviewerWarnings(profiles []string) []string {
	var out []string
	for i := range profiles {
		for j := i + 1; j < len(profiles); j++ {
			a, b := profiles[i], profiles[j]
			pa, _ := rv.cfg.profile(a)
			pb, _ := rv.cfg.profile(b)
			switch {
			case a == b:
				out = append(out, fmt.Sprintf("reviewer-%d and reviewer-%d share the profile %q: their reviews are not independent", i+1, j+1, a))
			case pa.Kind == pb.Kind && pa.Model == pb.Model:
				model := pa.Model
				if model == "" {
					model = "the default model"
				}
				out = append(out, fmt.Sprintf("reviewer-%d (%s) and reviewer-%d (%s) share the model: %s %s", i+1, a, j+1, b, pa.Kind, model))
			}
		}
	}
	return out
}

// putBoard stores a JSON record on the board, if there is one.
func (rv *reviewRun) putBoard(ctx context.Context, key string, v any) error {
	if rv.opt.Board == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if _, err := rv.opt.Board.Put(ctx, key, b, board.NoLease); err != nil {
		return fmt.Errorf("review: storing %s on the board: %w", key, err)
	}
	return nil
}
