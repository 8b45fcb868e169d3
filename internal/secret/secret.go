// Package secret finds credentials in content of any size: the token
// formats of the common services (GitHub classic and fine-grained, GitLab,
// Slack, AWS access and temporary keys and secrets, Google Cloud
// service-account keys and API keys, Stripe, OpenAI, Anthropic, npm),
// private keys and JWTs. A Scanner streams its input line by line in
// bounded memory — a line longer than its window is scanned in
// overlapping windows — so a key in the middle of a 6 MB generated file,
// a minified bundle or a binary is found like any other; nothing is
// skipped for its size.
//
// Hits carry a fingerprint of the secret (so a caller can tell a secret
// the change adds from one its base already had) and a redacted prefix,
// never the secret itself.
package secret

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"slices"
	"unicode/utf8"
)

// Hit is one credential found.
type Hit struct {
	Rule   string // the detector (Rule.Name)
	Family string // its family (Family*)
	Line   int    // 1-based line of the match's start
	Offset int64  // byte offset of the match's start
	// Fingerprint is the hex SHA-256 of the secret: equal secrets have
	// equal fingerprints.
	Fingerprint string
	// Redacted is the secret's first few characters and "…": enough to
	// find it, not enough to use it.
	Redacted string
}

// Scanner finds credentials with a set of rules. The zero value uses
// Rules() and the default window; a Scanner is safe for concurrent use
// once built.
type Scanner struct {
	// Rules are the detectors; nil means Rules().
	Rules []Rule
	// Window is how much of a line is matched at once (default 256 KiB);
	// Overlap is how far consecutive windows of one long line overlap
	// (default 16 KiB), the longest secret found across a window's edge.
	Window, Overlap int
}

// ErrStop, returned by a Scan callback, ends the scan without an error.
var ErrStop = errors.New("secret: stop")

// Scan reads r to its end and calls fn with each hit, in order. It
// returns fn's error (nil for ErrStop), the reader's, or ctx's.
//
// The input is read in windows of whole lines; a rule's expression runs
// on a window only when one of its literals occurs in it, so a window
// without credentials costs a few byte searches. No rule matches across
// a line break, so a window of whole lines is matched as its lines would
// be one by one.
func (s *Scanner) Scan(ctx context.Context, r io.Reader, fn func(Hit) error) error {
	rules := s.Rules
	if rules == nil {
		rules = builtin
	}
	window, overlap := s.Window, s.Overlap
	if window <= 0 {
		window = 256 << 10
	}
	if overlap <= 0 || overlap >= window/2 {
		overlap = min(16<<10, window/4)
	}
	st := &state{rules: rules, fn: fn, line: 1, seen: map[int64]bool{}}
	buf := make([]byte, window)
	n := 0          // bytes in buf
	var at int64    // offset of buf[0] in the input
	overlapped := 0 // leading bytes of buf already scanned (a long line's tail)
	eof := false
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		for n < len(buf) && !eof {
			m, err := r.Read(buf[n:])
			n += m
			if errors.Is(err, io.EOF) {
				eof = true
			} else if err != nil {
				return err
			}
		}
		if n == 0 {
			return nil
		}
		end := n // scan buf[:end]; keep buf[keep:n] for the next window
		keep := n
		if !eof {
			if nl := bytes.LastIndexByte(buf[:n], '\n'); nl >= 0 {
				end, keep = nl+1, nl+1
			} else {
				keep = n - overlap // a line longer than the window
			}
		}
		again := 0 // the window's tail the next window scans again
		if keep < end {
			again = end - keep
		}
		if err := st.scan(buf[:end], at, overlapped, again); err != nil {
			if errors.Is(err, ErrStop) {
				return nil
			}
			return err
		}
		if eof && keep == n {
			return nil
		}
		overlapped = again
		st.line += bytes.Count(buf[:keep], []byte("\n"))
		copy(buf, buf[keep:n])
		at += int64(keep)
		n -= keep
	}
}

// builtin is Rules(), compiled once; it is never modified.
var builtin = Rules()

// state is one scan in progress.
type state struct {
	rules []Rule
	fn    func(Hit) error
	line  int            // line of the window's first byte
	seen  map[int64]bool // matches reported in a long line's overlap
	lower []byte
	hits  []Hit
}

// scan matches one window that starts at offset at, on line st.line; its
// first `overlapped` bytes were the end of the previous window, and its
// last `again` bytes will begin the next one.
func (st *state) scan(text []byte, at int64, overlapped, again int) error {
	if overlapped == 0 {
		clear(st.seen)
	}
	st.lower = st.lower[:0]
	type span struct{ a, b int }
	var taken []span
	st.hits = st.hits[:0]
	for i := range st.rules {
		r := &st.rules[i]
		if r.fold && len(st.lower) == 0 {
			st.lower = lowerInto(st.lower, text)
		}
		if !r.candidate(text, st.lower) {
			continue
		}
		for _, m := range r.re.FindAllSubmatchIndex(text, -1) {
			a, b := m[0], m[1]
			if g := 2 * r.group; r.group > 0 && g+1 < len(m) && m[g] >= 0 {
				a, b = m[g], m[g+1]
			}
			sec := text[a:b]
			if r.valid != nil && !r.valid(sec) {
				continue
			}
			overlaps := false
			for _, t := range taken {
				if a < t.b && t.a < b {
					overlaps = true // a more specific rule already has it
					break
				}
			}
			if overlaps || m[0] < overlapped && st.seen[at+int64(m[0])] {
				continue
			}
			taken = append(taken, span{a, b})
			if again > 0 && m[1] > len(text)-again {
				st.seen[at+int64(m[0])] = true
			}
			sum := sha256.Sum256(sec)
			st.hits = append(st.hits, Hit{Rule: r.Name, Family: r.Family, Offset: at + int64(a),
				Fingerprint: hex.EncodeToString(sum[:]), Redacted: Redact(string(sec))})
		}
	}
	slices.SortFunc(st.hits, func(x, y Hit) int { return cmp.Compare(x.Offset, y.Offset) })
	line, pos := st.line, 0
	for _, h := range st.hits {
		p := int(h.Offset - at)
		line += bytes.Count(text[pos:p], []byte("\n"))
		pos = p
		h.Line = line
		if err := st.fn(h); err != nil {
			return err
		}
	}
	return nil
}

func lowerInto(dst, src []byte) []byte {
	for _, c := range src {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst
}

// Redact keeps the first characters of a secret (at most 8, and at most a
// third of it) and marks the cut.
func Redact(s string) string {
	keep := min(8, utf8.RuneCountInString(s)/3)
	n := 0
	for i := range s {
		if n == keep {
			return s[:i] + "…"
		}
		n++
	}
	return s
}

// ScanBytes is Scan over an in-memory content, collecting the hits.
func (s *Scanner) ScanBytes(ctx context.Context, b []byte) ([]Hit, error) {
	var out []Hit
	err := s.Scan(ctx, bytes.NewReader(b), func(h Hit) error {
		out = append(out, h)
		return nil
	})
	return out, err
}
