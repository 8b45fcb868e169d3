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
	Outcome    string            `json:"outcome"` // approved | blocked | escalated
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
// merge and folds its outcome into rep: reviewers in independent contexts
// (separate processes, homes and sessions; none sees another's answer),
// warned about when they share a profile or model. Unanimous approval
// keeps the merge; unanimous blocking blocks; a disagreement (or a
// reviewer that failed) escalates — to a human, which blocks pending
// their decision, or to a third reviewer, whose verdict settles it.
// Reviewers never turn a block into a merge: the stage runs only after
// the rules passed, and can only confirm or withdraw that merge.
func (rv *reviewRun) adversarial(ctx context.Context, rep *Report) error {
	rc := rv.cfg.Reviewers
	stage := &ReviewerStage{Warnings: rv.reviewerWarnings(rc.Agents)}
	rep.Reviewers = stage
	if err := rundir.WriteJSON(filepath.Join(rv.dir, "findings.json"), rep.Findings); err != nil {
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
			verdicts[i], errs[i] = rv.runReviewer(ctx, "reviewer-"+strconv.Itoa(i+1), prof, objective, "")
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
	switch {
	case approve == len(verdicts):
		stage.Outcome = ReviewersApproved
	case block == len(verdicts):
		stage.Outcome = ReviewersBlocked
	default:
		esc := &Escalation{Reason: fmt.Sprintf("the reviewers disagree: %d approve, %d block, %d failed", approve, block, len(verdicts)-approve-block)}
		stage.Escalation = esc
		if rc.Escalate == EscalateHuman {
			esc.To, esc.Resolution, stage.Outcome = EscalateHuman, "pending", ReviewersEscalated
			break
		}
		esc.To = "reviewer:" + rc.Escalate
		if err := rundir.WriteJSON(filepath.Join(rv.dir, "reviews.json"), verdicts); err != nil {
			return err
		}
		third, err := rv.runReviewer(ctx, "tiebreaker", rc.Escalate, objective, filepath.Join(rv.dir, "reviews.json"))
		if err != nil {
			return err
		}
		stage.Reviews = append(stage.Reviews, third)
		esc.Resolution = third.Verdict
		if third.Verdict == VerdictApprove {
			stage.Outcome = ReviewersApproved
		} else {
			stage.Outcome = ReviewersBlocked
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
	switch stage.Outcome {
	case ReviewersApproved:
		res.Detail = "the reviewers approve"
		if stage.Escalation != nil {
			res.Detail = "the reviewers disagreed; the third reviewer approves"
		}
	case ReviewersBlocked:
		res.Detail = "the reviewers block"
		if stage.Escalation != nil {
			res.Detail = "the reviewers disagreed; the third reviewer blocks"
		}
	default:
		res.Detail = "the reviewers disagree; escalated to a human (pending)"
	}
	rv.mu.Lock()
	rep.Findings = sortedFindings(rv.findings)
	rep.Warnings = append(rep.Warnings, stage.Warnings...)
	rv.mu.Unlock()
	rep.Rules = append(rep.Rules, res)
	rep.Decision = decide(rep.Rules)
	rep.Reasons = reasons(rep.Rules)
	return nil
}

// runReviewer runs one reviewer; a reviewer that fails is a verdict
// (error), not an error of the review.
func (rv *reviewRun) runReviewer(ctx context.Context, name, profile, objective, others string) (ReviewerVerdict, error) {
	start := rv.now()
	v := ReviewerVerdict{Reviewer: name, Profile: profile}
	p, _ := rv.cfg.profile(profile)
	v.Model = p.Model
	dir := filepath.Join(rv.dir, "tasks", name)
	taskID, err := envelope.NewTaskID(start, rv.rnd)
	if err != nil {
		return v, err
	}
	env := rv.envelope(taskID, name, objective, rv.cfg.Reviewers.Budget, profile, true)
	envPath := filepath.Join(dir, "envelope.json")
	if err := rundir.WriteEnvelope(envPath, env, true); err != nil {
		return v, fmt.Errorf("review: reviewer envelope: %w", err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\nYou are %s of apiary review %s, one of several independent reviewers. Your working directory is a read-only checkout of the change's head %s; the change is `git diff %s %s`. Do not modify any file.\n",
		objective, name, rv.id, rv.head, rv.mergeBase, rv.head)
	fmt.Fprintf(&b, "\nTask envelope (JSON): %s\nThe analysers' findings (JSON): %s\n", envPath, filepath.Join(rv.dir, "findings.json"))
	extra := map[string]string{"APIARY_REVIEW_FINDINGS": filepath.Join(rv.dir, "findings.json")}
	if others != "" {
		fmt.Fprintf(&b, "The other reviewers disagree; their answers (JSON) are in %s. Settle it.\n", others)
		extra["APIARY_REVIEWS"] = others
	}
	b.WriteString(reviewerFormat)
	text, usage, err := rv.runAgentRaw(ctx, reviewAgentTask{name: name, profile: profile, taskID: taskID, role: attempt.RoleReviewer,
		dir: dir, envPath: envPath, env: env, prompt: b.String(), budget: env.Budget, extraEnv: extra})
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
		stored, err := rv.addFindings(ctx, name, dir, ans.Objections, nil)
		if err != nil {
			return v, err
		}
		for _, f := range stored {
			v.Objections = append(v.Objections, f.ID)
		}
		run.Findings = len(stored)
	}
	if err := rundir.WriteJSON(filepath.Join(dir, "verdict.json"), v); err != nil {
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
