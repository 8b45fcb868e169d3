package mcpserver

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync"
	"unicode/utf16"
	"unicode/utf8"

	segjson "github.com/segmentio/encoding/json"
)

// JSON on the hot path. A tools/call carrying a 1 MiB file crosses the
// transport, the SDK and the argument check; each full pass of
// encoding/json's scanner over it costs several milliseconds, and the SDK's
// own path made five of them. Here the line is split into raw values by
// segmentio's decoder (which validates as it goes, in one pass), the
// arguments are split once more, and a string argument is unescaped once,
// when the tool reads it.

// splitObject splits a JSON object into its members' raw values,
// validating it. Later duplicates win, as in encoding/json.
// The values alias raw (no copy): raw must not be reused.
func splitObject(raw []byte) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	rest, err := segjson.Parse(raw, &m, segjson.DontCopyRawMessage)
	if err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(rest)) != 0 {
		return nil, errTrailing
	}
	return m, nil
}

var errTrailing = errors.New("data after the JSON value")

// unquote decodes a JSON string literal already validated by the decoder
// that split it out. Like encoding/json, it turns invalid UTF-8 and lone
// surrogates into U+FFFD.
func unquote(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	s := raw[1 : len(raw)-1]
	valid := utf8.Valid(s)
	first := bytes.IndexByte(s, '\\')
	if first < 0 {
		if valid {
			return string(s), true
		}
		return string(validUTF8(nil, s)), true
	}
	// A Builder hands over its buffer without the copy string(buf) makes;
	// the byte loop costs less than a call per escape where escapes are
	// dense (source code: quotes and backslashes every few bytes).
	var b strings.Builder
	b.Grow(len(s))
	keep := func(chunk []byte) {
		if valid {
			b.Write(chunk)
		} else {
			b.Write(validUTF8(nil, chunk))
		}
	}
	keep(s[:first])
	start := first
	for i := first; i < len(s); {
		if s[i] != '\\' {
			i++
			continue
		}
		keep(s[start:i])
		if i+1 >= len(s) {
			return "", false
		}
		switch c := s[i+1]; c {
		case '"', '\\', '/':
			b.WriteByte(c)
			i += 2
		case 'b':
			b.WriteByte('\b')
			i += 2
		case 'f':
			b.WriteByte('\f')
			i += 2
		case 'n':
			b.WriteByte('\n')
			i += 2
		case 'r':
			b.WriteByte('\r')
			i += 2
		case 't':
			b.WriteByte('\t')
			i += 2
		case 'u':
			r, ok := hex4(s[i+2:])
			if !ok {
				return "", false
			}
			i += 6
			if utf16.IsSurrogate(r) {
				r2 := rune(-1)
				if i+6 <= len(s) && s[i] == '\\' && s[i+1] == 'u' {
					if r2, ok = hex4(s[i+2:]); !ok {
						return "", false
					}
				}
				if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
					r = dec
					i += 6
				} else {
					r = utf8.RuneError
				}
			}
			b.WriteRune(r)
		default:
			return "", false
		}
		start = i
	}
	keep(s[start:])
	return b.String(), true
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	n, err := strconv.ParseUint(string(b[:4]), 16, 32)
	return rune(n), err == nil
}

// validUTF8 appends s to buf with each invalid byte replaced by U+FFFD.
func validUTF8(buf, s []byte) []byte {
	if utf8.Valid(s) {
		return append(buf, s...)
	}
	for len(s) > 0 {
		r, n := utf8.DecodeRune(s)
		if r == utf8.RuneError && n == 1 {
			buf = utf8.AppendRune(buf, utf8.RuneError)
		} else {
			buf = append(buf, s[:n]...)
		}
		s = s[n:]
	}
	return buf
}

// metaArgsKey is the _meta key by which the stdio transport hands a
// tools/call's already split arguments to the tool handler, so the SDK
// decodes only the small rest of the params.
const metaArgsKey = "dev.apiary/args"

// splitCalls are the tools/calls whose arguments the stdio transport
// split, by a random token: the arguments until the handler takes them,
// and the call's cancellation, so that a notifications/cancelled cancels
// the handler as the transport reads it — before any message the client
// sent after it — where the SDK would apply it later on a goroutine of its
// own. Entries are removed when the handler ends, or by the transport when
// the request is answered without reaching it.
var splitCalls sync.Map // token → *splitCall

// splitCall is one split tools/call. Its cancellation may come before its
// handler starts.
type splitCall struct {
	mu        sync.Mutex
	args      map[string]json.RawMessage
	taken     bool // by the handler
	cancelled bool
	cancel    context.CancelFunc // the handler's, once it started
}

func newToken() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// takeCall returns the arguments the transport split for this call, if it
// did, with ctx bound to the call's cancellation (cancelled at once if the
// client cancelled already) and the function that ends the call.
func takeCall(ctx context.Context, meta map[string]any) (map[string]json.RawMessage, context.Context, func(), bool) {
	tok, ok := meta[metaArgsKey].(string)
	if !ok {
		return nil, ctx, nil, false
	}
	v, ok := splitCalls.Load(tok)
	if !ok {
		return nil, ctx, nil, false
	}
	c := v.(*splitCall)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.taken {
		return nil, ctx, nil, false
	}
	ctx, cancel := context.WithCancel(ctx)
	args := c.args
	c.args, c.taken, c.cancel = nil, true, cancel
	if c.cancelled {
		cancel()
	}
	delete(meta, metaArgsKey)
	return args, ctx, func() {
		cancel()
		splitCalls.Delete(tok)
	}, true
}

// cancelCall cancels the split call whose token is tok: its handler's
// context now, or as the handler starts.
func cancelCall(tok string) {
	v, ok := splitCalls.Load(tok)
	if !ok {
		return
	}
	c := v.(*splitCall)
	c.mu.Lock()
	c.cancelled = true
	cancel := c.cancel
	c.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}
