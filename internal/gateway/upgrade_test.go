package gateway

import (
	"context"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/apiary-dev/apiary/internal/llmapi"
)

// A WebSocket upgrade (Codex's GET /v1/responses) is proxied to the
// upstream, both ways, with the agent's virtual key replaced by the real
// one; it is not answered 502.
func TestWebSocketUpgrade(t *testing.T) {
	t.Parallel()
	gotAuth := make(chan string, 1)
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
		c, err := websocket.Accept(w, r, nil)
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
		HTTPHeader: http.Header{"Authorization": {"Bearer " + secret}}})
	if err != nil {
		t.Fatalf("dial: %v (%+v)", err, resp)
	}
	defer c.CloseNow()
	if auth := <-gotAuth; auth != "Bearer sk-real" {
		t.Errorf("upstream saw Authorization %q", auth)
	}
	for _, m := range []string{`{"type":"response.create"}`, "second"} {
		if err := c.Write(ctx, websocket.MessageText, []byte(m)); err != nil {
			t.Fatal(err)
		}
		_, got, err := c.Read(ctx)
		if err != nil || string(got) != "echo: "+m {
			t.Fatalf("read %q, %v", got, err)
		}
	}
	c.Close(websocket.StatusNormalClosure, "")
	rows := tg.rows(t, 1)
	if rows[0].Status != http.StatusSwitchingProtocols || rows[0].Agent != "codex-1" {
		t.Errorf("ledger row %+v", rows[0])
	}
}
