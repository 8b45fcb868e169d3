package calc

import (
	"strings"
	"testing"
)

func TestSession(t *testing.T) {
	var out strings.Builder
	if err := Run(strings.NewReader("x = 2\n\nx * 3\ny\n"), &out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || lines[0] != "x = 2" || lines[1] != "6" || !strings.HasPrefix(lines[2], "error: ") {
		t.Fatalf("Run wrote %q", out.String())
	}
}
