package swarm

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apiary-dev/apiary/internal/board"
	"github.com/apiary-dev/apiary/internal/envelope"
	"github.com/apiary-dev/apiary/internal/git/gittest"
	"github.com/apiary-dev/apiary/internal/swarm/layout"
)

// nearSum is the exported helper the near-duplicate runs start from; Sum
// is on line 4.
const nearSum = "package util\n\n// Sum adds the numbers.\nfunc Sum(xs []int) int {\n\ttotal := 0\n\tfor _, x := range xs {\n\t\ttotal += x\n\t}\n\treturn total\n}\n"

// nearPlan has one task, n, which adds SumFrom — Sum's body starting from
// base instead of 0 — to util/from.go; MERGE is the plan's merge: section.
const nearPlan = "version: 1\nMERGEagents:\n  sh: {kind: command, argv: [sh, AGENT]}\ntasks:\n" +
	"  - {id: n, objective: add SumFrom, agent: sh, write_scope: [util/from.go]}\n"

// runNear runs nearPlan with merge (a merge: section, "" for none) over a
// repository that already holds Sum.
func runNear(t *testing.T, merge string, policy ...layout.MergeOptions) (*swarmFixture, *layout.Record, *Report, string) {
	t.Helper()
	f := newSwarmFixture(t)
	gittest.Commit(t, f.repo, map[string]string{"util/sum.go": nearSum}, nil)
	if merge != "" {
		merge = "merge: " + merge + "\n"
	}
	return runActOn(t, f, strings.Replace(nearPlan, "MERGE", merge, 1), layout.Options{Shards: 1}, policy...)
}

// nearDup returns the one duplicate rep reports, which must be SumFrom's
// near duplicate of the Sum that predates the run.
func nearDup(t *testing.T, rep *Report) Duplicate {
	t.Helper()
	if len(rep.Duplicates) != 1 {
		t.Fatalf("duplicates %+v; want SumFrom's near duplicate of Sum", rep.Duplicates)
	}
	d := rep.Duplicates[0]
	if d.Kind != layout.DupNear || d.Ratio < 0.85 || d.Ratio >= 1 || d.Func.Name != "SumFrom" || d.Func.File != "util/from.go" ||
		d.Of.Name != "Sum" || d.Of.File != "util/sum.go" || d.Of.Line != 4 || d.OfTask != "" || d.Task != layout.TaskID(rep.Run, "n") {
		t.Errorf("duplicate %+v; want SumFrom a near duplicate of Sum (util/sum.go:4), which predates the run", d)
	}
	var b strings.Builder
	if err := rep.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("duplicate (near, %.2f): SumFrom in util/from.go", d.Ratio); !strings.Contains(b.String(), want) {
		t.Errorf("the report does not say %q:\n%s", want, b.String())
	}
	return d
}

// utilNames lists the utility index's function names.
func utilNames(t *testing.T, f *swarmFixture, run string) []string {
	t.Helper()
	us, err := ReadUtils(t.Context(), f.st, run)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, u := range us {
		out = append(out, u.Name)
	}
	return out
}

// TestMergeNearDuplicate: a task adds SumFrom, a near duplicate of the
// exported Sum the repository already has (one token of the body
// changed: the hash differs, the similarity is above the threshold). With
// OnNear reject — from the plan's merge: section, or the merge host's own
// policy over a plan that warns — the attempt is rejected with a receipt
// naming Sum, and the retry, given the hint and the utility index, calls
// Sum. With reuse the copy is integrated and a task that makes it call Sum
// is added and run; with warn (the default) it is integrated and
// reported; under a threshold above its ratio it is no duplicate at all.
func TestMergeNearDuplicate(t *testing.T) {
	t.Parallel()
	reject := func(t *testing.T, merge string, policy ...layout.MergeOptions) {
		f, r, rep, mergeDir := runNear(t, merge, policy...)
		d := nearDup(t, rep)
		if tr := rep.Task("n"); tr.Attempts != 2 || tr.Integrated == "" {
			t.Errorf("n %+v; want rejected once, then integrated", tr)
		}
		b, err := os.ReadFile(filepath.Join(mergeDir, r.Run, "tasks", "n", "rejected-1.json"))
		if err != nil {
			t.Fatal(err)
		}
		rc, err := envelope.DecodeReceipt(b)
		if err != nil {
			t.Fatal(err)
		}
		if rc.Status != envelope.StatusFailed || rc.Gate == nil || rc.Gate.Gate != "duplicate" || rc.Gate.File != "util/from.go" ||
			!strings.Contains(rc.Gate.Detail, "Sum (util/sum.go:4): func Sum(xs []int) int") ||
			!strings.HasPrefix(rc.Reason, fmt.Sprintf("duplicate (near, %.2f): SumFrom in util/from.go repeats Sum", d.Ratio)) {
			t.Errorf("the rejected attempt's receipt %+v gate %+v", rc, rc.Gate)
		}
		if got := gittest.Show(t, f.repo, "main", "util/from.go"); !strings.Contains(got, "return base + Sum(xs)") {
			t.Errorf("util/from.go on main = %q: the retry must call Sum", got)
		}
		if rep.Merge == nil || rep.Merge.DupRejected != 1 || rep.Merge.Duplicates != 1 {
			t.Errorf("merge stats %+v", rep.Merge)
		}
		if names := utilNames(t, f, r.Run); !slices.Equal(names, []string{"Sum"}) {
			t.Errorf("utility index %v; want [Sum]", names)
		}
	}
	t.Run("reject", func(t *testing.T) {
		t.Parallel()
		reject(t, "{on_near: reject}")
	})
	t.Run("reject by the host", func(t *testing.T) {
		t.Parallel()
		reject(t, "{on_near: warn}", layout.MergeOptions{OnNear: layout.DupReject})
	})
	t.Run("reuse", func(t *testing.T) {
		t.Parallel()
		f, r, rep, _ := runNear(t, "{on_near: reuse}")
		nearDup(t, rep)
		if tr := rep.Task("n"); tr.Attempts != 1 || tr.Integrated == "" || rep.Merge == nil || rep.Merge.DupRejected != 0 || rep.Merge.Duplicates != 1 {
			t.Errorf("n %+v, merge %+v; want integrated with its duplicate, not rejected", tr, rep.Merge)
		}
		reuse := rep.Task("reuse-sumfrom")
		if reuse.Status != string(board.TaskDone) || reuse.Integrated == "" || rep.Totals.Tasks != 2 {
			t.Fatalf("the reuse task %+v; tasks %+v", reuse, rep.Tasks)
		}
		bt, err := f.st.Task(t.Context(), layout.TaskID(r.Run, "reuse-sumfrom"))
		if err != nil {
			t.Fatal(err)
		}
		p, err := layout.DecodePayload(bt)
		if err != nil {
			t.Fatal(err)
		}
		if obj := p.Envelope.Objective; !strings.Contains(obj, "Make SumFrom in util/from.go call Sum (util/sum.go)") || !strings.Contains(obj, "near duplicates") ||
			!slices.Equal(p.Envelope.Authority.WriteScope, []string{"util/from.go"}) {
			t.Errorf("the reuse task's objective %q, write scope %v", obj, p.Envelope.Authority.WriteScope)
		}
		if got := gittest.Show(t, f.repo, "main", "util/from.go"); !strings.Contains(got, "return base + Sum(xs)") {
			t.Errorf("util/from.go on main = %q: the reuse task must make SumFrom call Sum", got)
		}
	})
	t.Run("warn", func(t *testing.T) {
		t.Parallel()
		f, r, rep, _ := runNear(t, "")
		nearDup(t, rep)
		if tr := rep.Task("n"); tr.Attempts != 1 || tr.Integrated == "" || rep.Merge == nil || rep.Merge.DupRejected != 0 || rep.Merge.Duplicates != 1 {
			t.Errorf("n %+v, merge %+v; want integrated with its duplicate, not rejected", tr, rep.Merge)
		}
		if rep.Totals.Tasks != 1 {
			t.Errorf("tasks %+v; want no task added", rep.Tasks)
		}
		if got := gittest.Show(t, f.repo, "main", "util/from.go"); !strings.Contains(got, "total := base") {
			t.Errorf("util/from.go on main = %q; want the copy integrated", got)
		}
		// The copy is on the branch but not offered for reuse.
		if names := utilNames(t, f, r.Run); !slices.Equal(names, []string{"Sum"}) {
			t.Errorf("utility index %v; want [Sum]", names)
		}
	})
	t.Run("under the threshold", func(t *testing.T) {
		t.Parallel()
		f, r, rep, _ := runNear(t, "{on_near: reject, near_dup: 0.99}")
		if tr := rep.Task("n"); tr.Attempts != 1 || tr.Integrated == "" || len(rep.Duplicates) != 0 || rep.Merge == nil || rep.Merge.Duplicates != 0 {
			t.Errorf("n %+v, merge %+v, duplicates %+v; want integrated, no duplicate", tr, rep.Merge, rep.Duplicates)
		}
		if names := utilNames(t, f, r.Run); !slices.Equal(names, []string{"SumFrom", "Sum"}) {
			t.Errorf("utility index %v; want [SumFrom Sum] (by file)", names)
		}
	})
}
