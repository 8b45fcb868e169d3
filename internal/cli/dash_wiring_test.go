package cli

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apiary-dev/apiary/internal/board"
	"github.com/apiary-dev/apiary/internal/board/connect"
	"github.com/apiary-dev/apiary/internal/dashboard"
	"github.com/apiary-dev/apiary/internal/runs"
)

// TestWorkerDash starts `apiary worker --dash` on a local board holding a
// conflict with a pending resolution hint: the worker's dashboard shows
// the board's conflict and hint, approving the hint there changes the
// board, and the dashboard stops with the worker.
func TestWorkerDash(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	dsn := "local:" + filepath.Join(dir, "board.db")
	st, err := connect.Open(t.Context(), dsn, connect.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, first, err := st.RecordConflict(t.Context(), board.Conflict{Type: "go-mod-bump", Tasks: []string{"a", "b"},
		Files: []string{"go.mod"}, Resolution: "take the higher version"}); err != nil || !first {
		t.Fatalf("conflict: first=%v %v", first, err)
	}

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var stdout, stderr lockedBuffer
	done := make(chan error, 1)
	go func() {
		done <- cliRun(ctx, nil, &stdout, &stderr, "worker", "--board", dsn, "--profile", "claude", "--id", "w1",
			"--workdir", filepath.Join(dir, "work"), "--dash", "127.0.0.1:0")
	}()
	base := waitURL(t, &stderr, "dashboard on ")

	var b dashboard.BoardSnapshot
	if code := getJSON(t, base+"/api/board", &b); code != http.StatusOK || len(b.Conflicts) != 1 || len(b.Hints) != 1 ||
		b.Hints[0].Type != "go-mod-bump" || b.Hints[0].State != string(board.HintPending) {
		t.Fatalf("the worker's dashboard shows board %d %+v", code, b)
	}
	// The page's other panels are not connected on a worker.
	var runs struct{}
	if code := getJSON(t, base+"/api/runs", &runs); code == http.StatusOK {
		t.Errorf("GET /api/runs on a worker's dashboard: %d, want an error (no run source)", code)
	}
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, base+"/api/hints/go-mod-bump/approve", strings.NewReader(`{"note":"fine"}`))
	req.Header.Set("X-Apiary-Dashboard", "1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("approve: %d", resp.StatusCode)
	}
	if h, err := st.Hint(t.Context(), "go-mod-bump"); err != nil || h.State != board.HintApproved || h.Note != "fine" {
		t.Errorf("hint after approving on the worker's dashboard: %+v %v", h, err)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("worker: %v\n%s", err, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the worker did not stop")
	}
	if _, err := http.Get(base + "/api/board"); err == nil {
		t.Error("the worker's dashboard still answers after the worker stopped")
	}
}

// TestObserveRunLogger: a run's own diagnostics reach stderr at Warn and
// above, each with the run's id; a logger already configured is kept.
func TestObserveRunLogger(t *testing.T) {
	t.Parallel()
	var stderr bytes.Buffer
	e := &env{Stdin: strings.NewReader(""), Stdout: &stderr, Stderr: &stderr, Getenv: func(string) string { return "" }}
	var cfg runs.Config
	stop, err := observeRun(t.Context(), e, t.TempDir(), "20260102-030405-abcdef", "", &cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if cfg.Logger == nil || cfg.OnEvent == nil {
		t.Fatalf("observeRun left the logger (%v) or the event hook unset", cfg.Logger)
	}
	cfg.Logger.Info("chatter", "task_id", "a")
	cfg.Logger.Warn("no control socket", "task_id", "b")
	got := stderr.String()
	if strings.Contains(got, "chatter") || !strings.Contains(got, "no control socket") ||
		!strings.Contains(got, "run_id=20260102-030405-abcdef") || !strings.Contains(got, "task_id=b") {
		t.Errorf("stderr %q: want only the warning, with the run's and the task's ids", got)
	}

	own := slog.New(slog.DiscardHandler)
	cfg = runs.Config{Logger: own}
	stop2, err := observeRun(t.Context(), e, t.TempDir(), "20260102-030405-abcdef", "", &cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer stop2()
	if cfg.Logger != own {
		t.Error("observeRun replaced the logger the caller set")
	}
}
