package runs

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestCancelAsOperatorNoRun: a run the repository does not have is an
// error naming it, and nothing is recorded.
func TestCancelAsOperatorNoRun(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	_, idle, err := CancelAsOperator(t.Context(), root, "20261202-003423-375598", "", "", time.Second, time.Now())
	if idle || err == nil || !strings.Contains(err.Error(), "no run 20261202-003423-375598 in "+root) {
		t.Errorf("idle %v, err %v", idle, err)
	}
}

// TestCancelResultText: what was cancelled, then what had finished and
// what is still going, each sorted by name; Complete only when neither.
func TestCancelResultText(t *testing.T) {
	t.Parallel()
	r := &CancelResult{Cancelled: []string{"a", "b"}, AckMs: 12.34}
	if !r.Complete() {
		t.Error("a clean cancellation is not complete")
	}
	r.Finished = map[string]string{"z": "succeeded", "y": "succeeded"}
	r.Pending = map[string]string{"c": "pid 42"}
	var b bytes.Buffer
	if err := r.WriteText(&b, "task a", time.Minute); err != nil {
		t.Fatal(err)
	}
	want := "cancelled task a: 2 task(s) [a b], every process gone, in 12.3 ms\n" +
		"not cancelled: y had already finished: succeeded\nnot cancelled: z had already finished: succeeded\n" +
		"still going after 1m0s: c: pid 42\n"
	if b.String() != want || r.Complete() {
		t.Errorf("got:\n%s\nwant:\n%s(complete %v)", b.String(), want, r.Complete())
	}
}
