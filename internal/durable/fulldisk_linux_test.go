//go:build linux

package durable_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/apiary-dev/apiary/internal/durable"
	"github.com/apiary-dev/apiary/internal/envtest"
)

// TestFullDisk runs on a real full filesystem: a 256 KiB tmpfs, mounted in
// a user and mount namespace of the test's own (unshare(1)), so no
// privilege is needed. A write whose data fits but whose journal row does
// not is reported as written and degraded, never as failed; once there is
// room again the next write to that path appends the row, marked
// recovered.
func TestFullDisk(t *testing.T) {
	if dir := os.Getenv("DURABLE_FULLDISK_DIR"); dir != "" {
		fullDiskChild(t, dir)
		return
	}
	t.Parallel()
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		if envtest.InCI() {
			t.Fatal("unshare(1) (util-linux) is not installed")
		}
		t.Skip("unshare(1) (util-linux) is not installed")
	}
	cmd := exec.CommandContext(t.Context(), unshare, "--user", "--map-root-user", "--mount", os.Args[0], "-test.run=^TestFullDisk$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), "DURABLE_FULLDISK_DIR="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil && strings.Contains(string(out), "unshare failed") {
		t.Skipf("user namespaces are not available here: %s", out)
	}
	if err != nil || !strings.Contains(string(out), "--- PASS: TestFullDisk") {
		t.Fatalf("full-disk run failed (%v):\n%s", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "fulldisk_linux_test.go") {
			t.Log(strings.TrimSpace(line))
		}
	}
}

func fullDiskChild(t *testing.T, dir string) {
	const page = 4096
	mnt := filepath.Join(dir, "mnt")
	must(t, os.Mkdir(mnt, 0o755))
	must(t, syscall.Mount("tmpfs", mnt, "tmpfs", 0, "size=256k"))
	defer syscall.Unmount(mnt, 0)
	ws := filepath.Join(mnt, "ws")
	must(t, os.Mkdir(ws, 0o755))
	w, err := durable.Open(t.Context(), durable.Config{Roots: []string{ws}})
	must(t, err)
	defer w.Close()
	ctx := t.Context()
	_, err = w.SafeWrite(ctx, durable.SafeWriteParams{Path: "first.txt", Content: "first"})
	must(t, err)
	// End the journal on a page boundary, so that the next row needs a new
	// page; a hand-written row is as valid as any.
	journal := filepath.Join(ws, ".apiary/durable/journal.jsonl")
	fi, err := os.Stat(journal)
	must(t, err)
	pad := page - int(fi.Size()%page)
	if pad < 12 {
		pad += page
	}
	jf, err := os.OpenFile(journal, os.O_APPEND|os.O_WRONLY, 0)
	must(t, err)
	_, err = fmt.Fprintf(jf, "{\"pad\":\"%s\"}\n", strings.Repeat("p", pad-11))
	must(t, err)
	must(t, jf.Close())
	// Fill the filesystem, then free exactly two pages: one for the lock
	// record of the next write, one for its data.
	var fillers []string
	for i := 0; ; i++ {
		p := filepath.Join(mnt, fmt.Sprintf("fill-%d", i))
		if err := os.WriteFile(p, make([]byte, page), 0o644); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			os.Remove(p)
			break
		}
		fillers = append(fillers, p)
	}
	must(t, os.Remove(fillers[0]))
	must(t, os.Remove(fillers[1]))
	content := strings.Repeat("d", 3000)
	res, err := w.SafeWrite(ctx, durable.SafeWriteParams{Path: "second.txt", Content: content})
	if err != nil {
		t.Fatalf("a write that fits was refused: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "second.txt")); string(b) != content || res["journal_degraded"] != true {
		t.Fatalf("file %d bytes, result %v", len(b), res)
	}
	t.Logf("journal append on a full disk: %v", res["warnings"])
	id := res["journal_id"].(string)
	for _, p := range fillers[2:12] {
		must(t, os.Remove(p))
	}
	_, err = w.SafeWrite(ctx, durable.SafeWriteParams{Path: "second.txt", Content: "third", Mode: "overwrite"})
	must(t, err)
	data, err := os.ReadFile(journal)
	must(t, err)
	var recovered string
	for _, line := range strings.Split(string(data), "\n") {
		if strings.Contains(line, id) {
			recovered = line
		}
	}
	if !strings.Contains(recovered, `"recovered":true`) || !strings.Contains(recovered, sha(content)) {
		t.Fatalf("row %s not recovered: %q", id, recovered)
	}
	t.Logf("recovered row: %s", recovered)
}
