//go:build unix

package mcpserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/apiary-dev/apiary/internal/durable"
	"github.com/apiary-dev/apiary/internal/mcpserver"
)

// benchSizes are the content sizes of the write benchmarks.
var benchSizes = []struct {
	name string
	n    int
}{{"4KiB", 4 << 10}, {"1MiB", 1 << 20}}

// BenchmarkSafeWriteRoutes is one rw.safe_write (overwrite, 16 names in
// rotation, on the real disk with every fsync) taken four ways in one run,
// so the ratios hold on a shared machine: durable.SafeWrite in process; the
// go-sdk client through in-memory transports to mcpserver.New; the go-sdk
// client through pipes to ServeStdio in this process (our transport without
// a second process's scheduling); and the go-sdk client through stdio to a
// real `apiary mcp` process. The content is
// source-like text with quotes, backslashes and non-ASCII, so JSON escaping
// costs what it costs for real files.
func BenchmarkSafeWriteRoutes(b *testing.B) {
	for _, sz := range benchSizes {
		content := benchContent(sz.n)
		b.Run("inproc/"+sz.name, func(b *testing.B) {
			w, err := durable.Open(b.Context(), durable.Config{Roots: []string{b.TempDir()}})
			if err != nil {
				b.Fatal(err)
			}
			defer w.Close()
			c0 := selfCPU()
			benchLoop(b, sz.n, func(i int) error {
				_, err := w.SafeWrite(b.Context(), durable.SafeWriteParams{Path: fmt.Sprintf("f%d.txt", i%16), Content: content, Mode: "overwrite"})
				return err
			})
			b.ReportMetric(float64((selfCPU()-c0).Microseconds())/float64(b.N)/1000, "cpu-ms/op")
		})
		b.Run("mcp-inmem/"+sz.name, func(b *testing.B) {
			w, err := durable.Open(b.Context(), durable.Config{Roots: []string{b.TempDir()}})
			if err != nil {
				b.Fatal(err)
			}
			defer w.Close()
			st, ct := mcp.NewInMemoryTransports()
			ss, err := mcpserver.New(w, mcpserver.Options{}).Connect(b.Context(), st, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer ss.Close()
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(b.Context(), ct, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer cs.Close()
			benchLoop(b, sz.n, callWrite(b, cs, content))
		})
		b.Run("mcp-pipe/"+sz.name, func(b *testing.B) {
			w, err := durable.Open(b.Context(), durable.Config{Roots: []string{b.TempDir()}})
			if err != nil {
				b.Fatal(err)
			}
			defer w.Close()
			cr, sw := io.Pipe()
			sr, cw := io.Pipe()
			done := make(chan error, 1)
			go func() {
				done <- mcpserver.ServeStdio(context.WithoutCancel(b.Context()), mcpserver.New(w, mcpserver.Options{}), sr, sw)
			}()
			defer func() { cw.Close(); <-done }()
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(b.Context(), &mcp.IOTransport{Reader: cr, Writer: cw}, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer cs.Close()
			benchLoop(b, sz.n, callWrite(b, cs, content))
		})
		b.Run("mcp-stdio/"+sz.name, func(b *testing.B) {
			ws := b.TempDir()
			cmd := apiaryCmd(b, ws, srvOpts{}, "mcp")
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(b.Context(), &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
			if err != nil {
				b.Fatal(err)
			}
			defer cs.Close()
			c0, s0 := selfCPU(), procCPU(cmd.Process.Pid)
			benchLoop(b, sz.n, callWrite(b, cs, content))
			b.ReportMetric(float64((selfCPU()-c0).Microseconds())/float64(b.N)/1000, "client-cpu-ms/op")
			b.ReportMetric(float64((procCPU(cmd.Process.Pid)-s0).Microseconds())/float64(b.N)/1000, "server-cpu-ms/op")
		})
		// The same real `apiary mcp` with a client as small as one can be:
		// encoding/json makes each request's line, and the reply line is
		// read back whole. What is left is the server and the pipe.
		b.Run("raw-stdio/"+sz.name, func(b *testing.B) {
			c := startRawStdio(b, apiaryCmd(b, b.TempDir(), srvOpts{}, "mcp"))
			c0, s0 := selfCPU(), procCPU(c.pid)
			benchLoop(b, sz.n, func(i int) error {
				return c.call(i, "rw.safe_write", map[string]any{"path": fmt.Sprintf("f%d.txt", i%16), "content": content, "mode": "overwrite"})
			})
			b.ReportMetric(float64((selfCPU()-c0).Microseconds())/float64(b.N)/1000, "client-cpu-ms/op")
			b.ReportMetric(float64((procCPU(c.pid)-s0).Microseconds())/float64(b.N)/1000, "server-cpu-ms/op")
		})
	}
}

// rawStdio is a minimal MCP client of a stdio server: newline-delimited
// JSON-RPC written and read by hand.
type rawStdio struct {
	in  io.WriteCloser
	out *bufio.Reader
	pid int
}

func startRawStdio(b *testing.B, cmd *exec.Cmd) *rawStdio {
	b.Helper()
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { in.Close(); _ = cmd.Wait() })
	c := &rawStdio{in: in, out: bufio.NewReaderSize(out, 1<<20), pid: cmd.Process.Pid}
	if _, err := c.roundTrip(map[string]any{"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": map[string]any{
		"protocolVersion": "2025-11-25", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "bench", "version": "1"}}}); err != nil {
		b.Fatal(err)
	}
	if err := c.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"}); err != nil {
		b.Fatal(err)
	}
	return c
}

func (c *rawStdio) send(msg any) error {
	line, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	_, err = c.in.Write(append(line, '\n'))
	return err
}

func (c *rawStdio) roundTrip(msg any) ([]byte, error) {
	if err := c.send(msg); err != nil {
		return nil, err
	}
	return c.out.ReadBytes('\n')
}

// call makes one tools/call and fails unless the tool succeeded.
func (c *rawStdio) call(id int, tool string, args map[string]any) error {
	line, err := c.roundTrip(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": map[string]any{"name": tool, "arguments": args}})
	if err != nil {
		return err
	}
	var reply struct {
		ID     int `json:"id"`
		Result *struct {
			IsError bool `json:"isError"`
		} `json:"result"`
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	switch err := json.Unmarshal(line, &reply); {
	case err != nil:
		return fmt.Errorf("reply %.200q: %w", line, err)
	case reply.Error != nil:
		return fmt.Errorf("call %d: %s", id, reply.Error.Message)
	case reply.ID != id || reply.Result == nil || reply.Result.IsError:
		return fmt.Errorf("call %d: reply %.300s", id, line)
	}
	return nil
}

// selfCPU is this process's user+system CPU time so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// procCPU is process pid's user+system CPU time so far, from
// /proc/PID/stat (clock ticks of 10 ms; the benchmark divides a long run).
func procCPU(pid int) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+st) * 10 * time.Millisecond
}

func callWrite(b *testing.B, cs *mcp.ClientSession, content string) func(i int) error {
	return func(i int) error {
		res, err := cs.CallTool(b.Context(), &mcp.CallToolParams{Name: "rw.safe_write", Arguments: map[string]any{
			"path": fmt.Sprintf("f%d.txt", i%16), "content": content, "mode": "overwrite"}})
		if err == nil && res.IsError {
			err = fmt.Errorf("%v", res.Content[0].(*mcp.TextContent).Text)
		}
		return err
	}
}

// benchLoop runs op per iteration and reports p50 and p99 latency.
func benchLoop(b *testing.B, n int, op func(i int) error) {
	var lat []time.Duration
	b.SetBytes(int64(n))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		t0 := time.Now()
		if err := op(i); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
		i++
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds()), "p99-ns")
}

// benchContent is n bytes of Go-like source text.
func benchContent(n int) string {
	unit := "func f() string { return \"path\\\\to\\\\file — ünïcode\" } // \"quoted\"\n"
	s := strings.Repeat(unit, n/len(unit)+1)[:n]
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s + strings.Repeat("x", n-len(s))
}
