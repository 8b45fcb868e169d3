package dashboard

import (
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

func newTestServer(t *testing.T, m *memSource) (*Server, *httptest.Server) {
	t.Helper()
	s, err := New(Config{Sources: m.sources(), Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	return s, startServer(t, s)
}

func get(t *testing.T, url string, into any) (int, http.Header) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if into != nil {
		if err := json.Unmarshal(b, into); err != nil {
			t.Fatalf("GET %s: %s: not JSON: %v: %s", url, resp.Status, err, b)
		}
	}
	return resp.StatusCode, resp.Header
}

func TestGetEndpoints(t *testing.T) {
	t.Parallel()
	m := newMem()
	m.runs = []RunSummary{{ID: "run-0", Status: StatusSucceeded}, {ID: "run-1", Status: StatusRunning}}
	m.run["run-1"] = sampleRun()
	m.task["run-1/b"] = &TaskDetail{Run: "run-1", Task: Task{ID: "b", Status: StatusRunning}, LeaseS: 30, Fence: 7}
	m.board = BoardSnapshot{Hints: []Hint{{Type: "readme-overlap", State: HintPending}}}
	m.escrow = []EscrowRequest{{ID: "e1", Operation: "git push", State: EscrowPending}}
	_, hs := newTestServer(t, m)

	var runs []RunSummary
	if st, _ := get(t, hs.URL+"/api/runs", &runs); st != 200 || len(runs) != 2 || runs[0].ID != "run-1" {
		t.Errorf("runs: %d %+v, want newest first", st, runs)
	}
	var run Run
	if st, _ := get(t, hs.URL+"/api/runs/run-1", &run); st != 200 || run.Graph == nil || len(run.Graph.Nodes) != 4 {
		t.Fatalf("run: %d %+v", st, run)
	}
	var td TaskDetail
	if st, _ := get(t, hs.URL+"/api/runs/run-1/tasks/b", &td); st != 200 || td.Fence != 7 || td.LeaseS != 30 {
		t.Errorf("task: %d %+v", st, td)
	}
	var board BoardSnapshot
	if st, _ := get(t, hs.URL+"/api/board", &board); st != 200 || len(board.Hints) != 1 || board.Claims == nil {
		t.Errorf("board: %d %+v (empty lists must be [], not null)", st, board)
	}
	var es []EscrowRequest
	if st, _ := get(t, hs.URL+"/api/escrow", &es); st != 200 || len(es) != 1 {
		t.Errorf("escrow: %d %+v", st, es)
	}
	var plots []Plot
	if st, _ := get(t, hs.URL+"/api/plots", &plots); st != 200 || plots == nil {
		t.Errorf("plots without a source: %d %v, want 200 []", st, plots)
	}
	for _, tc := range []struct {
		path string
		want int
	}{
		{"/api/runs/nope", http.StatusNotFound},
		{"/api/runs/run-1/tasks/nope", http.StatusNotFound},
		{"/api/runs/" + strings.Repeat("x", 600), http.StatusBadRequest},
		{"/api/runs/a%0Ab", http.StatusBadRequest},
		{"/api/gateway/chart.svg?upstream=none", http.StatusNotFound},
		{"/api/plots/0/x.svg", http.StatusNotFound},
		{"/nope", http.StatusNotFound},
		{"/metrics", http.StatusNotFound},
	} {
		if st, _ := get(t, hs.URL+tc.path, nil); st != tc.want {
			t.Errorf("GET %s = %d, want %d", tc.path, st, tc.want)
		}
	}
}

func TestUnconnectedSources(t *testing.T) {
	t.Parallel()
	s, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	hs := startServer(t, s)
	for _, p := range []string{"/api/runs", "/api/runs/r", "/api/runs/r/tasks/t", "/api/board", "/api/escrow"} {
		var e map[string]string
		if st, _ := get(t, hs.URL+p, &e); st != http.StatusNotImplemented || !strings.Contains(e["error"], "not connected") {
			t.Errorf("GET %s = %d %v, want 501 not connected", p, st, e)
		}
	}
	var gv GatewayView
	if st, _ := get(t, hs.URL+"/api/gateway", &gv); st != 200 || gv.Connected {
		t.Errorf("gateway without a source: %d %+v", st, gv)
	}
	if st := post(t, hs.URL+"/api/runs/r/cancel", `{}`, nil); st != http.StatusNotImplemented {
		t.Errorf("cancel without a canceller = %d, want 501", st)
	}
}

// post sends an action the way the page does, with extra headers.
func post(t *testing.T, url, body string, hdr map[string]string) int {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Apiary-Dashboard", "1")
	for k, v := range hdr {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	if h := hdr["Host"]; h != "" {
		req.Host = h
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestActions(t *testing.T) {
	t.Parallel()
	m := newMem()
	_, hs := newTestServer(t, m)
	for _, tc := range []struct {
		name, path, body string
		hdr              map[string]string
		status           int
		action           string // recorded; "" for none
	}{
		{"cancel task", "/api/runs/r1/tasks/t1/cancel", `{"reason":"too slow"}`, nil, 200, "cancel r1 t1 too slow"},
		{"cancel run", "/api/runs/r1/cancel", ``, nil, 200, "cancel r1  cancelled from the dashboard by dashboard"},
		{"approve hint", "/api/hints/readme%2Foverlap/approve", `{"note":"ok"}`, nil, 200, "approve-hint readme/overlap dashboard ok"},
		{"reject hint", "/api/hints/x/reject", `{}`, nil, 200, "reject-hint x dashboard "},
		{"approve escrow", "/api/escrow/e1/approve", `{"note":"fine"}`, nil, 200, "approve-escrow e1 dashboard fine"},
		{"deny escrow", "/api/escrow/e1/deny", `{}`, nil, 200, "deny-escrow e1 dashboard "},
		{"unknown verdict", "/api/hints/x/maybe", `{}`, nil, 404, ""},
		{"bad JSON", "/api/hints/x/approve", `{`, nil, 400, ""},
		{"body too big", "/api/hints/x/approve", `{"note":"` + strings.Repeat("n", 20000) + `"}`, nil, 400, ""},
		{"no dashboard header", "/api/hints/x/approve", `{}`, map[string]string{"X-Apiary-Dashboard": ""}, 403, ""},
		{"foreign origin", "/api/hints/x/approve", `{}`, map[string]string{"Origin": "https://evil.example"}, 403, ""},
		{"cross-site fetch", "/api/hints/x/approve", `{}`, map[string]string{"Sec-Fetch-Site": "cross-site"}, 403, ""},
		{"rebound host", "/api/hints/x/approve", `{}`, map[string]string{"Host": "evil.example:80"}, 403, ""},
		{"GET is not an action", "/api/hints/x/approve", ``, map[string]string{"X-Method": "GET"}, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.hdr["X-Method"] == "GET" {
				before := len(m.taken())
				if st, _ := get(t, hs.URL+tc.path, nil); st == http.StatusOK || len(m.taken()) != before {
					t.Errorf("GET %s = %d and acted", tc.path, st)
				}
				return
			}
			before := len(m.taken())
			st := post(t, hs.URL+tc.path, tc.body, tc.hdr)
			if st != tc.status {
				t.Errorf("status %d, want %d", st, tc.status)
			}
			got := m.taken()[before:]
			switch {
			case tc.action == "" && len(got) > 0:
				t.Errorf("actions %q taken, want none", got)
			case tc.action != "" && (len(got) != 1 || got[0] != tc.action):
				t.Errorf("actions %q, want [%q]", got, tc.action)
			}
		})
	}
	// A same-origin Origin header is fine.
	if st := post(t, hs.URL+"/api/escrow/e2/deny", `{}`, map[string]string{"Origin": hs.URL}); st != 200 {
		t.Errorf("same-origin action = %d", st)
	}
	// Source errors map to statuses.
	for _, tc := range []struct {
		err  error
		want int
	}{{ErrConflict, 409}, {ErrNotFound, 404}, {errors.New("disk on fire"), 500}} {
		m.mu.Lock()
		m.fail = tc.err
		m.mu.Unlock()
		if st := post(t, hs.URL+"/api/hints/x/approve", `{}`, nil); st != tc.want {
			t.Errorf("action failing with %v = %d, want %d", tc.err, st, tc.want)
		}
	}
}

func TestHostCheck(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		hosts []string
		host  string
		ok    bool
	}{
		{nil, "127.0.0.1:8080", true},
		{nil, "127.9.9.9", true},
		{nil, "[::1]:80", true},
		{nil, "localhost:1", true},
		{nil, "LOCALHOST.", true},
		{nil, "evil.example", false},
		{nil, "10.0.0.1:80", false},
		{nil, "localhost.evil.example", false},
		{[]string{"dash.internal"}, "dash.internal:7421", true},
		{[]string{"*"}, "anything", true},
	} {
		s := &Server{hosts: tc.hosts}
		if got := s.hostAllowed(tc.host); got != tc.ok {
			t.Errorf("hosts %v: hostAllowed(%q) = %v, want %v", tc.hosts, tc.host, got, tc.ok)
		}
	}
}

func TestPageAndHeaders(t *testing.T) {
	t.Parallel()
	_, hs := newTestServer(t, newMem())
	for _, tc := range []struct{ path, ctype string }{
		{"/", "text/html"}, {"/assets/app.js", "text/javascript"}, {"/assets/app.css", "text/css"},
	} {
		resp, err := http.Get(hs.URL + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), tc.ctype) {
			t.Errorf("%s: %d %s", tc.path, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		csp := resp.Header.Get("Content-Security-Policy")
		if !strings.Contains(csp, "default-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") || resp.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: security headers %v", tc.path, resp.Header)
		}
	}
}

// TestAssets: the page is small, loads nothing from elsewhere and every
// asset it names exists.
func TestAssets(t *testing.T) {
	t.Parallel()
	var total int64
	files := map[string]string{}
	err := fs.WalkDir(Assets(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(Assets(), p)
		if err != nil {
			return err
		}
		total += int64(len(b))
		files[p] = string(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	const budget = 300 << 10
	t.Logf("embedded assets: %d files, %d bytes (budget %d)", len(files), total, budget)
	if total >= budget || len(files) < 3 {
		t.Errorf("assets weigh %d bytes in %d files; the page must stay under %d", total, len(files), budget)
	}
	external := regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}`)
	for p, s := range files {
		for _, m := range external.FindAllString(s, -1) {
			if m != "http://www.w3.org" {
				t.Errorf("%s references %s: the page must load nothing from elsewhere", p, m)
			}
		}
	}
	for _, ref := range regexp.MustCompile(`(?:src|href)="/assets/([^"]+)"`).FindAllStringSubmatch(files["index.html"], -1) {
		if _, ok := files[ref[1]]; !ok {
			t.Errorf("index.html names /assets/%s, which is not embedded", ref[1])
		}
	}
	// Every button the page declares has a name.
	for _, b := range regexp.MustCompile(`<button[^>]*>([^<]*)</button>`).FindAllStringSubmatch(files["index.html"], -1) {
		if strings.TrimSpace(b[1]) == "" {
			t.Errorf("index.html has a button without a name: %s", b[0])
		}
	}
	if !slices.Contains([]string{"en"}, regexp.MustCompile(`<html lang="([a-z]+)"`).FindStringSubmatch(files["index.html"])[1]) {
		t.Error("index.html declares no language")
	}
}
