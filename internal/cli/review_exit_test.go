package cli

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/apiary-dev/apiary/internal/review"
)

// TestReviewExit: what apiary review and apiary review resolve end with
// maps to 0 merge, 1 blocked, 2 usage, 3 failure; Main exits with that
// status through exitStatusError.
func TestReviewExit(t *testing.T) {
	t.Parallel()
	e := &env{Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}}
	merged := &review.Report{ReviewID: "r", Decision: review.Merge}
	blocked := &review.Report{ReviewID: "r", Decision: review.Block}
	for _, tt := range []struct {
		name string
		err  error
		want int
	}{
		{"merge", printReview(e, merged, nil, false), 0},
		{"blocked", printReview(e, blocked, nil, true), 1},
		{"bad request", printReview(e, nil, fmt.Errorf("%w: head %q", review.ErrRequest, "nope"), false), 2},
		{"bad configuration", printReview(e, nil, &review.ConfigError{File: "review.yaml", Line: 3, Msg: "bad"}, false), 2},
		{"not awaiting a person", printReview(e, nil, review.ErrNotEscalated, false), 2},
		{"forged report", printReview(e, nil, fmt.Errorf("%w: its MAC does not match", review.ErrForged), false), 3},
		{"infrastructure", printReview(e, nil, errors.New("git: exit 128"), false), 3},
		{"apply failed after merge", printReview(e, merged, review.ErrApply, false), 3},
		{"usage", usagef("--base must not be empty"), 2},
	} {
		if got := reviewExit(tt.err); got != tt.want {
			t.Errorf("%s: exit %d, want %d (%v)", tt.name, got, tt.want, tt.err)
		}
	}
}
