package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestSimCapExitCodes pins the exit codes testscript cannot distinguish:
// 0 success, 1 a failed check or runtime error, 2 a usage error.
func TestSimCapExitCodes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	key := dir + "/key"
	if code := Main(t.Context(), []string{"cap", "keygen", key}, strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{}); code != 0 {
		t.Fatalf("keygen exit %d", code)
	}
	var tok bytes.Buffer
	if code := Main(t.Context(), []string{"cap", "mint", "--key-file", key, "--tools", "read"}, strings.NewReader(""), &tok, &bytes.Buffer{}); code != 0 {
		t.Fatalf("mint exit %d", code)
	}
	tests := []struct {
		args  []string
		stdin string
		want  int
	}{
		{[]string{"sim", "usl", "--f", "0.7", "--sigma", "0.04", "--kappa", "0.02", "--t1", "600", "--m", "4"}, "", 0},
		{[]string{"sim", "usl", "--sigma", "0.04", "--kappa", "0.02", "--t1", "600", "--m", "4"}, "", 2},
		{[]string{"sim", "usl", "--f", "1.5", "--sigma", "0", "--kappa", "0", "--t1", "1", "--m", "2"}, "", 2},
		{[]string{"sim", "usl", "--fit", "-"}, "1 1\n2 1\n", 1},
		{[]string{"sim", "vote", "--m", "5", "--p", "0.2", "--rho", "0.4"}, "", 0},
		{[]string{"sim", "vote", "--m", "5", "--p", "-0.2", "--rho", "0.4"}, "", 2},
		{[]string{"sim", "barrier", "--n", "10"}, "", 2},
		{[]string{"sim", "quorum", "--n", "8", "--k", "6", "--f", "0.9"}, "", 0},
		{[]string{"sim", "collision", "--n", "3", "--w", "2", "--files", "10", "--zipf", "-1"}, "", 2},
		{[]string{"cap", "verify", "--key-file", key, "--tool", "read", "-"}, tok.String(), 0},
		{[]string{"cap", "verify", "--key-file", key, "--tool", "write", "-"}, tok.String(), 1},
		{[]string{"cap", "verify", "--key-file", key, "apcap.garbage"}, "", 1},
		{[]string{"cap", "verify", "-"}, tok.String(), 2},
		{[]string{"cap", "keygen", key}, "", 1},
		{[]string{"cap", "mint", "--key-file", key, "--network", ","}, "", 2},
	}
	for _, tt := range tests {
		var stdout, stderr bytes.Buffer
		code := Main(context.Background(), tt.args, strings.NewReader(tt.stdin), &stdout, &stderr)
		if code != tt.want {
			t.Errorf("apiary %s: exit %d, want %d; stderr %q", strings.Join(tt.args, " "), code, tt.want, stderr.String())
		}
		if tt.want != 0 && stderr.Len() == 0 {
			t.Errorf("apiary %s: failed silently", strings.Join(tt.args, " "))
		}
	}
}
