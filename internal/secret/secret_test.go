package secret

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// The credentials of these tests are assembled at run time from a seeded
// generator, so that no file of the repository holds one.

const (
	alnum  = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	upper  = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	b64    = alnum + "/+"
	hexLow = "0123456789abcdef"
	urlB64 = alnum + "-_"
)

// gen returns n characters of alphabet, deterministic per seed.
func gen(seed uint64, n int, alphabet string) string {
	r := rand.New(rand.NewPCG(seed, 7))
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[r.IntN(len(alphabet))]
	}
	return string(b)
}

// Samples of every format, each in the kind of context it is found in.
func samples() []struct{ rule, text string } {
	jwt := "eyJ" + gen(11, 30, urlB64) + ".eyJ" + gen(12, 60, urlB64) + "." + gen(13, 43, urlB64)
	return []struct{ rule, text string }{
		{"github-pat", `token = "ghp_` + gen(1, 36, alnum) + `"`},
		{"github-pat", "GITHUB_TOKEN=gho_" + gen(2, 36, alnum)},
		{"github-fine-grained-pat", "export GH_TOKEN=github_pat_" + gen(3, 22, alnum) + "_" + gen(4, 59, alnum)},
		{"gitlab-token", `private_token: glpat-` + gen(5, 20, urlB64)},
		{"slack-token", "SLACK_BOT_TOKEN=xoxb-" + gen(6, 12, "0123456789") + "-" + gen(7, 13, "0123456789") + "-" + gen(8, 24, alnum)},
		{"slack-webhook", `url: "https://hooks.slack.com/services/T` + gen(9, 10, upper) + "/B" + gen(10, 10, upper) + "/" + gen(14, 24, alnum) + `"`},
		{"aws-access-key-id", "aws_access_key_id = AKIA" + gen(15, 16, upper)},
		{"aws-temporary-access-key-id", `"AccessKeyId": "ASIA` + gen(16, 16, upper) + `",`},
		{"aws-secret-access-key", `aws_secret_access_key = ` + gen(17, 40, b64)},
		{"aws-secret-access-key", `AWS_SECRET_ACCESS_KEY: "` + gen(18, 40, b64) + `"`},
		{"aws-session-token", `aws_session_token = ` + gen(19, 300, b64)},
		{"gcp-service-account-key", `  "private_key_id": "` + gen(20, 40, hexLow) + `",`},
		{"gcp-api-key", `const mapsKey = "AIza` + gen(21, 35, urlB64) + `"`},
		{"stripe-secret-key", `stripe.Key = "sk_live_` + gen(22, 24, alnum) + `"`},
		{"stripe-secret-key", `STRIPE_KEY=rk_test_` + gen(23, 32, alnum)},
		{"private-key", "-----BEGIN RSA PRIVATE KEY-----"},
		{"private-key", "-----BEGIN OPENSSH PRIVATE KEY-----"},
		{"private-key", `  "private_key": "-----BEGIN PRIVATE KEY-----\nMIIE` + gen(24, 40, b64) + `\n",`},
		{"private-key", "-----BEGIN PGP PRIVATE KEY BLOCK-----"},
		{"jwt", "Authorization: Bearer " + jwt},
		{"anthropic-key", "ANTHROPIC_API_KEY=sk-ant-api03-" + gen(25, 90, urlB64)},
		{"openai-key", `OPENAI_API_KEY="sk-proj-` + gen(26, 48, urlB64) + `"`},
		{"npm-token", "//registry.npmjs.org/:_authToken=npm_" + gen(27, 36, alnum)},
	}
}

func TestRules(t *testing.T) {
	t.Parallel()
	var s Scanner
	for _, tt := range samples() {
		t.Run(tt.rule, func(t *testing.T) {
			t.Parallel()
			src := "line one\n\n" + tt.text + "\nlast line\n"
			hits, err := s.ScanBytes(t.Context(), []byte(src))
			if err != nil {
				t.Fatal(err)
			}
			if len(hits) != 1 || hits[0].Rule != tt.rule || hits[0].Line != 3 {
				t.Fatalf("hits %+v, want one %s on line 3 in %q", hits, tt.rule, tt.text)
			}
			h := hits[0]
			if h.Offset < int64(len("line one\n\n")) || !strings.HasSuffix(h.Redacted, "…") || len(h.Fingerprint) != 64 {
				t.Errorf("hit %+v", h)
			}
			if n := len([]rune(h.Redacted)); n > 9 {
				t.Errorf("the redaction keeps too much: %q", h.Redacted)
			}
		})
	}
	// Every rule has a sample.
	var names []string
	for _, tt := range samples() {
		names = append(names, tt.rule)
	}
	for _, r := range Rules() {
		if !slices.Contains(names, r.Name) {
			t.Errorf("rule %s has no sample", r.Name)
		}
	}
}

// TestNotSecrets: what looks like a credential but is not one is not
// reported — placeholders, documentation examples, publishable keys,
// hashes, and formats cut short.
func TestNotSecrets(t *testing.T) {
	t.Parallel()
	var s Scanner
	for _, text := range []string{
		"token: ghp_" + strings.Repeat("x", 36),
		"GH_TOKEN=github_pat_" + strings.Repeat("X", 22) + "_" + strings.Repeat("X", 59),
		"github_pat_" + gen(30, 22, alnum) + "_" + gen(31, 20, alnum), // too short
		"aws_access_key_id = AKIAIOSFODNN7EXAMPLE",
		"aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
		"AKIA" + strings.Repeat("0", 16),
		"stripe.PublishableKey = pk_live_" + gen(32, 24, alnum),
		"h1:" + gen(33, 43, b64) + "=", // a go.sum hash
		"sha256:" + gen(34, 64, hexLow),
		`"private_key_id": "` + strings.Repeat("0", 40) + `"`,
		"-----BEGIN PUBLIC KEY-----",
		"-----BEGIN CERTIFICATE-----",
		"xoxb-not-a-token",
		"sk-short",
		"eyJhbGciOiJIUzI1NiJ9",
		"see https://github.com/settings/tokens for ghp_ tokens",
	} {
		hits, err := s.ScanBytes(t.Context(), []byte(text+"\n"))
		if err != nil || len(hits) != 0 {
			t.Errorf("%q: hits %+v (%v)", text, hits, err)
		}
	}
}

// TestLongLines: a secret in a line far longer than the window, and one
// across the edge of two windows, are found once, at the right offset.
func TestLongLines(t *testing.T) {
	t.Parallel()
	key := "AKIA" + gen(40, 16, upper)
	s := Scanner{Window: 1 << 10, Overlap: 64}
	for _, at := range []int{0, 1000, 1020, 1023, 1024, 5000, 2<<20 - 22} {
		line := []byte(strings.Repeat("a", 2<<20))
		copy(line[at:], " "+key+" ")
		src := append([]byte("first\n"), line...)
		src = append(src, "\n"+key+"\n"...)
		hits, err := s.ScanBytes(t.Context(), src)
		if err != nil {
			t.Fatal(err)
		}
		if len(hits) != 2 || hits[0].Line != 2 || hits[0].Offset != int64(len("first\n")+at+1) || hits[1].Line != 3 || hits[0].Fingerprint != hits[1].Fingerprint {
			t.Errorf("key at %d: hits %+v", at, hits)
		}
	}
}

// TestLargeFile: a key in the middle of a 6 MB file of short lines.
func TestLargeFile(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	for i := 1; b.Len() < 6<<20; i++ {
		if i == 50000 {
			b.WriteString(`  "token": "ghp_` + gen(41, 36, alnum) + "\",\n")
			continue
		}
		fmt.Fprintf(&b, "  \"row-%07d\": \"%x\",\n", i, i*7919)
	}
	var s Scanner
	hits, err := s.ScanBytes(t.Context(), b.Bytes())
	if err != nil || len(hits) != 1 || hits[0].Line != 50000 || hits[0].Rule != "github-pat" {
		t.Fatalf("hits %+v (%v)", hits, err)
	}
}

// TestScanErrors: the reader's error, a callback's, and ErrStop.
func TestScanErrors(t *testing.T) {
	t.Parallel()
	var s Scanner
	boom := errors.New("boom")
	src := "AKIA" + gen(42, 16, upper) + "\nASIA" + gen(43, 16, upper) + "\n"
	if err := s.Scan(t.Context(), io.MultiReader(strings.NewReader("x\n"), errReader{boom}), func(Hit) error { return nil }); !errors.Is(err, boom) {
		t.Errorf("reader error: %v", err)
	}
	n := 0
	if err := s.Scan(t.Context(), strings.NewReader(src), func(Hit) error { n++; return ErrStop }); err != nil || n != 1 {
		t.Errorf("ErrStop: %v after %d hits", err, n)
	}
	if err := s.Scan(t.Context(), strings.NewReader(src), func(Hit) error { return boom }); !errors.Is(err, boom) {
		t.Errorf("callback error: %v", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := s.Scan(ctx, strings.NewReader(src), func(Hit) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// FuzzScan: streaming in small windows finds what one pass over the whole
// content finds, for secrets shorter than the overlap; nothing panics.
func FuzzScan(f *testing.F) {
	for _, s := range samples() {
		f.Add(s.text+"\n"+s.text, 17)
	}
	f.Add(strings.Repeat("ab", 300)+"AKIA"+gen(44, 16, upper), 3)
	f.Fuzz(func(t *testing.T, src string, cut int) {
		small := Scanner{Window: 256 + (cut&255)*4, Overlap: 200}
		whole := Scanner{Window: len(src) + 16}
		a, err1 := small.ScanBytes(context.Background(), []byte(src))
		b, err2 := whole.ScanBytes(context.Background(), []byte(src))
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		key := func(h Hit) string { return fmt.Sprintf("%d:%d:%s", h.Offset, h.Line, h.Rule) }
		var ka, kb []string
		for _, h := range a {
			if h.Offset < 0 || h.Offset >= int64(len(src)) {
				t.Fatalf("hit outside the input: %+v", h)
			}
			ka = append(ka, key(h))
		}
		for _, h := range b {
			kb = append(kb, key(h))
		}
		slices.Sort(ka)
		slices.Sort(kb)
		for _, k := range kb {
			if !slices.Contains(ka, k) {
				t.Fatalf("streaming missed %s: %v vs %v", k, ka, kb)
			}
		}
	})
}

// BenchmarkScan: a 6 MB file of JSON-like lines with no secret, the
// common case of a large generated file.
func BenchmarkScan(b *testing.B) {
	var buf bytes.Buffer
	for i := 0; buf.Len() < 6<<20; i++ {
		fmt.Fprintf(&buf, "  {\"id\": %d, \"name\": \"item-%d\", \"hash\": \"%x\"},\n", i, i, i*2654435761)
	}
	src := buf.Bytes()
	var s Scanner
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.ScanBytes(context.Background(), src); err != nil {
			b.Fatal(err)
		}
	}
}
