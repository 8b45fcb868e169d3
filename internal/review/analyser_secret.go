package review

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"unicode/utf8"
)

// SecretHit is one secret-like match a scanner found in a text.
type SecretHit struct {
	Family  string // api_key, github_pat, jwt, pem_block, aws_secret, pii, binary_hint, ...
	Pattern string // the detector's name
	Line    int    // 1-based line of the match's start
	Match   string // a short prefix of the match, never the whole secret
}

// SecretScanner finds secret-like content in a text. The durable server's
// risk score implements it (wired by cli), so the review and the agents'
// write surface share one set of detectors. Implementations must be safe
// for concurrent use.
type SecretScanner interface {
	ScanSecrets(ctx context.Context, content string) ([]SecretHit, error)
}

// DefaultSecretSeverity maps the scanner's families to severities; a family
// absent from the map (size rules, say) is not reported.
func DefaultSecretSeverity() map[string]Severity {
	return map[string]Severity{
		"api_key": SevCritical, "github_pat": SevCritical, "pem_block": SevCritical, "aws_secret": SevCritical,
		"jwt": SevHigh, "pii": SevMedium, "binary_hint": SevLow,
	}
}

// SecretScan reports secret-like content on the lines a change adds; a
// secret already in the base is not the change's doing and is not
// reported. Binary files and files over MaxFileBytes are skipped.
type SecretScan struct {
	Scanner SecretScanner
	// Severity maps families to severities; nil means
	// DefaultSecretSeverity.
	Severity map[string]Severity
	// MaxFileBytes bounds the files scanned; 0 means 1 MiB.
	MaxFileBytes int
}

// Analyse implements Analyser.
func (s SecretScan) Analyse(ctx context.Context, c *Change) ([]Finding, error) {
	if s.Scanner == nil {
		return nil, fmt.Errorf("%w: secret scan: no scanner configured", ErrAnalyser)
	}
	sev := s.Severity
	if sev == nil {
		sev = DefaultSecretSeverity()
	}
	limit := s.MaxFileBytes
	if limit <= 0 {
		limit = 1 << 20
	}
	added, err := addedLines(ctx, c)
	if err != nil {
		return nil, err
	}
	var paths []string
	for p, lines := range added {
		if len(lines) > 0 {
			paths = append(paths, p)
		}
	}
	sort.Strings(paths)
	if len(paths) == 0 {
		return nil, nil
	}
	blobs, err := c.Repo.ReadBlobs(ctx, c.Head, paths)
	if err != nil {
		return nil, err
	}
	var out []Finding
	for _, p := range paths {
		b, ok := blobs[p]
		if !ok || len(b) > limit || bytes.IndexByte(b, 0) >= 0 || !utf8.Valid(b) {
			continue
		}
		hits, err := s.Scanner.ScanSecrets(ctx, string(b))
		if err != nil {
			return nil, fmt.Errorf("%w: secret scan of %s: %v", ErrAnalyser, p, err)
		}
		for _, h := range hits {
			level, known := sev[h.Family]
			if !known || !added[p][h.Line] {
				continue
			}
			out = append(out, Finding{Kind: KindSecret, Severity: level, File: p, Line: h.Line,
				Evidence: fmt.Sprintf("%s (%s) added: %s", h.Family, h.Pattern, redact(h.Match))})
		}
	}
	return out, nil
}

// redact keeps the first few characters of a match: enough to find it,
// not enough to use it.
func redact(m string) string {
	n := 0
	for i := range m {
		if n == 8 {
			return m[:i] + "…"
		}
		n++
	}
	return m
}
