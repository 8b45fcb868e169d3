//go:build linux

package gate

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/apiary-dev/apiary/internal/proc"
)

// TestCheckScope: a check runs in a scope of the tracker its context
// carries (recorded, marked), and whatever it leaves behind — a daemon
// that called setsid included — is killed when it exits; so is
// everything when its context ends.
func TestCheckScope(t *testing.T) {
	t.Parallel()
	tr, err := proc.New(proc.Options{Owner: "gate-" + strconv.Itoa(os.Getpid()), NoCgroup: true})
	if err != nil {
		t.Fatal(err)
	}
	var seen []proc.Scope
	ctx := proc.WithTracker(context.Background(), tr.With("t/1/check", func(s proc.Scope) { seen = append(seen, s) }))
	dir := t.TempDir()
	res, err := RunCheck(ctx, CheckCommand{Command: `setsid sh -c 'echo $$ > daemon; exec sleep 300' & while [ ! -s daemon ]; do sleep 0.01; done`,
		Dir: dir, Log: filepath.Join(dir, "check-0.log")})
	if err != nil || res.Exit != 0 {
		t.Fatalf("check: %+v %v", res, err)
	}
	if len(seen) != 1 || !strings.Contains(seen[0].Marker, "t/1/check/check-0") {
		t.Errorf("scopes recorded: %+v", seen)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "daemon"))
	pid := strings.TrimSpace(string(b))
	if st, err := os.ReadFile("/proc/" + pid + "/stat"); err == nil {
		if s := string(st); s[strings.LastIndexByte(s, ')')+2] != 'Z' {
			t.Errorf("the check's setsid daemon %s outlived it", pid)
		}
	}
	if ps := proc.Alive(seen[0]); len(ps) != 0 {
		t.Errorf("processes of the check's scope left: %v", ps)
	}
}
