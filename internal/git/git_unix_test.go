//go:build unix

package git

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestEnvAndProcessGroup: inherited GIT_DIR cannot redirect git, and
// cancelling the context kills git's whole process group.
func TestEnvAndProcessGroup(t *testing.T) {
	t.Parallel()
	r := newRepo(t, map[string]string{"a.txt": "a\n"})
	elsewhere := New(r.Dir(), Options{Env: append(os.Environ(), "GIT_DIR=/nonexistent", "GIT_WORK_TREE=/tmp")})
	if b, err := elsewhere.CurrentBranch(t.Context()); err != nil || b != "main" {
		t.Errorf("with GIT_DIR inherited: %q, %v", b, err)
	}

	dir := t.TempDir()
	pidFile := filepath.Join(dir, "child.pid")
	fake := filepath.Join(dir, "fakegit")
	script := "#!/bin/sh\nsleep 300 &\necho $! > " + pidFile + "\nwait\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	g := New(dir, Options{Git: fake, WaitDelay: time.Second})
	done := make(chan error, 1)
	go func() {
		_, err := g.RevParse(ctx, "HEAD")
		done <- err
	}()
	var pid int
	for pid == 0 {
		select {
		case err := <-done:
			t.Fatalf("fake git ended early: %v", err)
		default:
		}
		if b, err := os.ReadFile(pidFile); err == nil && strings.HasSuffix(string(b), "\n") {
			pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		}
		time.Sleep(10 * time.Millisecond) // polling a file written by another process
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	// The grandchild (sleep) was in git's process group and is gone; allow
	// the kernel a moment to reap it.
	deadline := time.Now().Add(5 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("grandchild %d survived the cancellation", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
