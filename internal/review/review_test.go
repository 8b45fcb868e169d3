package review

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apiary-dev/apiary/internal/attempt"
	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/git"
	"github.com/apiary-dev/apiary/internal/git/gittest"
	"github.com/apiary-dev/apiary/internal/rundir"
)

// answer is a command agent that writes a fixed JSON answer to
// $APIARY_FINDINGS.
func answer(json string) string {
	return "{kind: command, argv: [sh, -c, " + strconvQuote(`printf '%s' '`+json+`' > "$APIARY_FINDINGS"`) + "]}"
}

func strconvQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestReviewSubscriptions runs agent analysers as tasks on a read-only
// checkout, stores their findings on a real board and has a subscriber
// react to one of them in the bounded second round.
func TestReviewSubscriptions(t *testing.T) {
	t.Parallel()
	repo := reviewRepo(t, map[string]string{"db.go": "package db\n"},
		map[string]string{"db.go": "package db\n\nfunc Q(s string) string { return \"SELECT \" + s }\n"})
	flagger := `printf '{"findings":[{"kind":"injection","severity":"high","file":"db.go","line":3,"evidence":"query built by concatenation"}]}' > "$APIARY_FINDINGS"`
	reactor := `n=$(grep -c '"kind": "injection"' "$APIARY_SUBSCRIBED") && ` +
		`printf '{"findings":[{"kind":"test-suggestion","severity":"info","file":"db.go","line":3,"evidence":"a test for %s finding(s)"}]}' "$n" > "$APIARY_FINDINGS"`
	cfg := mustConfig(t, `
agents:
  flagger: {kind: command, argv: [sh, -c, `+strconvQuote(flagger)+`]}
  reactor: {kind: command, argv: [sh, -c, `+strconvQuote(reactor)+`]}
analysers:
  - {name: flagger, agent: flagger}
  - {name: secrets, builtin: secret-scan}
  - {name: reactor, agent: reactor, subscribe: [injection]}
  - {name: idle, agent: reactor, subscribe: ["analyser:nobody"]}
  - {name: docs-only, builtin: decisions, when: {paths: ["*.md"]}}
decision: {block_severity: critical}
`)
	st := localBoard(t)
	var seen []string
	rep := review(t, Options{Repo: repo, Board: st, Secrets: newScanner(t), OnAnalyser: func(r AnalyserRun) { seen = append(seen, r.Name) }},
		Request{Base: "main", Head: "feature", Config: cfg})
	if rep.Decision != Merge {
		t.Fatalf("decision %s: %v", rep.Decision, rep.Reasons)
	}
	inj := rep.Finding("flagger/1")
	if inj == nil || inj.Severity != SevHigh || inj.Kind != "injection" || inj.Where() != "db.go:3" {
		t.Fatalf("flagger finding %+v", inj)
	}
	react := rep.Finding("reactor/1")
	if react == nil || !slices.Equal(react.Cites, []string{"flagger/1"}) || react.Evidence != "a test for 1 finding(s)" {
		t.Fatalf("reaction %+v", react)
	}
	status := map[string]string{}
	for _, a := range rep.Analysers {
		status[a.Name] = a.Status + "/" + string(rune('0'+a.Round))
	}
	want := map[string]string{"flagger": "ok/1", "secrets": "ok/1", "reactor": "ok/2", "idle": "skipped/2", "docs-only": "skipped/0"}
	for k, v := range want {
		if status[k] != v {
			t.Errorf("analyser %s: %s, want %s (all: %v)", k, status[k], v, status)
		}
	}
	if len(seen) != 4 {
		t.Errorf("OnAnalyser saw %v", seen)
	}
	// The findings are on the board, under the review's prefix.
	kvs, _, err := st.List(t.Context(), "reviews/"+rep.ReviewID+"/")
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, kv := range kvs {
		keys = append(keys, strings.TrimPrefix(kv.Key, "reviews/"+rep.ReviewID+"/"))
	}
	if !slices.Equal(keys, []string{"decision", "findings/flagger/0001", "findings/reactor/0001"}) {
		t.Errorf("board keys %v", keys)
	}
	// Each analyser was a task with an envelope: references, no write scope.
	for _, name := range []string{"flagger", "secrets", "reactor"} {
		b, err := os.ReadFile(filepath.Join(rep.Dir, "tasks", name, "envelope.json"))
		if err != nil {
			t.Fatal(err)
		}
		env, err := envelope.DecodeEnvelope(b)
		if err != nil {
			t.Fatal(err)
		}
		if env.Inputs.Workspace != "git:"+rep.Head || len(env.Authority.WriteScope) != 0 || env.RunID != rep.ReviewID || !slices.Equal(env.Inputs.Paths, []string{"db.go"}) {
			t.Errorf("%s envelope %+v", name, env)
		}
	}
	for _, f := range []string{"report.json", "report.md"} {
		if _, err := os.Stat(filepath.Join(rep.Dir, f)); err != nil {
			t.Error(err)
		}
	}
	if _, err := os.Stat(filepath.Join(repo.Dir(), rundir.StateDir, "worktrees", "review-"+rep.ReviewID)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the review's checkouts were left behind: %v", err)
	}
	if out := gittest.Git(t, repo.Dir(), "worktree", "list", "--porcelain"); strings.Count(out, "worktree ") != 1 {
		t.Errorf("worktrees left:\n%s", out)
	}
}

// TestReviewReviewers covers the adversarial stage: unanimous approval
// keeps the merge, a disagreement escalates (to a human: blocked pending;
// to a third reviewer: settled by it), and reviewers never run — so never
// merge — when the rules block.
func TestReviewReviewers(t *testing.T) {
	t.Parallel()
	approve := answer(`{"verdict":"approve","summary":"looks right"}`)
	block := answer(`{"verdict":"block","summary":"no","objections":[{"severity":"medium","file":"a.go","line":1,"evidence":"misleading name"}]}`)
	third := func(verdict string) string {
		return "{kind: command, argv: [sh, -c, " + strconvQuote(`grep -q '"verdict": "block"' "$APIARY_REVIEWS" && printf '{"verdict":"`+verdict+`"}' > "$APIARY_FINDINGS"`) + "]}"
	}
	tests := []struct {
		name      string
		agents    string
		reviewers string
		secret    bool
		decision  string
		outcome   string // "" when the stage must not run
		esc       *Escalation
		reviews   int
		warnings  int
	}{
		{name: "unanimous approval", agents: "a: " + approve + "\n  b: " + approve, reviewers: "{agents: [a, b]}",
			decision: Merge, outcome: ReviewersApproved, reviews: 2, warnings: 1},
		{name: "disagreement to a human", agents: "a: " + approve + "\n  b: " + block, reviewers: "{agents: [a, b]}",
			decision: Block, outcome: ReviewersEscalated, esc: &Escalation{To: EscalateHuman, Resolution: "pending"}, reviews: 2, warnings: 1},
		{name: "third reviewer approves", agents: "a: " + approve + "\n  b: " + block + "\n  c: " + third("approve"), reviewers: "{agents: [a, b], escalate: c}",
			decision: Merge, outcome: ReviewersApproved, esc: &Escalation{To: "reviewer:c", Resolution: VerdictApprove}, reviews: 3, warnings: 1},
		{name: "third reviewer blocks", agents: "a: " + approve + "\n  b: " + block + "\n  c: " + third("block"), reviewers: "{agents: [a, b], escalate: c}",
			decision: Block, outcome: ReviewersBlocked, esc: &Escalation{To: "reviewer:c", Resolution: VerdictBlock}, reviews: 3, warnings: 1},
		{name: "same profile", agents: "a: " + approve, reviewers: "{agents: [a, a]}",
			decision: Merge, outcome: ReviewersApproved, reviews: 2, warnings: 1},
		{name: "gates block first", agents: "a: " + approve + "\n  b: " + approve, reviewers: "{agents: [a, b]}", secret: true,
			decision: Block, outcome: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			head := map[string]string{"a.go": "package a\n\nfunc A() {}\n"}
			if tt.secret {
				head["key.txt"] = "token = sk-proj-" + "Qm7Rt2Vx9Lp4Wz8Kc3Nd6Hf1" + "Bj5Gs0Ty7Ua2Ie4Ox9Pr3Sl6" + "\n"
			}
			repo := reviewRepo(t, map[string]string{"a.go": "package a\n"}, head)
			cfg := mustConfig(t, "agents:\n  "+tt.agents+"\nanalysers:\n  - {name: secrets, builtin: secret-scan}\nreviewers: "+tt.reviewers+"\n")
			st := localBoard(t)
			rep := review(t, Options{Repo: repo, Board: st, Secrets: newScanner(t)}, Request{Base: "main", Head: "feature", Config: cfg})
			if rep.Decision != tt.decision {
				t.Fatalf("decision %s, want %s: %v", rep.Decision, tt.decision, rep.Reasons)
			}
			s := rep.Reviewers
			if tt.outcome == "" {
				if s != nil || rep.Rule(RuleReviewers) != nil {
					t.Fatalf("reviewers ran on a blocked change: %+v", s)
				}
				return
			}
			if s == nil || s.Outcome != tt.outcome || len(s.Reviews) != tt.reviews || len(s.Warnings) != tt.warnings {
				t.Fatalf("stage %+v", s)
			}
			if r := rep.Rule(RuleReviewers); r == nil || r.Passed != (tt.decision == Merge) {
				t.Errorf("reviewers rule %+v", r)
			}
			kv, err := st.Get(t.Context(), "reviews/"+rep.ReviewID+"/escalation")
			switch {
			case tt.esc == nil:
				if s.Escalation != nil || err == nil {
					t.Errorf("escalation %+v (board: %v)", s.Escalation, err)
				}
			default:
				if s.Escalation == nil || s.Escalation.To != tt.esc.To || s.Escalation.Resolution != tt.esc.Resolution {
					t.Fatalf("escalation %+v, want %+v", s.Escalation, tt.esc)
				}
				var onBoard Escalation
				if err != nil || json.Unmarshal(kv.Value, &onBoard) != nil || onBoard != *s.Escalation {
					t.Errorf("escalation on the board %s (%v)", kv.Value, err)
				}
			}
			for _, v := range s.Reviews {
				if v.Verdict == VerdictBlock && v.Reviewer != "tiebreaker" {
					if len(v.Objections) != 1 || rep.Finding(v.Objections[0]) == nil || rep.Finding(v.Objections[0]).Kind != KindObjection {
						t.Errorf("objections of %s: %v", v.Reviewer, v.Objections)
					}
				}
			}
		})
	}
}

// TestReviewReadOnly: an analyser cannot change the tree under review
// unnoticed. Without privileges the checkout's permissions refuse the
// write (the analyser fails); as root they do not, and the review's
// integrity check after the round reports the modified checkout. Either
// way the change is blocked.
func TestReviewReadOnly(t *testing.T) {
	t.Parallel()
	repo := reviewRepo(t, map[string]string{"a.txt": "a\n"}, map[string]string{"a.txt": "b\n"})
	vandal := `echo x >> a.txt && echo x > new.txt && printf '{"findings": []}' > "$APIARY_FINDINGS"`
	cfg := mustConfig(t, "agents:\n  vandal: {kind: command, argv: [sh, -c, "+strconvQuote(vandal)+"]}\n"+
		"analysers:\n  - {name: vandal, agent: vandal}\n")
	rep := review(t, Options{Repo: repo}, Request{Base: "main", Head: "feature", Config: cfg})
	if rep.Decision != Block {
		t.Fatalf("decision %s", rep.Decision)
	}
	denied, noticed := rep.Finding("vandal/1"), rep.Finding("review/1")
	switch {
	case os.Geteuid() != 0:
		if denied == nil || denied.Kind != KindAnalyserError || noticed != nil {
			t.Errorf("without privileges the write must fail: %+v, %+v", denied, noticed)
		}
	default:
		if noticed == nil || noticed.Kind != KindCheckoutModified || !strings.Contains(noticed.Evidence, "a.txt, new.txt") {
			t.Errorf("as root the write must be noticed: %+v (findings %+v)", noticed, rep.Findings)
		}
	}

	// A reviewer that approves but writes to the checkout does not get the
	// change merged either.
	approve := `echo x >> a.txt; printf '{"verdict": "approve"}' > "$APIARY_FINDINGS"`
	cfg = mustConfig(t, "agents:\n  vandal: {kind: command, argv: [sh, -c, "+strconvQuote(approve)+"]}\n  ok: "+answer(`{"verdict":"approve"}`)+"\n"+
		"analysers: []\nreviewers: {agents: [vandal, ok]}\n")
	rep = review(t, Options{Repo: repo}, Request{Base: "main", Head: "feature", Config: cfg})
	if rep.Decision != Block || rep.Reviewers == nil {
		t.Fatalf("decision %s, reviewers %+v", rep.Decision, rep.Reviewers)
	}
	if os.Geteuid() == 0 {
		if r := rep.Rule(RuleIntegrity); r == nil || r.Passed || len(r.Findings) != 1 {
			t.Errorf("integrity rule %+v", r)
		}
	} else if rep.Reviewers.Outcome != ReviewersEscalated {
		t.Errorf("the failed reviewer should escalate: %+v", rep.Reviewers)
	}
}

// TestReviewAnalyserFailure: a broken analyser blocks the change (fail
// closed) unless it is optional.
func TestReviewAnalyserFailure(t *testing.T) {
	t.Parallel()
	for _, optional := range []bool{false, true} {
		repo := reviewRepo(t, map[string]string{"a.txt": "a\n"}, map[string]string{"a.txt": "b\n"})
		cfg := mustConfig(t, "agents:\n  crash: {kind: command, argv: [sh, -c, 'echo boom >&2; exit 3']}\n  mute: {kind: command, argv: [sh, -c, 'true']}\n"+
			"analysers:\n  - {name: crash, agent: crash, optional: "+map[bool]string{false: "false", true: "true"}[optional]+"}\n  - {name: mute, agent: mute, optional: true}\n")
		rep := review(t, Options{Repo: repo}, Request{Base: "main", Head: "feature", Config: cfg})
		want := Block
		if optional {
			want = Merge
		}
		if rep.Decision != want {
			t.Errorf("optional=%v: decision %s: %v", optional, rep.Decision, rep.Reasons)
		}
		f := rep.Finding("crash/1")
		if f == nil || f.Kind != KindAnalyserError || !strings.Contains(f.Evidence, "exited 3") {
			t.Errorf("crash finding %+v", f)
		}
		if m := rep.Finding("mute/1"); m == nil || m.Kind != KindAnalyserError || m.Severity != SevLow || !strings.Contains(m.Evidence, "no answer") {
			t.Errorf("mute finding %+v", m)
		}
	}
}

// TestReviewPatchApply reviews a patch file and applies the merge through
// the runtime: a one-task run whose receipt and trailers say so.
func TestReviewPatchApply(t *testing.T) {
	t.Parallel()
	repo := reviewRepo(t, map[string]string{"a.go": "package a\n", "b.go": "package a\n"}, map[string]string{"a.go": "package a\n\n// A is new.\nfunc A() {}\n"})
	patch := filepath.Join(t.TempDir(), "change.patch")
	if err := os.WriteFile(patch, []byte(gittest.Git(t, repo.Dir(), "diff", "main", "feature")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gittest.Git(t, repo.Dir(), "branch", "-D", "feature")
	before := gittest.Git(t, repo.Dir(), "rev-parse", "main")
	cfg := mustConfig(t, "analysers:\n  - {name: forbidden, builtin: forbidden-patterns}\napply:\n  checks: [\"grep -q 'func A' a.go\"]\n")
	rep := review(t, Options{Repo: repo}, Request{Base: "main", Patch: patch, Config: cfg, Apply: true})
	if rep.Decision != Merge || rep.Applied == nil || rep.Applied.Status != "succeeded" || rep.Applied.Integrated != attempt.FastForward {
		t.Fatalf("decision %s applied %+v", rep.Decision, rep.Applied)
	}
	if got := gittest.Show(t, repo, "main", "a.go"); got != "package a\n\n// A is new.\nfunc A() {}\n" {
		t.Errorf("main:a.go = %q", got)
	}
	after := gittest.Git(t, repo.Dir(), "rev-parse", "main")
	if after != rep.Applied.Commit || gittest.Git(t, repo.Dir(), "rev-parse", "main^") != before {
		t.Errorf("main moved %s → %s, applied %s", before, after, rep.Applied.Commit)
	}
	tr, err := repo.Trailers(t.Context(), "main")
	if err != nil {
		t.Fatal(err)
	}
	if task, _ := git.TrailerValue(tr, git.TrailerTask); task != applyTask {
		t.Errorf("trailers %+v", tr)
	}
	if rc, err := rundir.Open(repo.Dir(), rep.Applied.Run).Task(applyTask).Receipt(); err != nil || rc == nil || rc.Status != envelope.StatusSucceeded || len(rc.Checks) != 1 || rc.Checks[0].Exit != 0 {
		t.Errorf("receipt %+v", rc)
	}
	if ref := gittest.Git(t, repo.Dir(), "rev-parse", "refs/apiary/reviews/"+rep.ReviewID); ref != rep.Head {
		t.Errorf("the patch head %s is not kept (ref %s)", rep.Head, ref)
	}
	// The same patch no longer applies to the new main.
	_, err = Run(t.Context(), Options{Repo: repo}, Request{Base: "main", Patch: patch, Config: cfg})
	if !errors.Is(err, ErrPatch) {
		t.Errorf("re-applying the patch: %v, want ErrReviewPatch", err)
	}
}

func TestReviewRequestErrors(t *testing.T) {
	t.Parallel()
	repo := reviewRepo(t, map[string]string{"a": "a\n"}, map[string]string{"a": "b\n"})
	for _, req := range []Request{
		{Head: "feature"},
		{Base: "main"},
		{Base: "main", Head: "feature", Patch: "x.patch"},
		{Base: "nope", Head: "feature"},
		{Base: "main", Head: "nope"},
		{Base: "main", Patch: "/does/not/exist.patch"},
		{Base: "main", Head: "feature", ID: "../escape"},
	} {
		if _, err := Run(t.Context(), Options{Repo: repo}, req); !errors.Is(err, ErrRequest) {
			t.Errorf("%+v: %v, want ErrReviewRequest", req, err)
		}
	}
	if _, err := Run(t.Context(), Options{}, Request{Base: "main", Head: "feature"}); !errors.Is(err, ErrRequest) {
		t.Errorf("no repository: %v", err)
	}
}
