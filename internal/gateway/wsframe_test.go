package gateway

import (
	"bytes"
	"encoding/binary"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// wsFrame encodes one unmasked frame as a server sends it: fin, opcode and
// payload, with the shortest length encoding, or the 64-bit one when long
// is set (legal on the wire, if not minimal).
func wsFrame(fin bool, op byte, payload []byte, long bool) []byte {
	b0 := op
	if fin {
		b0 |= 0x80
	}
	out := []byte{b0}
	switch n := len(payload); {
	case long || n > 0xFFFF:
		out = append(out, 127)
		out = binary.BigEndian.AppendUint64(out, uint64(n))
	case n > 125:
		out = append(out, 126)
		out = binary.BigEndian.AppendUint16(out, uint16(n))
	default:
		out = append(out, byte(n))
	}
	return append(out, payload...)
}

func wsTextFrame(s string) []byte { return wsFrame(true, wsText, []byte(s), false) }

func wsJoin(frames ...[]byte) []byte { return bytes.Join(frames, nil) }

type wsFrameCase struct {
	name   string
	stream []byte
	want   []string // the text messages, in order
	err    string   // a substring of the error; "" for none
	max    int      // the message limit; 0 for 1 KiB
}

var wsFrameCases = func() []wsFrameCase {
	long := strings.Repeat("x", 300)
	return []wsFrameCase{
		{name: "one text message", stream: wsTextFrame(`{"type":"response.created"}`), want: []string{`{"type":"response.created"}`}},
		{name: "control frames between messages", stream: wsJoin(
			wsTextFrame("a"), wsFrame(true, wsPing, []byte("p"), false), wsTextFrame("b"), wsFrame(true, wsPong, nil, false), wsTextFrame("c")),
			want: []string{"a", "b", "c"}},
		{name: "fragments with control frames between", stream: wsJoin(
			wsFrame(false, wsText, []byte("hel"), false), wsFrame(true, wsPing, []byte("ping"), false),
			wsFrame(false, wsContinuation, []byte("lo "), false), wsFrame(true, wsPong, []byte("pong"), false),
			wsFrame(true, wsContinuation, []byte("world"), false)),
			want: []string{"hello world"}},
		{name: "binary messages are skipped", stream: wsJoin(
			wsFrame(true, wsBinary, []byte{0x81, 0x05}, false), wsFrame(false, wsBinary, []byte("bin"), false),
			wsFrame(true, wsPing, nil, false), wsFrame(true, wsContinuation, []byte("ary"), false), wsTextFrame("t")),
			want: []string{"t"}},
		{name: "empty messages and fragments", stream: wsJoin(
			wsTextFrame(""), wsFrame(false, wsText, []byte("x"), false), wsFrame(false, wsContinuation, nil, false),
			wsFrame(true, wsContinuation, nil, false), wsFrame(false, wsText, nil, false), wsFrame(true, wsContinuation, []byte("y"), false)),
			want: []string{"", "x", "y"}},
		{name: "16-bit and 64-bit lengths", stream: wsJoin(
			wsTextFrame(long), wsFrame(true, wsText, []byte("short, 64-bit length"), true), wsFrame(false, wsText, []byte(long), true),
			wsFrame(true, wsContinuation, []byte("!"), false)),
			want: []string{long, "short, 64-bit length", long + "!"}},
		{name: "close frame", stream: wsJoin(wsTextFrame("last"), wsFrame(true, wsClose, []byte{0x03, 0xE8, 'b', 'y', 'e'}, false)),
			want: []string{"last"}},
		{name: "compressed frame (RSV1)", stream: wsJoin(wsTextFrame("before"), []byte{0x80 | 0x40 | wsText, 3, 1, 2, 3}, wsTextFrame("after")),
			want: []string{"before"}, err: "reserved bits"},
		{name: "RSV2 and RSV3", stream: wsJoin([]byte{0x80 | 0x30 | wsText, 0}), err: "reserved bits"},
		{name: "masked frame", stream: wsJoin(wsTextFrame("ok"), []byte{0x80 | wsText, 0x80 | 1, 0, 0, 0, 0, 'a'}),
			want: []string{"ok"}, err: "masked"},
		{name: "reserved data opcode", stream: []byte{0x80 | 0x3, 0}, err: "opcode"},
		{name: "reserved control opcode", stream: []byte{0x80 | 0xB, 0}, err: "opcode"},
		{name: "fragmented ping", stream: wsFrame(false, wsPing, nil, false), err: "fragmented websocket control"},
		{name: "control frame over 125 bytes", stream: wsFrame(true, wsPing, []byte(long), false), err: "over 125"},
		{name: "continuation without a message", stream: wsFrame(true, wsContinuation, []byte("x"), false), err: "outside"},
		{name: "new message inside a fragmented one", stream: wsJoin(wsFrame(false, wsText, []byte("x"), false), wsTextFrame("y")), err: "inside"},
		{name: "64-bit length with the top bit set", stream: []byte{0x80 | wsBinary, 127, 0x80, 0, 0, 0, 0, 0, 0, 1}, err: "top bit"},
		{name: "text message over the limit", stream: wsJoin(wsTextFrame("fits"), wsFrame(false, wsText, []byte(long[:40]), false),
			wsFrame(true, wsContinuation, []byte(long[:40]), false)), want: []string{"fits"}, err: "over 64 bytes", max: 64},
	}
}()

// runFrames feeds the pieces in order to a reader with the message limit
// max and returns the messages and the error.
func runFrames(max int, pieces ...[]byte) ([]string, error) {
	if max == 0 {
		max = 1 << 10
	}
	f := wsFrames{maxMessage: max}
	var got []string
	var err error
	for _, p := range pieces {
		if err = f.feed(p, func(m []byte) { got = append(got, string(m)) }); err != nil {
			break
		}
	}
	return got, err
}

func checkFrames(t *testing.T, tc wsFrameCase, got []string, err error, how string) {
	t.Helper()
	if !reflect.DeepEqual(got, tc.want) && (len(got) > 0 || len(tc.want) > 0) {
		t.Errorf("%s: messages %q, want %q", how, got, tc.want)
	}
	switch {
	case tc.err == "" && err != nil:
		t.Errorf("%s: error %v", how, err)
	case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
		t.Errorf("%s: error %v, want one saying %q", how, err, tc.err)
	}
}

// TestWSFrames: the frame reader gives every text message of a server's
// stream, whatever splits its reads, and stops at what it cannot follow,
// after the messages before it.
func TestWSFrames(t *testing.T) {
	t.Parallel()
	for _, tc := range wsFrameCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := runFrames(tc.max, tc.stream)
			checkFrames(t, tc, got, err, "whole")
			s := tc.stream
			for i := 0; i <= len(s); i++ {
				got, err := runFrames(tc.max, s[:i], s[i:])
				checkFrames(t, tc, got, err, "split at "+strconv.Itoa(i))
				for j := i; j <= len(s); j += 7 {
					got, err := runFrames(tc.max, s[:i], s[i:j], s[j:])
					checkFrames(t, tc, got, err, "split at "+strconv.Itoa(i)+" and "+strconv.Itoa(j))
				}
			}
			bytewise := make([][]byte, len(s))
			for i := range s {
				bytewise[i] = s[i : i+1]
			}
			got, err = runFrames(tc.max, bytewise...)
			checkFrames(t, tc, got, err, "byte by byte")
		})
	}
}

// TestWSFramesLargeMessage: a message in fragments of 64-bit length, with
// a ping between, arrives whole; a buffer that large is not kept after it.
func TestWSFramesLargeMessage(t *testing.T) {
	t.Parallel()
	big := bytes.Repeat([]byte("0123456789"), 60_000) // 600,000 bytes: a 64-bit length
	stream := wsJoin(wsFrame(false, wsText, big, false), wsFrame(true, wsPing, nil, false), wsFrame(true, wsContinuation, big, false))
	f := wsFrames{maxMessage: wsMaxMessage}
	var got [][]byte
	for p := stream; len(p) > 0; {
		n := min(len(p), 4096)
		if err := f.feed(p[:n], func(m []byte) { got = append(got, bytes.Clone(m)) }); err != nil {
			t.Fatal(err)
		}
		p = p[n:]
	}
	if len(got) != 1 || !bytes.Equal(got[0], append(bytes.Clone(big), big...)) {
		t.Fatalf("got %d messages", len(got))
	}
	if f.msg != nil {
		t.Errorf("a %d-byte buffer is kept after the message", cap(f.msg))
	}
}

// FuzzWSFrames: any bytes, split anywhere, give the same messages and the
// same error as read at once; nothing panics.
func FuzzWSFrames(f *testing.F) {
	for _, tc := range wsFrameCases {
		f.Add(tc.stream, uint16(len(tc.stream)/2))
	}
	f.Fuzz(func(t *testing.T, stream []byte, at uint16) {
		i := int(at) % (len(stream) + 1)
		whole, werr := runFrames(64, stream)
		split, serr := runFrames(64, stream[:i], stream[i:])
		if !reflect.DeepEqual(whole, split) || (werr == nil) != (serr == nil) || werr != nil && werr.Error() != serr.Error() {
			t.Fatalf("whole: %q %v; split at %d: %q %v", whole, werr, i, split, serr)
		}
		total := 0
		for _, m := range whole {
			total += len(m)
		}
		if total > len(stream) {
			t.Fatalf("%d message bytes out of %d", total, len(stream))
		}
	})
}
