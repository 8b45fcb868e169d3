package sse

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
)

func parseAll(t testing.TB, chunks ...string) []Event {
	t.Helper()
	var p Parser
	var got []Event
	for _, c := range chunks {
		if err := p.Feed([]byte(c), func(e Event) { got = append(got, e) }); err != nil {
			t.Fatalf("Feed(%q): %v", c, err)
		}
	}
	return got
}

func TestParser(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want []Event
	}{
		{"anthropic event", "event: message_start\ndata: {\"a\":1}\n\n",
			[]Event{{Type: "message_start", Data: `{"a":1}`, Retry: -1}}},
		{"multi data lines", "data: a\ndata: b\n\n", []Event{{Data: "a\nb", Retry: -1}}},
		{"comment ignored", ": ping\n\ndata: x\n\n", []Event{{Data: "x", Retry: -1}}},
		{"crlf", "event: e\r\ndata: x\r\n\r\n", []Event{{Type: "e", Data: "x", Retry: -1}}},
		{"cr only", "event: e\rdata: x\r\r", []Event{{Type: "e", Data: "x", Retry: -1}}},
		{"no space after colon", "data:x\n\n", []Event{{Data: "x", Retry: -1}}},
		{"only first space stripped", "data:  x\n\n", []Event{{Data: " x", Retry: -1}}},
		{"field without colon", "data\n\n", []Event{{Data: "", Retry: -1}}},
		{"event without data is dropped", "event: e\n\ndata: y\n\n", []Event{{Data: "y", Retry: -1}}},
		{"id persists", "id: 7\ndata: a\n\ndata: b\n\n", []Event{{Data: "a", ID: "7", Retry: -1}, {Data: "b", ID: "7", Retry: -1}}},
		{"retry", "retry: 1500\ndata: a\n\n", []Event{{Data: "a", Retry: 1500}}},
		{"bad retry ignored", "retry: 1x\ndata: a\n\n", []Event{{Data: "a", Retry: -1}}},
		{"bom", "\xEF\xBB\xBFdata: a\n\n", []Event{{Data: "a", Retry: -1}}},
		{"unknown field ignored", "foo: bar\ndata: a\n\n", []Event{{Data: "a", Retry: -1}}},
		{"openai done", "data: {\"x\":1}\n\ndata: [DONE]\n\n", []Event{{Data: `{"x":1}`, Retry: -1}, {Data: "[DONE]", Retry: -1}}},
		{"trailing partial not dispatched", "data: a\n\ndata: b\n", []Event{{Data: "a", Retry: -1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := parseAll(t, tt.in)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
			// Any split of the input must give the same events.
			for i := 0; i <= len(tt.in); i++ {
				for j := i; j <= len(tt.in); j++ {
					split := parseAll(t, tt.in[:i], tt.in[i:j], tt.in[j:])
					if !reflect.DeepEqual(split, tt.want) {
						t.Fatalf("split at %d,%d: got %+v, want %+v", i, j, split, tt.want)
					}
				}
			}
		})
	}
}

func TestParserLineLimit(t *testing.T) {
	t.Parallel()
	p := Parser{MaxLine: 8}
	err := p.Feed([]byte("data: 0123456789\n\n"), func(Event) {})
	if !errors.Is(err, ErrLineTooLong) {
		t.Fatalf("err = %v, want ErrLineTooLong", err)
	}
	// Split across feeds too.
	p = Parser{MaxLine: 8}
	if err := p.Feed([]byte("data: 01"), func(Event) {}); err != nil {
		t.Fatal(err)
	}
	if err := p.Feed([]byte("23456789"), func(Event) {}); !errors.Is(err, ErrLineTooLong) {
		t.Fatalf("err = %v, want ErrLineTooLong", err)
	}
}

func TestReader(t *testing.T) {
	t.Parallel()
	in := "event: a\ndata: 1\n\nevent: b\ndata: 2\n\n"
	r := NewReader(iotest.OneByteReader(strings.NewReader(in)))
	var types []string
	for {
		ev, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		types = append(types, ev.Type+"="+ev.Data)
	}
	if got := strings.Join(types, ","); got != "a=1,b=2" {
		t.Errorf("events = %s", got)
	}
}

func TestReaderTruncated(t *testing.T) {
	t.Parallel()
	r := NewReader(strings.NewReader("event: a\ndata: 1\n\nevent: b\ndata: 2"))
	if _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Next(); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("err = %v, want io.ErrUnexpectedEOF", err)
	}
}

func TestWriterRoundTrip(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	bw := bufio.NewWriter(&buf)
	w := NewWriter(bw)
	if err := w.Event("message_start", []byte(`{"type":"message_start"}`)); err != nil {
		t.Fatal(err)
	}
	if err := w.Comment("keepalive"); err != nil {
		t.Fatal(err)
	}
	if err := w.EventID("", "9", []byte("line1\nline2\r\nline3")); err != nil {
		t.Fatal(err)
	}
	want := "event: message_start\ndata: {\"type\":\"message_start\"}\n\n: keepalive\n\nid: 9\ndata: line1\ndata: line2\ndata: line3\n\n"
	if buf.String() != want {
		t.Fatalf("wrote %q, want %q (the Writer must flush after every event)", buf.String(), want)
	}
	got := parseAll(t, buf.String())
	if len(got) != 2 || got[1].Data != "line1\nline2\nline3" || got[1].ID != "9" {
		t.Fatalf("round trip = %+v", got)
	}
}

// TestAppend pins the exact bytes of the encoders (what the providers send:
// "event: NAME\ndata: DATA\n\n", multi-line data as several data lines)
// and checks that the package's own Parser reads them back.
func TestAppend(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		typ, data string
		want      string
		wantData  string // what the Parser reads back
	}{
		{"anthropic", "content_block_stop", `{"type":"content_block_stop","index":0}`,
			"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n", `{"type":"content_block_stop","index":0}`},
		{"anthropic ping", "ping", `{"type": "ping"}`, "event: ping\ndata: {\"type\": \"ping\"}\n\n", `{"type": "ping"}`},
		{"no type", "", `{"x":1}`, "data: {\"x\":1}\n\n", `{"x":1}`},
		{"openai done", "", "[DONE]", "data: [DONE]\n\n", "[DONE]"},
		{"empty data", "e", "", "event: e\ndata: \n\n", ""},
		{"multi-line data", "", "a\nb\r\nc\rd", "data: a\ndata: b\ndata: c\ndata: d\n\n", "a\nb\nc\nd"},
		{"trailing newline", "", "a\n", "data: a\ndata: \n\n", "a\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			prefix := []byte("keep")
			got := AppendEvent(prefix, tt.typ, []byte(tt.data))
			if string(got) != "keep"+tt.want {
				t.Fatalf("AppendEvent = %q, want %q after the prefix", got, tt.want)
			}
			evs := parseAll(t, tt.want)
			if len(evs) != 1 || evs[0].Type != tt.typ || evs[0].Data != tt.wantData {
				t.Fatalf("parsed back %+v, want type %q data %q", evs, tt.typ, tt.wantData)
			}
		})
	}
}

func TestAppendComment(t *testing.T) {
	t.Parallel()
	tests := []struct{ text, want string }{
		{"keep-alive", ": keep-alive\n\n"},
		{"", ":\n\n"},
		{"a\ndata: injected\r\nb", ": a\n: data: injected\n: b\n\n"},
	}
	for _, tt := range tests {
		got := string(AppendComment(nil, tt.text))
		if got != tt.want {
			t.Errorf("AppendComment(%q) = %q, want %q", tt.text, got, tt.want)
		}
		// A comment dispatches nothing and leaves the next event intact.
		evs := parseAll(t, got+string(AppendEvent(nil, "e", []byte("x"))))
		if len(evs) != 1 || evs[0].Type != "e" || evs[0].Data != "x" {
			t.Errorf("comment %q then an event parsed as %+v", tt.text, evs)
		}
	}
}

// FuzzParser checks that feeding a stream in two pieces gives the same events
// as feeding it whole, and that what Writer writes parses back to the same
// data.
func FuzzParser(f *testing.F) {
	f.Add("event: a\ndata: 1\n\n", 3, "t", "d")
	f.Add("data: x\r\n\r\ndata: y\r\r", 9, "", "a\nb")
	f.Add(": c\nid: 1\nretry: 5\ndata\n\n", 0, "e", "")
	f.Fuzz(func(t *testing.T, in string, cut int, typ, data string) {
		var whole, split []Event
		var p1, p2 Parser
		err1 := p1.Feed([]byte(in), func(e Event) { whole = append(whole, e) })
		if cut < 0 {
			cut = -cut
		}
		cut %= len(in) + 1
		err2 := p2.Feed([]byte(in[:cut]), func(e Event) { split = append(split, e) })
		if err2 == nil {
			err2 = p2.Feed([]byte(in[cut:]), func(e Event) { split = append(split, e) })
		}
		if (err1 == nil) != (err2 == nil) {
			t.Fatalf("errors differ: %v vs %v", err1, err2)
		}
		if !reflect.DeepEqual(whole, split) {
			t.Fatalf("whole %+v != split %+v", whole, split)
		}

		if strings.ContainsAny(typ, "\r\n") {
			return
		}
		var buf bytes.Buffer
		if err := NewWriter(&buf).Event(typ, []byte(data)); err != nil {
			t.Fatal(err)
		}
		got := parseAll(t, buf.String())
		want := strings.NewReplacer("\r\n", "\n", "\r", "\n").Replace(data)
		if len(got) != 1 || got[0].Data != want || got[0].Type != typ {
			t.Fatalf("round trip of (%q, %q) = %+v", typ, data, got)
		}
	})
}

func BenchmarkParser(b *testing.B) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	for range 100 {
		_ = w.Event("content_block_delta", []byte(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hello world "}}`))
	}
	in := buf.Bytes()
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		var p Parser
		_ = p.Feed(in, func(Event) { n++ })
	}
}
