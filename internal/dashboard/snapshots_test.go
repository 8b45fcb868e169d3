package dashboard

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// TestWriteSnapshots: count snapshots, a blank line between them; an ended
// context ends it without an error.
func TestWriteSnapshots(t *testing.T) {
	t.Parallel()
	var one bytes.Buffer
	if err := WriteSnapshots(t.Context(), &one, Sources{}, "", time.Millisecond, 1); err != nil {
		t.Fatal(err)
	}
	var two bytes.Buffer
	if err := WriteSnapshots(t.Context(), &two, Sources{}, "", time.Millisecond, 2); err != nil {
		t.Fatal(err)
	}
	// Each snapshot starts with its heading (which has the time).
	if strings.Count(one.String(), "apiary top · ") != 1 || strings.Count(two.String(), "apiary top · ") != 2 ||
		!strings.Contains(two.String(), "\n\napiary top · ") {
		t.Errorf("one snapshot:\n%s\ntwo:\n%s", one.String(), two.String())
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := WriteSnapshots(ctx, &bytes.Buffer{}, Sources{}, "", time.Hour, 0); err != nil {
		t.Errorf("an ended context: %v", err)
	}
}
