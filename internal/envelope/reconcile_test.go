package envelope

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// TestReconcileEnvelope: a reconciliation envelope carries its conflict by
// reference and round-trips; a malformed commit id is rejected.
func TestReconcileEnvelope(t *testing.T) {
	t.Parallel()
	e := validEnvelope(t)
	e.Reconcile = &Reconcile{Task: "docs-b", Base: sha1, Head: strings.Repeat("a", 40), Candidate: strings.Repeat("b", 40),
		Paths: []string{"README.md"}, Conflict: "CONFLICT (contents): Merge conflict in README.md"}
	b, err := EncodeEnvelope(e)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeEnvelope(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Reconcile, e.Reconcile) {
		t.Errorf("reconcile = %+v, want %+v", got.Reconcile, e.Reconcile)
	}
	e.Reconcile = &Reconcile{Task: "x", Base: sha1, Head: "HEAD", Candidate: sha1}
	if _, err := EncodeEnvelope(e); !errors.Is(err, ErrInvalid) {
		t.Errorf("head %q accepted: %v", "HEAD", err)
	}
}
