package dashboard

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

var update = flag.Bool("update", false, "rewrite golden files")

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs:\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

func sampleView(t *testing.T) *View {
	t.Helper()
	m := newMem()
	m.runs = []RunSummary{{ID: "run-0", Status: StatusSucceeded, Tasks: 2, Succeeded: 2, USD: 0.5, USDKnown: true}, {ID: "run-1", Status: StatusRunning, Tasks: 4, Succeeded: 1, Running: 1, USD: 0.0125}}
	m.run["run-1"] = sampleRun()
	m.board = BoardSnapshot{Claims: []Claim{{Task: "b", Agent: "w1", Score: 0.8, Token: 42}},
		Hints:     []Hint{{Type: "api", State: HintApproved, Resolution: "keep the old signature"}, {Type: "readme-overlap", State: HintPending, Resolution: "merge the sections\nin order"}},
		Conflicts: []Conflict{{ID: "c1", Type: "readme-overlap", Tasks: []string{"a", "b"}}}}
	m.escrow = []EscrowRequest{{ID: "e1", Operation: "git push origin main", Task: "b", State: EscrowPending}}
	m.gw = GatewaySnapshot{Upstreams: []Upstream{{Name: "anthropic", InFlight: 2, Queued: 1, ConcurrencyLimit: 8, Breaker: "closed", Requests: 40, Status429: 3, Status5xx: 1, Retries: 4}},
		Agents: []AgentSpend{{Agent: "alice", InputTokens: 1000, OutputTokens: 200, USD: 0.01, InFlight: 2}}}
	v, err := Collect(t.Context(), m.sources(), "", time.Date(2026, 1, 2, 3, 4, 5, 0, time.Local))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestWriteText(t *testing.T) {
	t.Parallel()
	v := sampleView(t)
	if v.Run == nil || v.Run.ID != "run-1" {
		t.Fatalf("Collect picked run %+v, want the newest", v.Run)
	}
	var plain bytes.Buffer
	if err := WriteText(&plain, v, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(plain.Bytes(), []byte("\x1b[")) {
		t.Error("plain output has escape codes")
	}
	golden(t, "top.golden", plain.Bytes())

	var color bytes.Buffer
	if err := WriteText(&color, v, TextOptions{Color: true}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"\x1b[32msucceeded\x1b[0m", "\x1b[36mrunning\x1b[0m", "\x1b[33mpending\x1b[0m"} {
		if !strings.Contains(color.String(), want) {
			t.Errorf("colored output lacks %q", want)
		}
	}
	// Colors do not shift the columns.
	strip := strings.NewReplacer("\x1b[32m", "", "\x1b[31m", "", "\x1b[36m", "", "\x1b[33m", "", "\x1b[2m", "", "\x1b[0m", "")
	if strip.Replace(color.String()) != plain.String() {
		t.Errorf("colored output differs from plain once colors are removed:\n%s", color.String())
	}

	var narrow bytes.Buffer
	if err := WriteText(&narrow, v, TextOptions{Width: 40}); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimRight(narrow.String(), "\n"), "\n") {
		if n := utf8.RuneCountInString(line); n > 40 {
			t.Errorf("line of %d columns at width 40: %q", n, line)
		}
	}
}

func TestCollectErrors(t *testing.T) {
	t.Parallel()
	m := newMem()
	m.gwErr = errors.New("connection refused")
	src := m.sources()
	src.Board, src.Escrow = nil, nil
	v, err := Collect(t.Context(), src, "missing", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if v.RunError == "" || v.GatewayErr != "connection refused" || v.Board != nil || v.BoardError != "" || v.Escrow != nil || v.EscrowErr != "" {
		t.Errorf("view %+v", v)
	}
	var out bytes.Buffer
	if err := WriteText(&out, v, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"runs: none yet", "run: dashboard: not found: run missing", "gateway: connection refused"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "\nboard:") || strings.Contains(out.String(), "\nescrow:") {
		t.Errorf("parts not connected are shown:\n%s", out.String())
	}
}
