package review

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/apiary-dev/apiary/internal/atomicfile"
	"github.com/apiary-dev/apiary/internal/rundir"
)

// ErrForged: a report's MAC does not verify, or its rules do not follow
// from its findings: it was edited or made by someone without the review
// key. Resolve refuses it.
var ErrForged = fmt.Errorf("%w: the report is not authentic", ErrFailed)

// keyBytes is the size of a review key.
const keyBytes = 32

// macDomain separates report MACs from any other use of the key.
const macDomain = "apiary review report v1\n"

// keyPath is where the review key of the repository at root lives: the
// operator's Options.KeyFile, else .apiary/review.key (outside every
// checkout the review makes, never committed).
func keyPath(opt Options, root string) string {
	if opt.KeyFile != "" {
		return opt.KeyFile
	}
	return rundir.State(root, "review.key")
}

// loadKey reads the review key at path. With create, a missing key is
// made: keyBytes from rnd, hex-encoded, mode 0600, written to a temporary
// file and linked into place, so that of two reviews creating it at once
// one links and both read the same, whole key.
func loadKey(path string, rnd io.Reader, create bool) ([]byte, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) && create {
		if err := makeKey(path, rnd); err != nil {
			return nil, err
		}
		b, err = os.ReadFile(path)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: no review key at %s: the report cannot be verified", ErrForged, path)
	}
	if err != nil {
		return nil, fmt.Errorf("review: reading the review key: %w", err)
	}
	key, err := hex.DecodeString(string(trimNL(b)))
	if err != nil || len(key) < keyBytes {
		return nil, fmt.Errorf("review: the review key %s is malformed (want %d hex-encoded bytes)", path, keyBytes)
	}
	return key, nil
}

// makeKey creates the key file unless it exists.
func makeKey(path string, rnd io.Reader) error {
	key := make([]byte, keyBytes)
	if _, err := io.ReadFull(rnd, key); err != nil {
		return fmt.Errorf("review: making the review key: %w", err)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	// Created whole or not at all; a key another process made first wins.
	if err := atomicfile.Create(path, []byte(hex.EncodeToString(key)+"\n"), 0o600); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("review: writing the review key: %w", err)
	}
	return nil
}

func trimNL(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}

// Seal sets the report's MAC: an HMAC-SHA256 with key over its JSON
// encoding without the MAC.
func (r *Report) Seal(key []byte) error {
	m, err := r.computeMAC(key)
	if err != nil {
		return err
	}
	r.MAC = m
	return nil
}

// Verify checks the report's MAC (ErrForged if it is absent or wrong).
func (r *Report) Verify(key []byte) error {
	if r.MAC == "" {
		return fmt.Errorf("%w: review %s: the report carries no MAC", ErrForged, r.ReviewID)
	}
	want, err := r.computeMAC(key)
	if err != nil {
		return err
	}
	if !hmac.Equal([]byte(want), []byte(r.MAC)) {
		return fmt.Errorf("%w: review %s: its MAC does not match the review key: it was edited or forged", ErrForged, r.ReviewID)
	}
	return nil
}

// computeMAC is the MAC of the report's canonical form: its JSON without
// the MAC, decoded and encoded once more, so that what encoding changes
// (invalid UTF-8 becomes U+FFFD) reads back the same.
func (r *Report) computeMAC(key []byte) (string, error) {
	c := *r
	c.MAC = ""
	b, err := json.Marshal(&c)
	if err != nil {
		return "", err
	}
	var canon Report
	if err := json.Unmarshal(b, &canon); err != nil {
		return "", err
	}
	if b, err = json.Marshal(&canon); err != nil {
		return "", err
	}
	h := hmac.New(sha256.New, key)
	h.Write([]byte(macDomain))
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil)), nil
}

// rederive checks that the rules a report records follow from its findings
// and thresholds, as EvaluateRules decides them: a second line behind the
// MAC, so that a report whose rules were edited is refused even by someone
// who holds the key by mistake.
func (r *Report) rederive() error {
	if r.Thresholds == nil {
		return fmt.Errorf("%w: review %s: the report records no decision rules", ErrForged, r.ReviewID)
	}
	_, rules := EvaluateRules(*r.Thresholds, r.Findings)
	for _, want := range rules {
		got := r.Rule(want.Rule)
		if got == nil || got.Passed != want.Passed {
			return fmt.Errorf("%w: review %s: its %s rule does not follow from its findings", ErrForged, r.ReviewID, want.Rule)
		}
	}
	want, rr := rulesRule(r.Findings), r.Rule(RuleRules)
	if rr == nil || want.Passed != rr.Passed && (want.Passed || rr.By == "") {
		return fmt.Errorf("%w: review %s: its rules rule does not follow from its findings", ErrForged, r.ReviewID)
	}
	if decide(r.Rules) != r.Decision {
		return fmt.Errorf("%w: review %s: its decision %s does not follow from its rules", ErrForged, r.ReviewID, r.Decision)
	}
	return nil
}
