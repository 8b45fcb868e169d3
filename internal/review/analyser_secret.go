package review

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/apiary-dev/apiary/internal/secret"
)

// SecretHit is one secret-like match a scanner found in a text.
type SecretHit struct {
	Family  string // api_key, github_pat, jwt, pem_block, aws_secret, pii, binary_hint, ...
	Pattern string // the detector's name
	Line    int    // 1-based line of the match's start
	Match   string // a short prefix of the match, never the whole secret
}

// SecretScanner finds secret-like content in a text: an extra set of
// detectors beside the built-in ones (package secret). The durable
// server's risk score implements it (DurableScanner), so the review also
// reports what the agents' write surface would have flagged (personal
// data, say). Implementations must be safe for concurrent use.
type SecretScanner interface {
	ScanSecrets(ctx context.Context, content string) ([]SecretHit, error)
}

// DefaultSecretSeverity maps detector families to severities; a family
// absent from the map (size rules, say) is not reported. Credentials are
// critical, tokens that expire (JWTs) high.
func DefaultSecretSeverity() map[string]Severity {
	return map[string]Severity{
		secret.FamilyGitHub: SevCritical, secret.FamilyGitLab: SevCritical, secret.FamilySlack: SevCritical,
		secret.FamilyAWSKey: SevCritical, secret.FamilyAWSTempKey: SevCritical, secret.FamilyAWSSecret: SevCritical,
		secret.FamilyGCP: SevCritical, secret.FamilyGCPKey: SevCritical, secret.FamilyStripe: SevCritical,
		secret.FamilyPrivateKey: SevCritical, secret.FamilyModelKey: SevCritical, secret.FamilyNPM: SevCritical,
		secret.FamilyJWT: SevHigh,
		// The durable server's families (its jwt is secret.FamilyJWT).
		"api_key": SevCritical, "github_pat": SevCritical, "pem_block": SevCritical, "aws_secret": SevCritical,
		"pii": SevMedium, "binary_hint": SevLow,
	}
}

// SecretScan reports credentials the change adds. Every file the change
// adds or modifies is streamed whole through the built-in detectors
// (package secret), whatever its size or content — text, minified,
// generated or binary; a secret the base version of the same file already
// holds is not the change's doing and is not reported. A file that cannot be read is an unscanned finding (high):
// never silence. The extra Scanner, if set, also reads the added lines of
// text files up to MaxFileBytes.
type SecretScan struct {
	// Scanner is an extra set of detectors; nil: the built-in ones only.
	Scanner SecretScanner
	// Severity maps families to severities; nil means
	// DefaultSecretSeverity.
	Severity map[string]Severity
	// MaxFileBytes bounds the files given to the extra Scanner (which
	// takes whole texts); 0 means 1 MiB. The built-in detectors read
	// every file.
	MaxFileBytes int
}

// NeedsBase implements NeedsBase: the base's secrets are not the change's.
func (SecretScan) NeedsBase() bool { return true }

// Analyse implements Analyser.
func (s SecretScan) Analyse(ctx context.Context, c *Change) ([]Finding, error) {
	sev := s.Severity
	if sev == nil {
		sev = DefaultSecretSeverity()
	}
	var sc secret.Scanner
	// What the base version of each changed file already holds: editing
	// a file that has a secret does not add it (copying it to another
	// file does).
	known := map[string]bool{} // path + fingerprint
	var paths []string
	for _, ch := range c.Changes {
		if ch.Status != 'A' && c.BaseDir != "" {
			_ = scanFile(ctx, &sc, c.BaseDir, ch.Path, func(h secret.Hit) error {
				known[ch.Path+"\x00"+h.Fingerprint] = true
				return nil
			})
		}
		if ch.Status != 'D' {
			paths = append(paths, ch.Path)
		}
	}
	sort.Strings(paths)
	var out []Finding
	flagged := map[string]bool{} // file:line with a built-in finding
	for _, p := range paths {
		err := scanFile(ctx, &sc, c.HeadDir, p, func(h secret.Hit) error {
			level, ok := sev[h.Family]
			if !ok || known[p+"\x00"+h.Fingerprint] {
				return nil
			}
			flagged[fmt.Sprintf("%s:%d", p, h.Line)] = true
			out = append(out, Finding{Kind: KindSecret, Severity: level, File: p, Line: h.Line,
				Evidence: fmt.Sprintf("%s (%s) added: %s", h.Family, describeRule(h.Rule), h.Redacted)})
			return nil
		})
		var skip *unscannedError
		switch {
		case errors.As(err, &skip):
			out = append(out, Finding{Kind: KindUnscanned, Severity: skip.sev, File: p,
				Evidence: fmt.Sprintf("%s was not scanned for secrets: %s", p, skip.why)})
		case err != nil:
			return nil, fmt.Errorf("%w: secret scan of %s: %w", ErrAnalyser, p, err)
		}
	}
	if s.Scanner != nil {
		extra, err := s.extra(ctx, c, sev, flagged)
		if err != nil {
			return nil, err
		}
		out = append(out, extra...)
	}
	return out, nil
}

// unscannedError is a changed file the scan could not read, and how much
// that matters.
type unscannedError struct {
	why string
	sev Severity
}

func (e *unscannedError) Error() string { return e.why }

// scanFile streams the file at root/p through the detectors. A symbolic
// link is scanned as its target's name (that is its content in git); a
// submodule is another repository's content (low); anything else that is
// not a readable regular file is unscanned (high).
func scanFile(ctx context.Context, sc *secret.Scanner, root, p string, fn func(secret.Hit) error) error {
	full := filepath.Join(root, filepath.FromSlash(p))
	fi, err := os.Lstat(full)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return &unscannedError{why: "it is missing from the checkout of the change", sev: SevHigh}
	case err != nil:
		return &unscannedError{why: err.Error(), sev: SevHigh}
	case fi.Mode()&os.ModeSymlink != 0:
		target, err := os.Readlink(full)
		if err != nil {
			return &unscannedError{why: err.Error(), sev: SevHigh}
		}
		return sc.Scan(ctx, strings.NewReader(target), fn)
	case fi.IsDir():
		return &unscannedError{why: "it is a submodule: its content is another repository's, scan that one", sev: SevLow}
	case !fi.Mode().IsRegular():
		return &unscannedError{why: "it is not a regular file (" + fi.Mode().Type().String() + ")", sev: SevHigh}
	}
	f, err := os.Open(full)
	if err != nil {
		return &unscannedError{why: err.Error(), sev: SevHigh}
	}
	defer f.Close()
	if err := sc.Scan(ctx, f, fn); err != nil {
		if ctx.Err() != nil {
			return err
		}
		return &unscannedError{why: "reading it failed: " + err.Error(), sev: SevHigh}
	}
	return nil
}

func describeRule(name string) string {
	for _, r := range secret.Rules() {
		if r.Name == name {
			return r.Description
		}
	}
	return name
}

// extra runs the extra scanner on the added lines of the changed text
// files it can take, skipping lines the built-in detectors flagged.
func (s SecretScan) extra(ctx context.Context, c *Change, sev map[string]Severity, flagged map[string]bool) ([]Finding, error) {
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
	var out []Finding
	for _, p := range paths {
		b, err := readSmall(c.HeadDir, p, limit)
		if err != nil || b == nil || !utf8.Valid(b) {
			continue // too large, binary or not a file: the built-in scan had it
		}
		hits, err := s.Scanner.ScanSecrets(ctx, string(b))
		if err != nil {
			return nil, fmt.Errorf("%w: secret scan of %s: %v", ErrAnalyser, p, err)
		}
		for _, h := range hits {
			level, known := sev[h.Family]
			if !known || !added[p][h.Line] || flagged[fmt.Sprintf("%s:%d", p, h.Line)] {
				continue
			}
			out = append(out, Finding{Kind: KindSecret, Severity: level, File: p, Line: h.Line,
				Evidence: fmt.Sprintf("%s (%s) added: %s", h.Family, h.Pattern, redact(h.Match))})
		}
	}
	return out, nil
}

// readSmall reads a regular file of at most limit bytes; nil if it is
// larger or not a regular file.
func readSmall(root, p string, limit int) ([]byte, error) {
	full := filepath.Join(root, filepath.FromSlash(p))
	fi, err := os.Lstat(full)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > int64(limit) {
		return nil, err
	}
	return os.ReadFile(full)
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
