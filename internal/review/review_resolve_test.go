package review

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apiary-dev/apiary/internal/git/gittest"
)

// TestResolveReview: a person settles an escalation. Blocking keeps the
// change out and cannot be resolved twice; approving merges (the rules had
// passed) and --apply integrates it through the runtime; the resolution is
// on the board and in the saved report.
func TestResolveReview(t *testing.T) {
	t.Parallel()
	approve := answer(`{"verdict":"approve","summary":"fine"}`)
	block := answer(`{"verdict":"block","objections":[{"severity":"medium","file":"a.go","line":3,"evidence":"A does nothing"}]}`)
	cfg := mustConfig(t, "agents:\n  a: "+approve+"\n  b: "+block+
		"\nanalysers:\n  - {name: forbidden, builtin: forbidden-patterns}\nreviewers: {agents: [a, b]}\n")
	repo := reviewRepo(t, map[string]string{"a.go": "package a\n"}, map[string]string{"a.go": "package a\n\nfunc A() {}\n"})
	st := localBoard(t)
	at := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	opt := Options{Repo: repo, Board: st, Now: func() time.Time { return at }}
	escalated := func() *Report {
		rep := review(t, opt, Request{Base: "main", Head: "feature", Config: cfg})
		if rep.Decision != Block || rep.Reviewers == nil || rep.Reviewers.Outcome != ReviewersEscalated {
			t.Fatalf("not escalated: %s %+v", rep.Decision, rep.Reviewers)
		}
		return rep
	}
	first, second, third := escalated(), escalated(), escalated()

	// Two people resolving at once: exactly one decides.
	errs := make(chan error, 2)
	for _, v := range []string{VerdictApprove, VerdictBlock} {
		go func() {
			_, err := Resolve(t.Context(), opt, ResolveRequest{ID: third.ReviewID, Verdict: v, By: "p-" + v})
			errs <- err
		}()
	}
	e1, e2 := <-errs, <-errs
	if (e1 == nil) == (e2 == nil) || !errors.Is(errors.Join(e1, e2), ErrNotEscalated) {
		t.Errorf("concurrent resolutions: %v, %v", e1, e2)
	}

	for _, bad := range []ResolveRequest{
		{ID: first.ReviewID, Verdict: "merge", By: "ann"},
		{ID: first.ReviewID, Verdict: VerdictApprove},
		{ID: "20261130-090000-000000", Verdict: VerdictApprove, By: "ann"},
		{ID: "../x", Verdict: VerdictApprove, By: "ann"},
	} {
		if _, err := Resolve(t.Context(), opt, bad); !errors.Is(err, ErrRequest) {
			t.Errorf("%+v: err %v, want ErrReviewRequest", bad, err)
		}
	}

	rep, err := Resolve(t.Context(), opt, ResolveRequest{ID: first.ReviewID, Verdict: VerdictBlock, By: "ann"})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Decision != Block || rep.Reviewers.Outcome != ReviewersBlocked || rep.Applied != nil {
		t.Fatalf("blocked resolution: %s %+v", rep.Decision, rep.Reviewers)
	}
	if _, err := Resolve(t.Context(), opt, ResolveRequest{ID: first.ReviewID, Verdict: VerdictApprove, By: "bob"}); !errors.Is(err, ErrNotEscalated) {
		t.Errorf("second resolution: %v", err)
	}

	rep, err = Resolve(t.Context(), opt, ResolveRequest{ID: second.ReviewID, Verdict: VerdictApprove, By: "ann", Config: cfg, Apply: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Decision != Merge || len(rep.Reasons) != 0 || rep.Reviewers.Outcome != ReviewersApproved {
		t.Fatalf("approved resolution: %s %v %+v", rep.Decision, rep.Reasons, rep.Reviewers)
	}
	if a := rep.Applied; a == nil || a.Status != "succeeded" || a.Commit == "" {
		t.Fatalf("applied %+v", a)
	}
	if got := gittest.Show(t, repo, "main", "a.go"); got != "package a\n\nfunc A() {}\n" {
		t.Errorf("main:a.go = %q", got)
	}
	want := Escalation{To: EscalateHuman, Resolution: VerdictApprove, By: "ann", At: "2026-11-30T09:00:00Z",
		Reason: second.Reviewers.Escalation.Reason}
	kv, err := st.Get(t.Context(), "reviews/"+second.ReviewID+"/escalation")
	var onBoard Escalation
	if err != nil || json.Unmarshal(kv.Value, &onBoard) != nil || onBoard != want {
		t.Errorf("escalation on the board %s (%v), want %+v", kv.Value, err, want)
	}
	var saved Report
	b, err := os.ReadFile(filepath.Join(second.Dir, "report.json"))
	if err != nil || json.Unmarshal(b, &saved) != nil || saved.Decision != Merge || *saved.Reviewers.Escalation != want {
		t.Errorf("saved report: %s (%v)", b, err)
	}
	if md, err := os.ReadFile(filepath.Join(second.Dir, "report.md")); err != nil || !strings.Contains(string(md), "resolution: approve (by ann, 2026-11-30T09:00:00Z)") {
		t.Errorf("report.md:\n%s", md)
	}
}
