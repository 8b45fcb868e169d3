package rundir

import (
	"encoding/hex"
	"fmt"
	"io"
	"regexp"
	"time"
)

// NewID returns a run id that sorts by creation time:
// YYYYMMDD-HHMMSS-xxxxxx (UTC, six random hex digits).
func NewID(now time.Time, rnd io.Reader) (string, error) {
	var b [3]byte
	if _, err := io.ReadFull(rnd, b[:]); err != nil {
		return "", fmt.Errorf("run id: %w", err)
	}
	return now.UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:]), nil
}

// idPattern is the envelope schema's run_id; it also keeps run ids safe
// as path and ref components.
var idPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$`)

// ValidID reports whether id can name a run.
func ValidID(id string) bool { return idPattern.MatchString(id) }

// RandomHex returns n random bytes from rnd in hex.
func RandomHex(rnd io.Reader, n int) (string, error) {
	b := make([]byte, n)
	if _, err := io.ReadFull(rnd, b); err != nil {
		return "", fmt.Errorf("randomness: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// Traceparent makes a W3C traceparent in trace traceID with a new span.
func Traceparent(traceID string, rnd io.Reader) (string, error) {
	span, err := RandomHex(rnd, 8)
	if err != nil {
		return "", err
	}
	return "00-" + traceID + "-" + span + "-01", nil
}
