//go:build unix

package mcpserver_test

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestProtocolEras: the real server speaks the 2025-11-25 handshake and the
// 2026-07-28 stateless protocol, over stdio and over streamable HTTP.
func TestProtocolEras(t *testing.T) {
	t.Parallel()
	for _, tr := range []string{stdio, httpT} {
		for _, version := range []string{"2025-11-25", "2026-07-28"} {
			t.Run(tr+"/"+version, func(t *testing.T) {
				t.Parallel()
				ws := workspaceDir(t)
				var transport mcp.Transport
				if tr == stdio {
					transport = &mcp.CommandTransport{Command: apiaryCmd(t, ws, srvOpts{}, "mcp")}
				} else {
					transport = &mcp.StreamableClientTransport{Endpoint: startHTTP(t, ws, srvOpts{}), DisableStandaloneSSE: true}
				}
				client := mcp.NewClient(&mcp.Implementation{Name: "eras", Version: "1"}, nil)
				cs, err := client.Connect(t.Context(), transport, &mcp.ClientSessionOptions{ProtocolVersion: version})
				if err != nil {
					t.Fatal(err)
				}
				defer cs.Close()
				if got := cs.InitializeResult().ProtocolVersion; got != version {
					t.Fatalf("negotiated %s, want %s", got, version)
				}
				c := &pc{t: t, ws: ws, cs: cs, ctx: t.Context(), state: ".apiary/durable"}
				c.ok("rw.safe_write", map[string]any{"path": "era.txt", "content": version})
				if c.read("era.txt") != version {
					t.Fatal("not written")
				}
				c.fail("rw.nope", nil, "policy_violation", "unknown")
			})
		}
	}
}

// TestProgress: a long operation called with a progress token sends
// strictly increasing notifications/progress before its result.
func TestProgress(t *testing.T) {
	t.Parallel()
	for _, tr := range []string{inMemory, stdio, httpT} {
		t.Run(tr, func(t *testing.T) {
			t.Parallel()
			notes := make(chan *mcp.ProgressNotificationParams, 100)
			c := startServer(t, tr, srvOpts{client: &mcp.ClientOptions{ProgressNotificationHandler: func(ctx context.Context, req *mcp.ProgressNotificationClientRequest) {
				notes <- req.Params
			}}}, nil)
			for range 5 {
				c.ok("rw.chunk_append", map[string]any{"session": "p", "content": "x"})
			}
			params := &mcp.CallToolParams{Name: "rw.chunk_compose", Arguments: map[string]any{"session": "p", "output_path": "p.txt"}}
			params.SetProgressToken("tok-1")
			res, err := c.cs.CallTool(t.Context(), params)
			if err != nil {
				t.Fatal(err)
			}
			checkResult(t, "rw.chunk_compose", res)
			// The client may dispatch notifications concurrently with the
			// result and with each other: collect all six (five parts read,
			// then "composed"), in any order.
			var got []float64
			for len(got) < 6 {
				select {
				case n := <-notes:
					if n.ProgressToken != "tok-1" || n.Total != 6 {
						t.Fatalf("notification %+v", n)
					}
					got = append(got, n.Progress)
				case <-time.After(30 * time.Second): // hang guard, not a timing assertion
					t.Fatalf("progress notifications so far %v", got)
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, []float64{1, 2, 3, 4, 5, 6}) {
				t.Fatalf("progress %v, want 1..6 each once", got)
			}
		})
	}
}

// TestHTTPGuards: Origin validation and the request size limits.
func TestHTTPGuards(t *testing.T) {
	t.Parallel()
	url := startHTTP(t, t.TempDir(), srvOpts{})
	post := func(origin string, body []byte) int {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	init := []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"g","version":"1"}}}`)
	if code := post("http://evil.example", init); code != http.StatusForbidden {
		t.Errorf("foreign Origin: %d", code)
	}
	if code := post("http://localhost:1234", init); code != http.StatusOK {
		t.Errorf("localhost Origin: %d", code)
	}
	big := append([]byte(`{"jsonrpc":"2.0","id":2,"method":"ping","params":{"x":"`), bytes.Repeat([]byte("a"), 5<<20)...)
	big = append(big, `"}}`...)
	if code := post("", big); code != http.StatusRequestEntityTooLarge {
		t.Errorf("large non-call request: %d", code)
	}
}

// TestWriteScopeAndRoots: --write-scope confines writes (component-wise);
// extra roots are addressed as @NAME/path and journaled that way.
func TestWriteScopeAndRoots(t *testing.T) {
	t.Parallel()
	for _, tr := range []string{stdio, httpT} {
		t.Run(tr, func(t *testing.T) {
			t.Parallel()
			other := filepath.Join(t.TempDir(), "shared")
			os.MkdirAll(other, 0o755)
			c := startServer(t, tr, srvOpts{args: []string{"--root", "$WS", "--root", other, "--write-scope", "src", "--write-scope", "@shared"}}, nil)
			c.ok("rw.safe_write", map[string]any{"path": "src/a.go", "content": "package a\n"})
			for _, p := range []string{"README.md", "src2/x", "srcx"} {
				if e := c.fail("rw.safe_write", map[string]any{"path": p, "content": "x"}, "policy_violation", "permission"); reason(e) != "outside_write_scope" {
					t.Fatalf("%s: %v", p, e)
				}
			}
			c.fail("rw.move", map[string]any{"from": "src/a.go", "to": "a.go"}, "policy_violation", "permission")
			r := c.ok("rw.safe_write", map[string]any{"path": "@shared/notes.txt", "content": "shared\n"})
			if r["path"] != "@shared/notes.txt" {
				t.Fatalf("display path %v", r["path"])
			}
			if b, _ := os.ReadFile(filepath.Join(other, "notes.txt")); string(b) != "shared\n" {
				t.Fatalf("extra root file %q", b)
			}
			c.fail("rw.safe_write", map[string]any{"path": "@nope/x", "content": "x"}, "policy_violation", "permission")
			c.fail("rw.safe_write", map[string]any{"path": "@shared/../x", "content": "x"}, "policy_violation", "permission")
			rows := c.journal()
			if len(rows) != 2 || rows[1]["path"] != "@shared/notes.txt" {
				t.Fatalf("journal %v", rows)
			}
			if _, err := os.Stat(filepath.Join(other, ".apiary")); err == nil {
				t.Fatal("state written into the extra root")
			}
		})
	}
}
