package cli

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A gateway whose ledger holds virtual keys must substitute real ones: with
// no real key it refuses to start, in one line naming the variable.
func TestGatewayRefusesVirtualKeysWithoutRealKey(t *testing.T) {
	ledger := filepath.Join(t.TempDir(), "state.db")
	var out, errb bytes.Buffer
	if code := Main(t.Context(), []string{"gateway", "key", "create", "--ledger", ledger, "--agent", "a1"}, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("key create: exit %d: %s", code, errb.String())
	}
	t.Setenv("ANTHROPIC_API_KEY", "")
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	out.Reset()
	errb.Reset()
	code := Main(ctx, []string{"gateway", "--ledger", ledger, "--listen", "127.0.0.1:0", "--upstream", "anthropic=http://127.0.0.1:1"}, strings.NewReader(""), &out, &errb)
	msg := strings.TrimSpace(errb.String())
	if code != exitFailure || !strings.Contains(msg, "ANTHROPIC_API_KEY") || strings.Count(msg, "\n") > 0 || strings.Contains(out.String(), "listening") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out.String(), msg)
	}
}
