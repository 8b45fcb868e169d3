package cli

import (
	"bytes"
	"context"
	"runtime"
	"strings"
	"testing"
)

// TestVersionString: the line names the version, the commit (and whether
// the tree was modified) and the Go version; without a commit it says why.
func TestVersionString(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		v    buildVersion
		want string
	}{
		{buildVersion{Version: "v1.2.3", Revision: "4f2a9c1e", Time: "2026-12-01T10:00:00Z", Go: "go1.26.8"},
			"apiary v1.2.3 commit 4f2a9c1e 2026-12-01T10:00:00Z go1.26.8"},
		{buildVersion{Version: "(devel)", Revision: "4f2a9c1e", Modified: true, Go: "go1.26.8"},
			"apiary (devel) commit 4f2a9c1e (modified) go1.26.8"},
		{buildVersion{Version: "(devel)", Go: "go1.26.8"},
			"apiary (devel) (no commit: built outside a git checkout or with -buildvcs=false) go1.26.8"},
	} {
		if got := tt.v.String(); got != tt.want {
			t.Errorf("%+v: %q, want %q", tt.v, got, tt.want)
		}
	}
}

// TestVersionFlag: apiary --version prints what apiary version prints, a
// line ending in this binary's Go version.
func TestVersionFlag(t *testing.T) {
	t.Parallel()
	run := func(args ...string) string {
		var stdout, stderr bytes.Buffer
		if code := Main(context.Background(), args, strings.NewReader(""), &stdout, &stderr); code != 0 || stderr.Len() > 0 {
			t.Fatalf("apiary %v: exit %d, stderr %q", args, code, stderr.String())
		}
		return stdout.String()
	}
	flag, cmd := run("--version"), run("version")
	if flag != cmd {
		t.Errorf("--version printed %q, version printed %q", flag, cmd)
	}
	if !strings.HasPrefix(flag, "apiary ") || !strings.HasSuffix(flag, " "+runtime.Version()+"\n") {
		t.Errorf("--version printed %q", flag)
	}
}
