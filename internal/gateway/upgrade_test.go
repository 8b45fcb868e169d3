package gateway

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/apiary-dev/apiary/internal/llmapi"
	"github.com/apiary-dev/apiary/internal/llmfake"
)

// A WebSocket upgrade (Codex's GET /v1/responses) is proxied to the
// upstream, both ways, with the agent's virtual key replaced by the real
// one; it is not answered 502. The client's offer of permessage-deflate
// does not reach an upstream that would take it, and the client does
// without.
func TestWebSocketUpgrade(t *testing.T) {
	t.Parallel()
	gotAuth, gotExt := make(chan string, 1), make(chan string, 1)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	upstream := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/responses" {
			http.NotFound(w, r)
			return
		}
		gotAuth <- r.Header.Get("Authorization")
		gotExt <- r.Header.Get("Sec-WebSocket-Extensions")
		c, err := websocket.Accept(w, r, &websocket.AcceptOptions{CompressionMode: websocket.CompressionContextTakeover})
		if err != nil {
			return
		}
		defer c.CloseNow()
		for {
			typ, msg, err := c.Read(r.Context())
			if err != nil {
				return
			}
			if err := c.Write(r.Context(), typ, append([]byte("echo: "), msg...)); err != nil {
				return
			}
		}
	})}
	go func() { _ = upstream.Serve(l) }()
	t.Cleanup(func() { _ = upstream.Close() })
	tg := start(t, Config{Upstreams: []Upstream{{Name: "openai", URL: "http://" + l.Addr().String(), Provider: llmapi.OpenAI, APIKey: "sk-real"}}})
	secret, _, err := CreateKey(t.Context(), tg.DB, "codex-1", 0, 0, 0, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	c, resp, err := websocket.Dial(ctx, "ws"+tg.URL[len("http"):]+"/v1/responses", &websocket.DialOptions{
		HTTPHeader: http.Header{"Authorization": {"Bearer " + secret}}, CompressionMode: websocket.CompressionContextTakeover})
	if err != nil {
		t.Fatalf("dial: %v (%+v)", err, resp)
	}
	defer c.CloseNow()
	if auth := <-gotAuth; auth != "Bearer sk-real" {
		t.Errorf("upstream saw Authorization %q", auth)
	}
	if ext := <-gotExt; ext != "" {
		t.Errorf("upstream was offered Sec-WebSocket-Extensions %q", ext)
	}
	if ext := resp.Header.Get("Sec-WebSocket-Extensions"); ext != "" {
		t.Errorf("client was answered Sec-WebSocket-Extensions %q", ext)
	}
	for _, m := range []string{`{"type":"response.create"}`, strings.Repeat("long ", 1000)} {
		if err := c.Write(ctx, websocket.MessageText, []byte(m)); err != nil {
			t.Fatal(err)
		}
		_, got, err := c.Read(ctx)
		if err != nil || string(got) != "echo: "+m {
			t.Fatalf("read %.40q, %v", got, err)
		}
	}
	c.Close(websocket.StatusNormalClosure, "")
	rows := tg.rows(t, 1)
	// Echoes are no responses: the session's row only, metered throughout.
	if len(rows) != 1 || rows[0].Status != http.StatusSwitchingProtocols || rows[0].Agent != "codex-1" || rows[0].Outcome != "upgraded" {
		t.Errorf("ledger rows %+v", rows)
	}
}

// wsCreate sends one response.create and reads the events up to the
// response's end; it returns the last.
func wsCreate(t *testing.T, ctx context.Context, c *websocket.Conn, msg string) map[string]any {
	t.Helper()
	if err := c.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
		t.Fatal(err)
	}
	for {
		_, b, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		var ev map[string]any
		if err := json.Unmarshal(b, &ev); err != nil {
			t.Fatalf("event %q: %v", b, err)
		}
		switch ev["type"] {
		case "response.completed", "response.incomplete", "response.failed", "error":
			return ev
		}
	}
}

// usageOf reads a terminal event's response.usage as the client sees it.
func usageOf(t *testing.T, ev map[string]any) (in, cached, out int64) {
	t.Helper()
	b, _ := json.Marshal(ev)
	var e struct {
		Response struct {
			Usage struct {
				InputTokens        int64 `json:"input_tokens"`
				OutputTokens       int64 `json:"output_tokens"`
				InputTokensDetails struct {
					CachedTokens int64 `json:"cached_tokens"`
				} `json:"input_tokens_details"`
			} `json:"usage"`
		} `json:"response"`
	}
	if err := json.Unmarshal(b, &e); err != nil || e.Response.Usage.OutputTokens == 0 {
		t.Fatalf("no usage in %s (%v)", b, err)
	}
	u := e.Response.Usage
	return u.InputTokens, u.InputTokensDetails.CachedTokens, u.OutputTokens
}

func dialGateway(t *testing.T, ctx context.Context, tg *testGateway, secret string) (*websocket.Conn, *http.Response, error) {
	t.Helper()
	c, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(tg.URL, "http")+"/v1/responses", &websocket.DialOptions{
		HTTPHeader: http.Header{"Authorization": {"Bearer " + secret}}})
	if err == nil {
		t.Cleanup(func() { c.CloseNow() })
	}
	return c, resp, err
}

// TestWebSocketMetered: two responses over one Responses WebSocket, from
// llmfake through the gateway with a virtual key, leave a ledger row each,
// with the model and the usage llmfake served, priced, on the key; and the
// session's row.
func TestWebSocketMetered(t *testing.T) {
	t.Parallel()
	fs, up := fake(t, llmfake.Config{RequireKey: true})
	tg := start(t, Config{Upstreams: []Upstream{{Name: "openai", URL: up, Provider: llmapi.OpenAI, APIKey: "sk-real"}}})
	secret, key, err := CreateKey(t.Context(), tg.DB, "codex-1", 0, 0, 0, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	c, _, err := dialGateway(t, ctx, tg, secret)
	if err != nil {
		t.Fatal(err)
	}
	first := wsCreate(t, ctx, c, `{"type":"response.create","model":"gpt-5","input":"hello over the socket"}`)
	id, _ := first["response"].(map[string]any)["id"].(string)
	second := wsCreate(t, ctx, c, `{"type":"response.create","model":"gpt-5","previous_response_id":"`+id+`","input":"and once more, at more length"}`)
	if first["type"] != "response.completed" || second["type"] != "response.completed" {
		t.Fatalf("answers %v, %v", first["type"], second["type"])
	}
	c.Close(websocket.StatusNormalClosure, "")
	rows := tg.rows(t, 3)
	if len(rows) != 3 {
		t.Fatalf("ledger rows %+v, want two responses and the session", rows)
	}
	var in, out int64
	for i, ev := range []map[string]any{first, second} {
		r := rows[i]
		evIn, evCached, evOut := usageOf(t, ev)
		if r.Agent != "codex-1" || r.KeyID != key.ID || r.Model != "gpt-5" || r.Status != http.StatusOK || r.Outcome != "ok" ||
			!r.Stream || r.Attempts != 1 || r.Estimated {
			t.Errorf("response %d: row %+v", i, r)
		}
		if r.InputTokens != evIn-evCached || r.OutputTokens != evOut {
			t.Errorf("response %d: row tokens %d in, %d out; the client was told %d (%d cached) in, %d out", i, r.InputTokens, r.OutputTokens, evIn, evCached, evOut)
		}
		price, _ := llmapi.DefaultPrices().Cost("gpt-5", llmapi.Usage{InputTokens: evIn - evCached, CacheReadInputTokens: evCached, OutputTokens: evOut})
		if r.MicroUSD != int64(price) || price == 0 {
			t.Errorf("response %d: usd_micro %d, want %d", i, r.MicroUSD, price)
		}
		in, out = in+evIn, out+evOut
	}
	if s := rows[2]; s.Status != http.StatusSwitchingProtocols || s.Outcome != "upgraded" || s.InputTokens+s.OutputTokens+s.MicroUSD != 0 {
		t.Errorf("session row %+v", s)
	}
	served := fs.Stats().Keys["sk-real"]
	if served.Requests != 2 || served.TokensIn != in || served.TokensOut != out {
		t.Errorf("llmfake served %d requests, %d in, %d out; the ledger holds %d in, %d out", served.Requests, served.TokensIn, served.TokensOut, in, out)
	}
	ku, err := UsageOfKey(t.Context(), tg.DB, key.ID)
	if err != nil {
		t.Fatal(err)
	}
	if ku.InputTokens != served.TokensIn || ku.OutputTokens != served.TokensOut || ku.MicroUSD != rows[0].MicroUSD+rows[1].MicroUSD {
		t.Errorf("key usage %+v; llmfake served %d in, %d out", ku, served.TokensIn, served.TokensOut)
	}
}

// TestWebSocketBudget: a response over a WebSocket is charged to the key's
// budget as it ends. The session that spends the budget goes on (nothing
// is reserved ahead of a response); the key's next upgrade and its next
// HTTP request are refused.
func TestWebSocketBudget(t *testing.T) {
	t.Parallel()
	fs, up := fake(t, llmfake.Config{})
	tg := start(t, Config{Upstreams: []Upstream{{Name: "openai", URL: up, Provider: llmapi.OpenAI, APIKey: "sk-real"}}})
	secret, key, err := CreateKey(t.Context(), tg.DB, "codex-1", 0, 20, 0, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	c, _, err := dialGateway(t, ctx, tg, secret)
	if err != nil {
		t.Fatal(err)
	}
	create := `{"type":"response.create","model":"gpt-5","input":"a question long enough to cost more than twenty tokens of input and output together"}`
	for i := range 2 {
		if ev := wsCreate(t, ctx, c, create); ev["type"] != "response.completed" {
			t.Fatalf("response %d in the session: %v", i, ev)
		}
	}
	c.Close(websocket.StatusNormalClosure, "")
	_, resp, err := dialGateway(t, ctx, tg, secret)
	if err == nil || resp == nil || resp.StatusCode != http.StatusPaymentRequired {
		t.Fatalf("upgrade after the budget was spent: %v, %+v; want 402", err, resp)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, tg.URL+"/v1/responses", strings.NewReader(`{"model":"gpt-5","input":"hi"}`))
	req.Header.Set("Authorization", "Bearer "+secret)
	hresp, err := noKeepAlive(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(hresp.Body)
	hresp.Body.Close()
	if hresp.StatusCode != http.StatusPaymentRequired || !strings.Contains(string(body), "budget") {
		t.Errorf("HTTP request after the budget was spent: %d %s; want 402", hresp.StatusCode, body)
	}
	if n := fs.Stats().Keys["sk-real"].Requests; n != 2 {
		t.Errorf("llmfake served %d requests, want the session's 2", n)
	}
	rows := tg.rows(t, 5)
	var outcomes []string
	for _, r := range rows {
		if r.KeyID != key.ID {
			t.Errorf("row of key %q: %+v", r.KeyID, r)
		}
		outcomes = append(outcomes, fmt.Sprint(r.Status, " ", r.Outcome))
	}
	// The session's row is written once the handler is done with it, which
	// may be after the next upgrade: compare in order of status.
	slices.Sort(outcomes)
	if got := strings.Join(outcomes, ", "); got != "101 upgraded, 200 ok, 200 ok, 402 budget_exhausted, 402 budget_exhausted" {
		t.Errorf("ledger: %s", got)
	}
}

// rawUpstream serves one WebSocket handshake by hand: it answers 101 (with
// the extra header lines, if any), writes stream and closes. It reports the
// Sec-WebSocket-Extensions it was offered.
func rawUpstream(t *testing.T, extra string, stream []byte) (string, <-chan string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	ext := make(chan string, 1)
	go func() {
		conn, err := l.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		r, err := http.ReadRequest(bufio.NewReader(conn))
		if err != nil {
			return
		}
		ext <- r.Header.Get("Sec-WebSocket-Extensions")
		sum := sha1.Sum([]byte(r.Header.Get("Sec-WebSocket-Key") + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
		fmt.Fprintf(conn, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n%s\r\n",
			base64.StdEncoding.EncodeToString(sum[:]), extra)
		_, _ = conn.Write(stream)
	}()
	return "http://" + l.Addr().String(), ext
}

// rawClient opens a WebSocket through the gateway by hand, offering
// permessage-deflate, and returns every byte that came after the 101.
func rawClient(t *testing.T, tg *testGateway, secret string) []byte {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(tg.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(conn, "GET /v1/responses HTTP/1.1\r\nHost: gateway\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"+
		"Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\nAuthorization: Bearer %s\r\n\r\n", secret)
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("handshake: %v, %+v", err, resp)
	}
	got, err := io.ReadAll(br)
	if err != nil && !errors.Is(err, io.EOF) {
		t.Fatalf("read after %d bytes: %v", len(got), err)
	}
	return got
}

// TestWebSocketUnmetered: what the frame reader cannot follow (a
// compressed frame, an extension the upstream negotiated anyway) stops
// metering, and the session's row says so; responses before it are
// metered, and the client gets every byte as the upstream sent it. A
// response cut by the end of the session is recorded from what it
// streamed, estimated; fragments with a ping between are one message.
func TestWebSocketUnmetered(t *testing.T) {
	t.Parallel()
	completed := `{"type":"response.completed","response":{"id":"resp_1","object":"response","status":"completed","model":"gpt-5",` +
		`"usage":{"input_tokens":120,"input_tokens_details":{"cached_tokens":100},"output_tokens":30,"output_tokens_details":{"reasoning_tokens":10},"total_tokens":150}}}`
	created := `{"type":"response.created","response":{"id":"resp_2","object":"response","status":"in_progress","model":"gpt-5","usage":null}}`
	delta := `{"type":"response.output_text.delta","item_id":"msg_2","output_index":0,"content_index":0,"delta":"forty bytes of streamed text, more or so"}`
	ok := []string{"200 ok gpt-5 20+100 30"}
	for _, tc := range []struct {
		name    string
		extra   string // header lines of the 101
		stream  []byte
		rows    []string // the responses' rows: status, outcome, model, uncached+cached input, output
		session string
	}{
		{name: "compressed frame", stream: wsJoin(wsTextFrame(created), wsTextFrame(completed), []byte{0x80 | 0x40 | wsText, 4, 0xF2, 0x48, 0x05, 0x00}, wsTextFrame(completed)),
			rows: ok, session: "upgraded_unmetered"},
		{name: "extension negotiated anyway", extra: "Sec-WebSocket-Extensions: permessage-deflate\r\n", stream: wsTextFrame(completed),
			session: "upgraded_unmetered"},
		{name: "fragments with a ping between", stream: wsJoin(wsTextFrame(created),
			wsFrame(false, wsText, []byte(completed[:50]), false), wsFrame(true, wsPing, []byte("hi"), false),
			wsFrame(true, wsContinuation, []byte(completed[50:]), true), wsFrame(true, wsClose, []byte{0x03, 0xE8}, false)),
			rows: ok, session: "upgraded"},
		{name: "cut mid-response", stream: wsJoin(wsTextFrame(completed), wsTextFrame(created), wsTextFrame(delta)),
			rows: append(ok, "200 truncated gpt-5 0+0 10 estimated"), session: "upgraded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			up, offered := rawUpstream(t, tc.extra, tc.stream)
			tg := start(t, Config{Upstreams: []Upstream{{Name: "openai", URL: up, Provider: llmapi.OpenAI, APIKey: "sk-real"}}})
			secret, _, err := CreateKey(t.Context(), tg.DB, "codex-1", 0, 0, 0, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if got := rawClient(t, tg, secret); !bytes.Equal(got, tc.stream) {
				t.Errorf("the client got %d bytes %x,\nthe upstream sent %d: %x", len(got), got, len(tc.stream), tc.stream)
			}
			if ext := <-offered; ext != "" {
				t.Errorf("upstream was offered Sec-WebSocket-Extensions %q", ext)
			}
			tg.rows(t, len(tc.rows)+1)
			q, err := tg.DB.Query(`SELECT status, outcome, model, input_tokens, cache_read_tokens, output_tokens, usage_estimated FROM gateway_requests ORDER BY id`)
			if err != nil {
				t.Fatal(err)
			}
			defer q.Close()
			var got []string
			for q.Next() {
				var status int
				var outcome, model string
				var in, cached, out int64
				var est bool
				if err := q.Scan(&status, &outcome, &model, &in, &cached, &out, &est); err != nil {
					t.Fatal(err)
				}
				row := fmt.Sprintf("%d %s %s %d+%d %d", status, outcome, model, in, cached, out)
				if est {
					row += " estimated"
				}
				got = append(got, row)
			}
			want := append(append([]string{}, tc.rows...), "101 "+tc.session+"  0+0 0")
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("ledger:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}
