package bench

import (
	"bytes"
	"strings"
	"testing"
)

// TestWriteOverhead: a line per phase, the gateway's additions, and the
// stream memory only when streams were measured.
func TestWriteOverhead(t *testing.T) {
	t.Parallel()
	res := OverheadResult{Rate: 100, Phases: []OverheadPhase{{Path: "direct", Requests: 10}, {Path: "gateway", Stream: true, Requests: 10}}}
	var b bytes.Buffer
	WriteOverhead(&b, res)
	out := b.String()
	if !strings.Contains(out, "direct") || !strings.Contains(out, "added by the gateway at 100 req/s") || strings.Contains(out, "concurrent streams") {
		t.Errorf("without streams:\n%s", out)
	}
	res.Streams = 5
	b.Reset()
	WriteOverhead(&b, res)
	if !strings.Contains(b.String(), "5 concurrent streams") {
		t.Errorf("with streams:\n%s", b.String())
	}
}
