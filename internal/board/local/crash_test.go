//go:build unix

package local

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apiary-dev/apiary/internal/board"
	"github.com/apiary-dev/apiary/internal/envtest"
)

// The crash tests run this test binary again as a child process (TestCrashChild
// with BOARD_CRASH_DB set) that writes to the board and is killed with
// SIGKILL: once while it is stopped inside a write transaction, after its
// rows are written and before COMMIT, and once at an arbitrary moment of a
// stream of transactions. The database, reopened, must show every committed
// transaction whole and no trace of the interrupted one.

const crashEnv = "BOARD_CRASH_DB"

func claimKeyFor(task string) string { return board.PrefixClaims + task }

// crashTxn writes triple i: three keys with the same value in one Txn.
func crashTxn(ctx context.Context, s *board.Store, i int) (int64, error) {
	v := []byte(fmt.Sprint("v", i))
	res, err := s.Txn(ctx, board.Txn{Then: []board.Op{
		board.PutOp(fmt.Sprintf("a/%04d", i), v, board.NoLease),
		board.PutOp(fmt.Sprintf("b/%04d", i), v, board.NoLease),
		board.PutOp(fmt.Sprintf("c/%04d", i), v, board.NoLease),
	}})
	return res.Revision, err
}

// TestCrashChild is the child process; it is skipped in a normal run.
func TestCrashChild(t *testing.T) {
	path := os.Getenv(crashEnv)
	if path == "" {
		t.Skip("helper process for TestCrash; runs only as a child")
	}
	ctx := context.Background()
	b, err := open(ctx, path, Options{})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	s := board.New(b, board.Options{})
	c, err := s.Claim(ctx, "held", "child", 1, time.Hour)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	fmt.Println("claim", c.Token)
	stopAt := -1
	if os.Getenv("BOARD_CRASH_MODE") == "mid" {
		stopAt = 20
	}
	for i := 0; ; i++ {
		if i == stopAt {
			// A transaction larger than SQLite's page cache, so that its
			// pages spill into the WAL before COMMIT, plus a claim.
			b.beforeCommit = func() {
				fmt.Println("mid")
				time.Sleep(time.Hour) // killed here, inside the transaction
			}
			big := board.Txn{Then: []board.Op{board.PutOp(claimKeyFor("torn"), []byte(`{"agent":"child"}`), board.NoLease)}}
			for j := range board.MaxTxnOps - 1 {
				big.Then = append(big.Then, board.PutOp(fmt.Sprintf("big/%05d", j), make([]byte, 28<<10), board.NoLease))
			}
			_, _ = s.Txn(ctx, big)
		}
		rev, err := crashTxn(ctx, s, i)
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Println("committed", i, rev)
	}
}

// runChild starts the child on path and reads its output until stop says
// so; then it kills the child's process group and returns what the child
// reported: the highest committed triple, its revision, and the claim token.
func runChild(t *testing.T, path, mode string, stop func(line string) bool) (lastTriple int, lastRev, claimToken int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashEnv+"="+path, "BOARD_CRASH_MODE="+mode)
	cmd.SysProcAttr = envtest.ChildGroup()
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lastTriple = -1
	sc := bufio.NewScanner(out)
	stopped := false
	for sc.Scan() {
		line := sc.Text()
		f := strings.Fields(line)
		switch {
		case len(f) == 3 && f[0] == "committed":
			lastTriple, _ = strconv.Atoi(f[1])
			lastRev, _ = strconv.ParseInt(f[2], 10, 64)
		case len(f) == 2 && f[0] == "claim":
			claimToken, _ = strconv.ParseInt(f[1], 10, 64)
		case f[0] == "error":
			t.Fatalf("child: %s", line)
		}
		if stop(line) {
			stopped = true
			break
		}
	}
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill child: %v", err)
	}
	// The child went on committing until the signal landed: what it
	// reported meanwhile is still in the pipe.
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 3 && f[0] == "committed" {
			lastTriple, _ = strconv.Atoi(f[1])
			lastRev, _ = strconv.ParseInt(f[2], 10, 64)
		}
	}
	_ = cmd.Wait()
	if !stopped {
		t.Fatalf("child ended before the kill point (scan error %v)", sc.Err())
	}
	return lastTriple, lastRev, claimToken
}

func TestCrash(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		mode string
		stop func(line string) bool
	}{
		{"mid", func(line string) bool { return line == "mid" }},
		{"churn", func(line string) bool { return strings.HasPrefix(line, "committed 57 ") }},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "state.db")
			lastTriple, lastRev, token := runChild(t, path, tc.mode, tc.stop)
			if tc.mode == "mid" {
				// The torn transaction's pages reached the WAL uncommitted:
				// recovery, not luck, must discard them.
				if fi, err := os.Stat(path + "-wal"); err != nil || fi.Size() < 1<<20 {
					t.Fatalf("WAL after the kill: %v, %v; want the torn transaction's pages in it", fi, err)
				}
			}
			checkConsistent(t, path)

			s, err := Open(t.Context(), path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			ctx := t.Context()
			rev, err := s.Revision(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if rev < lastRev {
				t.Fatalf("revision %d after reopen, below the last committed %d", rev, lastRev)
			}
			for _, p := range []string{"a/", "b/", "c/"} {
				kvs, _, err := s.List(ctx, p)
				if err != nil {
					t.Fatal(err)
				}
				// Every reported commit is there; the unreported one at most
				// (churn: killed between COMMIT and the report) is whole.
				if n := len(kvs); n < lastTriple+1 || n > lastTriple+2 {
					t.Fatalf("%s has %d keys after triple %d committed", p, n, lastTriple)
				}
			}
			if tc.mode == "mid" {
				if rev != lastRev {
					t.Fatalf("revision %d after reopen, want %d: the interrupted transaction left a trace", rev, lastRev)
				}
				if _, err := s.Holder(ctx, "torn"); err == nil {
					t.Fatal("the interrupted claim survived the crash")
				}
				if kvs, _, err := s.List(ctx, "big/"); err != nil || len(kvs) != 0 {
					t.Fatalf("the interrupted transaction left %d keys (%v)", len(kvs), err)
				}

			}
			// The child's claim survived, and fencing continues above it.
			h, err := s.Holder(ctx, "held")
			if err != nil || h.Token != token {
				t.Fatalf("child's claim after the crash: %+v, %v (token %d)", h, err, token)
			}
			if _, err := s.Claim(ctx, "held", "parent", 1, time.Hour); err == nil {
				t.Fatal("claimed a task the crashed child still holds")
			}
			if err := s.Revoke(ctx, h.Lease); err != nil {
				t.Fatal(err)
			}
			c, err := s.Claim(ctx, "held", "parent", 1, time.Hour)
			if err != nil || c.Token <= rev {
				t.Fatalf("claim after the crash: %+v, %v; want a token above %d", c, err, rev)
			}
		})
	}
}

// checkConsistent opens the database directly and checks its invariants:
// SQLite's integrity, that replaying the event log gives the key table, that
// the stored revision is the log's last, that every lease-bound key has its
// lease, and that every triple is whole.
func checkConsistent(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	query := func(q string, dest ...any) {
		t.Helper()
		if err := db.QueryRow(q).Scan(dest...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	var integrity string
	query(`PRAGMA integrity_check`, &integrity)
	if integrity != "ok" {
		t.Fatalf("integrity_check: %s", integrity)
	}
	var rev, maxEvent int64
	query(`SELECT value FROM meta WHERE name = 'revision'`, &rev)
	query(`SELECT COALESCE(MAX(rev), 0) FROM events`, &maxEvent)
	if rev != maxEvent {
		t.Fatalf("stored revision %d, event log ends at %d", rev, maxEvent)
	}
	replayed := map[string]string{}
	rows, err := db.Query(`SELECT type, key, value FROM events ORDER BY rev, seq`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var typ int
		var key, value []byte
		if err := rows.Scan(&typ, &key, &value); err != nil {
			t.Fatal(err)
		}
		if board.EventType(typ) == board.EventPut {
			replayed[string(key)] = string(value)
		} else {
			delete(replayed, string(key))
		}
	}
	rows.Close()
	stored := map[string]string{}
	rows, err = db.Query(`SELECT key, value FROM kv`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var key, value []byte
		if err := rows.Scan(&key, &value); err != nil {
			t.Fatal(err)
		}
		stored[string(key)] = string(value)
	}
	rows.Close()
	if len(stored) != len(replayed) {
		t.Fatalf("kv table has %d keys, replayed log %d", len(stored), len(replayed))
	}
	for k, v := range stored {
		if replayed[k] != v {
			t.Fatalf("key %s: table %q, log %q", k, v, replayed[k])
		}
		if rest, ok := strings.CutPrefix(k, "a/"); ok && (stored["b/"+rest] != v || stored["c/"+rest] != v) {
			t.Fatalf("triple %s is torn: %q %q %q", rest, v, stored["b/"+rest], stored["c/"+rest])
		}
	}
	var orphans int
	query(`SELECT COUNT(*) FROM kv WHERE lease != 0 AND lease NOT IN (SELECT id FROM leases)`, &orphans)
	if orphans != 0 {
		t.Fatalf("%d keys bound to missing leases", orphans)
	}
}
