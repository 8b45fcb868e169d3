package dashboard

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// memSource implements every source and action interface over values the
// test sets, recording the actions it is asked for. It tests the HTTP layer
// at its boundary; the real sources (the runtime's files, the board, the
// gateway) are wired and tested end to end in internal/cli.
type memSource struct {
	mu      sync.Mutex
	runs    []RunSummary
	run     map[string]*Run
	task    map[string]*TaskDetail
	board   BoardSnapshot
	escrow  []EscrowRequest
	gw      GatewaySnapshot
	gwErr   error
	actions []string
	fail    error // returned by every action when set
}

func newMem() *memSource {
	return &memSource{run: map[string]*Run{}, task: map[string]*TaskDetail{}}
}

func (m *memSource) Runs(context.Context) ([]RunSummary, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]RunSummary{}, m.runs...), nil
}

func (m *memSource) Run(_ context.Context, id string) (*Run, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.run[id]
	if r == nil {
		return nil, fmt.Errorf("%w: run %s", ErrNotFound, id)
	}
	c := *r
	c.Tasks = append([]Task{}, r.Tasks...)
	return &c, nil
}

func (m *memSource) Task(_ context.Context, run, task string) (*TaskDetail, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d := m.task[run+"/"+task]
	if d == nil {
		return nil, fmt.Errorf("%w: task %s of run %s", ErrNotFound, task, run)
	}
	c := *d
	return &c, nil
}

func (m *memSource) Board(context.Context) (BoardSnapshot, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.board, nil
}

func (m *memSource) Escrow(context.Context) ([]EscrowRequest, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]EscrowRequest{}, m.escrow...), nil
}

func (m *memSource) Gateway(context.Context) (GatewaySnapshot, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.gw, m.gwErr
}

func (m *memSource) record(a string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return m.fail
	}
	m.actions = append(m.actions, a)
	return nil
}

func (m *memSource) Cancel(_ context.Context, run, task, reason string) error {
	return m.record("cancel " + run + " " + task + " " + reason)
}
func (m *memSource) ApproveHint(_ context.Context, typ, reviewer, note string) error {
	return m.record("approve-hint " + typ + " " + reviewer + " " + note)
}
func (m *memSource) RejectHint(_ context.Context, typ, reviewer, note string) error {
	return m.record("reject-hint " + typ + " " + reviewer + " " + note)
}
func (m *memSource) ApproveEscrow(_ context.Context, id, reviewer, note string) error {
	return m.record("approve-escrow " + id + " " + reviewer + " " + note)
}
func (m *memSource) DenyEscrow(_ context.Context, id, reviewer, note string) error {
	return m.record("deny-escrow " + id + " " + reviewer + " " + note)
}

func (m *memSource) taken() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string{}, m.actions...)
}

func (m *memSource) sources() Sources {
	return Sources{Runs: m, Cancel: m, Gateway: m, Board: m, Hints: m, Escrow: m, Decide: m}
}

// sampleRun is a run of four tasks: a → b → d and a → c (control), b
// running, d pending; the critical path a, b, d.
func sampleRun() *Run {
	ff := "fast-forward"
	commit := "0123456789abcdef"
	return &Run{ID: "run-1", Status: StatusRunning, IntegrationBranch: "main", Started: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Tasks: []Task{
			{ID: "a", Status: StatusSucceeded, Attempts: 1, Commit: &commit, Integrated: &ff, Usage: Usage{InputTokens: 1200, OutputTokens: 300, USD: 0.0125, Known: true}, WallS: 2},
			{ID: "b", Status: StatusRunning, Attempts: 1},
			{ID: "c", Status: StatusFailed, Attempts: 1, Gate: &Gate{Gate: "forbidden", Pattern: "deleted-test", File: "x_test.go", Detail: "a test was deleted"}},
			{ID: "d", Status: StatusPending},
		},
		Edges:     []Edge{{From: "a", To: "b", Kind: EdgeData}, {From: "a", To: "c", Kind: EdgeControl}, {From: "b", To: "d", Kind: EdgeData}},
		Predicted: Path{Tasks: []string{"a", "b", "d"}, Seconds: 90},
		Totals:    Totals{Tasks: 4, Succeeded: 1, Failed: 1, Unfinished: 2, Usage: Usage{InputTokens: 1200, OutputTokens: 300, USD: 0.0125, Known: true}},
	}
}

// startServer serves s's handler on loopback.
func startServer(t *testing.T, s *Server) *httptest.Server {
	t.Helper()
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(hs.Close)
	return hs
}

// streamReader reads events from a stream.
type streamReader struct {
	r    *bufio.Reader
	body io.Closer
}

type event struct{ name, data string }

func openStream(t *testing.T, url string) *streamReader {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("stream: %s %s", resp.Status, resp.Header.Get("Content-Type"))
	}
	t.Cleanup(func() { resp.Body.Close() })
	return &streamReader{r: bufio.NewReader(resp.Body), body: resp.Body}
}

// next returns the next event (skipping comments and the retry field).
func (s *streamReader) next(t *testing.T) event {
	t.Helper()
	var ev event
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			t.Fatalf("stream ended: %v", err)
		}
		line = strings.TrimRight(line, "\n")
		switch {
		case line == "":
			if ev.name != "" {
				return ev
			}
		case strings.HasPrefix(line, "event: "):
			ev.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			ev.data = strings.TrimPrefix(line, "data: ")
		}
	}
}

// until reads events until one named name whose data contains want.
func (s *streamReader) until(t *testing.T, name, want string) event {
	t.Helper()
	for {
		ev := s.next(t)
		if ev.name == name && strings.Contains(ev.data, want) {
			return ev
		}
	}
}
