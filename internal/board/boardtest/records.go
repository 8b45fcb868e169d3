package boardtest

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/apiary-dev/apiary/internal/board"
)

func testTasks(t *testing.T, e *env) {
	s := e.connect()
	ctx := e.ctx(t)
	payload := json.RawMessage(`{"objective":"x"}`)
	t1 := must(s.CreateTask(ctx, board.Task{ID: "a/1", Status: board.TaskReady, Tags: []string{"go"}, Payload: payload}))(t)
	_, err := s.CreateTask(ctx, board.Task{ID: "a/1", Status: board.TaskReady})
	wantErr(t, "CreateTask twice", err, board.ErrRevisionMismatch)
	must(s.CreateTask(ctx, board.Task{ID: "b", Status: board.TaskPending, Deps: []string{"a/1"}}))(t)
	_, err = s.CreateTask(ctx, board.Task{ID: "c", Status: "bogus"})
	wantErr(t, "CreateTask with an unknown status", err, board.ErrInvalid)

	got := must(s.Task(ctx, "a/1"))(t)
	if got.Revision != t1.Revision || string(got.Payload) != string(payload) || !slices.Equal(got.Tags, []string{"go"}) {
		t.Fatalf("Task = %+v, want %+v", got, t1)
	}
	got.Status = board.TaskRunning
	t2 := must(s.UpdateTask(ctx, got))(t)
	if t2.Revision <= t1.Revision {
		t.Fatalf("UpdateTask revision %d not above %d", t2.Revision, t1.Revision)
	}
	_, err = s.UpdateTask(ctx, got) // still at t1's revision
	wantErr(t, "UpdateTask from a stale revision", err, board.ErrRevisionMismatch)
	tasks, _ := must2(s.Tasks(ctx))(t)
	if len(tasks) != 2 || tasks[0].ID != "a/1" || tasks[0].Status != board.TaskRunning || tasks[1].ID != "b" {
		t.Fatalf("Tasks = %+v", tasks)
	}
	_, err = s.Task(ctx, "zzz")
	wantErr(t, "Task of a missing id", err, board.ErrNotFound)
}

func testIntents(t *testing.T, e *env) {
	a, b := e.connect(), e.connect()
	ctx := e.ctx(t)
	claim := must(a.Claim(ctx, "t1", "wa", 1, time.Hour))(t)
	in1, earlier := must2(a.DeclareIntent(ctx, board.Intent{
		Task: "t1", Worker: "wa", Base: "abc", Files: []string{"internal/x/a.go", "README.md"},
		Scope: board.ScopeFile, Changes: []board.ChangeKind{board.ChangeModify}, Risk: 0.3, Lease: claim.Lease,
	}))(t)
	if len(earlier) != 0 || in1.Revision == 0 {
		t.Fatalf("first intent: rev %d, earlier %+v", in1.Revision, earlier)
	}
	// A disjoint intent, then one that overlaps by directory scope.
	_, earlier = must2(b.DeclareIntent(ctx, board.Intent{Task: "t2", Worker: "wb", Files: []string{"internal/y/b.go"}, Scope: board.ScopeFile}))(t)
	if len(earlier) != 0 {
		t.Fatalf("disjoint intent overlaps %+v", earlier)
	}
	in3, earlier := must2(b.DeclareIntent(ctx, board.Intent{Task: "t3", Worker: "wb", Files: []string{"internal/x/new.go"}, Scope: board.ScopeDir}))(t)
	if len(earlier) != 1 || earlier[0].Task != "t1" || earlier[0].Worker != "wa" {
		t.Fatalf("dir-scoped intent: earlier = %+v, want t1's", earlier)
	}
	if ov := in3.Overlap(earlier[0]); !slices.Equal(ov, []string{"internal/x/a.go", "internal/x/new.go"}) {
		t.Fatalf("Overlap = %v", ov)
	}
	// The earlier declarer is not told to wait for the later one.
	over := must(a.OverlappingIntents(ctx, in1))(t)
	if len(over) != 1 || over[0].Task != "t3" {
		t.Fatalf("OverlappingIntents(t1) = %+v, want t3's", over)
	}
	// The intent is bound to the claim: it vanishes with it.
	if err := a.Release(ctx, claim); err != nil {
		t.Fatalf("Release: %v", err)
	}
	all := must(b.Intents(ctx))(t)
	if len(all) != 2 || all[0].Task != "t2" || all[1].Task != "t3" {
		t.Fatalf("Intents after the claim ended = %+v", all)
	}
	if err := b.WithdrawIntent(ctx, "t3", "wb"); err != nil {
		t.Fatalf("WithdrawIntent: %v", err)
	}
	wantErr(t, "WithdrawIntent twice", b.WithdrawIntent(ctx, "t3", "wb"), board.ErrNotFound)
	_, _, err := b.DeclareIntent(ctx, board.Intent{Task: "t4", Worker: "w", Scope: "galaxy"})
	wantErr(t, "intent with an unknown scope", err, board.ErrInvalid)
}

func testHints(t *testing.T, e *env) {
	s := e.connect()
	ctx := e.ctx(t)
	c1, first, err := s.RecordConflict(ctx, board.Conflict{Type: "import-order", Tasks: []string{"t2", "t1"}, Files: []string{"go.mod"}, Resolution: "sort imports"})
	if err != nil || !first || c1.ID == "" {
		t.Fatalf("first conflict: %+v first=%v err=%v", c1, first, err)
	}
	again, first, err := s.RecordConflict(ctx, board.Conflict{Type: "import-order", Tasks: []string{"t1", "t2"}, Files: []string{"go.mod"}})
	if err != nil || first || again.ID != c1.ID || again.Resolution != "sort imports" {
		t.Fatalf("same conflict again: %+v first=%v err=%v, want the stored record", again, first, err)
	}
	_, first, err = s.RecordConflict(ctx, board.Conflict{Type: "import-order", Tasks: []string{"t3", "t4"}, Resolution: "other"})
	if err != nil || first {
		t.Fatalf("second conflict of a type: first=%v err=%v, want false", first, err)
	}
	if _, first, err := s.RecordConflict(ctx, board.Conflict{Type: "rename", Tasks: []string{"t5"}, Resolution: "keep old name"}); err != nil || !first {
		t.Fatalf("first conflict of another type: first=%v err=%v", first, err)
	}
	if cs := must(s.Conflicts(ctx))(t); len(cs) != 3 {
		t.Fatalf("Conflicts = %d records, want 3", len(cs))
	}
	queue := must(s.Hints(ctx, board.HintPending))(t)
	if len(queue) != 2 || queue[0].Type != "import-order" || queue[0].Resolution != "sort imports" || queue[0].Conflict != c1.ID || queue[1].Type != "rename" {
		t.Fatalf("review queue = %+v", queue)
	}

	// Two reviewers race: exactly one decision stands.
	var wg sync.WaitGroup
	var mu sync.Mutex
	var wins []board.Hint
	for i, to := range []board.HintState{board.HintApproved, board.HintRejected, board.HintApproved, board.HintRejected} {
		r := e.connect()
		wg.Go(func() {
			h, err := r.ReviewHint(ctx, "import-order", to, fmt.Sprint("rev-", i), "")
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				wins = append(wins, h)
			case !errorIs(err, board.ErrBadTransition):
				t.Errorf("racing review: %v", err)
			}
		})
	}
	wg.Wait()
	if len(wins) != 1 {
		t.Fatalf("%d racing reviews succeeded, want 1", len(wins))
	}
	stored := must(s.Hint(ctx, "import-order"))(t)
	if stored.State != wins[0].State || stored.Reviewer != wins[0].Reviewer {
		t.Fatalf("stored hint %+v, want the winning review %+v", stored, wins[0])
	}

	for _, tc := range []struct {
		typ  string
		to   board.HintState
		want error
	}{
		{"rename", board.HintPending, board.ErrBadTransition},
		{"rename", board.HintApproved, nil},
		{"rename", board.HintRejected, board.ErrBadTransition},
		{"rename", board.HintApproved, board.ErrBadTransition},
		{"missing", board.HintApproved, board.ErrNotFound},
	} {
		_, err := s.ReviewHint(ctx, tc.typ, tc.to, "op", "note")
		if tc.want == nil && err != nil || tc.want != nil && !errorIs(err, tc.want) {
			t.Fatalf("ReviewHint(%s -> %s) = %v, want %v", tc.typ, tc.to, err, tc.want)
		}
	}
	approved := must(s.Hints(ctx, board.HintApproved))(t)
	if n := len(approved); n < 1 || approved[len(approved)-1].Type != "rename" || approved[len(approved)-1].Note != "note" {
		t.Fatalf("approved hints = %+v", approved)
	}
	if q := must(s.Hints(ctx, board.HintPending))(t); len(q) != 0 {
		t.Fatalf("review queue after reviews = %+v", q)
	}
}
