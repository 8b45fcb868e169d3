package runs

import (
	"bytes"
	"strings"
	"testing"
)

func TestPendingAndEscrowTable(t *testing.T) {
	t.Parallel()
	reqs := []EscrowRequest{
		{ID: "a-1", State: EscrowPending, Run: "r", Task: "a", Kind: EscrowCommand, Operation: "git push"},
		{ID: "a-2", State: "approved", Run: "r", Task: "a", Kind: EscrowTool, Operation: "rw.move"},
	}
	p := Pending(reqs)
	if len(p) != 1 || p[0].ID != "a-1" {
		t.Errorf("pending %+v", p)
	}
	if Pending(nil) != nil {
		t.Error("no requests pend")
	}
	var b bytes.Buffer
	if err := WriteEscrowTable(&b, reqs); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "ID") || !strings.Contains(lines[1], "command: git push") || !strings.Contains(lines[2], "tool: rw.move") {
		t.Errorf("table:\n%s", b.String())
	}
}
