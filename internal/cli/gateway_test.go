package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The ledger's path: the config file's gateway.ledger when it names one,
// else the per-user state path — never a file in the working directory.
func TestGatewayLedgerPath(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
	t.Chdir(dir)
	for _, tc := range []struct {
		name, yaml, want string
	}{
		{"unset", "gateway:\n  listen: 127.0.0.1:0\n", filepath.Join(dir, "state", "apiary", "state.db")},
		{"named", "gateway:\n  listen: 127.0.0.1:0\n  ledger: " + filepath.Join(dir, "mine.db") + "\n", filepath.Join(dir, "mine.db")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := filepath.Join(dir, tc.name+".yaml")
			if err := os.WriteFile(cfg, []byte(tc.yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			var out, errb bytes.Buffer
			done := make(chan int, 1)
			go func() {
				done <- Main(ctx, []string{"gateway", "--config", cfg, "--upstream", "anthropic=http://127.0.0.1:1"}, strings.NewReader(""), &out, &errb)
			}()
			for {
				if _, err := os.Stat(tc.want); err == nil {
					break
				}
				select {
				case code := <-done:
					t.Fatalf("exit %d before the ledger %s existed: %s", code, tc.want, errb.String())
				case <-time.After(20 * time.Millisecond):
				}
			}
			cancel()
			<-done
			if _, err := os.Stat(filepath.Join(dir, ".apiary")); err == nil {
				t.Errorf("a .apiary directory appeared in the working directory")
			}
		})
	}
}
