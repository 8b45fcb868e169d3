package envelope

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// NewTaskID returns a UUIDv7 (RFC 9562) for a task: 48 bits of Unix
// milliseconds from now, then 74 random bits read from rnd, with the version
// and variant bits set. IDs made at increasing times sort in creation order as
// strings. Both inputs are injected so tests and simulations are
// reproducible; pass crypto/rand.Reader in production.
func NewTaskID(now time.Time, rnd io.Reader) (string, error) {
	ms := now.UnixMilli()
	if ms < 0 || ms >= 1<<48 {
		return "", fmt.Errorf("%w: time %v is outside the UUIDv7 range", ErrInvalid, now)
	}
	var u [16]byte
	if _, err := io.ReadFull(rnd, u[6:]); err != nil {
		return "", fmt.Errorf("envelope: reading randomness for a task id: %w", err)
	}
	for i := range 6 {
		u[i] = byte(ms >> (40 - 8*i))
	}
	u[6] = 0x70 | u[6]&0x0f // version 7
	u[8] = 0x80 | u[8]&0x3f // variant 10
	return formatUUID(u), nil
}

func formatUUID(u [16]byte) string {
	var b [36]byte
	hex.Encode(b[0:8], u[0:4])
	b[8] = '-'
	hex.Encode(b[9:13], u[4:6])
	b[13] = '-'
	hex.Encode(b[14:18], u[6:8])
	b[18] = '-'
	hex.Encode(b[19:23], u[8:10])
	b[23] = '-'
	hex.Encode(b[24:], u[10:])
	return string(b[:])
}

// ParseTaskID checks that s is a lower-case UUIDv7 in canonical form and
// returns the time its first 48 bits record.
func ParseTaskID(s string) (time.Time, error) {
	bad := fmt.Errorf("%w: task id %q is not a lower-case UUIDv7", ErrInvalid, s)
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return time.Time{}, bad
	}
	var u [16]byte
	j := 0
	for i := 0; i < 36; {
		if s[i] == '-' {
			i++
			continue
		}
		hi, ok1 := unhex(s[i])
		lo, ok2 := unhex(s[i+1])
		if !ok1 || !ok2 {
			return time.Time{}, bad
		}
		u[j] = hi<<4 | lo
		i, j = i+2, j+1
	}
	if u[6]>>4 != 7 || u[8]>>6 != 2 {
		return time.Time{}, bad
	}
	var ms int64
	for i := range 6 {
		ms = ms<<8 | int64(u[i])
	}
	return time.UnixMilli(ms), nil
}

func unhex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

// WithTaskID gives the envelope document b a fresh task id (NewTaskID) when
// it has none, or an empty or null one; an envelope with a task id is
// returned as it is, for its reader to judge. b must be a JSON object.
func WithTaskID(b []byte, now time.Time, rnd io.Reader) ([]byte, error) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("the envelope is not a JSON object: %w", err)
	}
	if id, ok := doc["task_id"]; ok && string(id) != `""` && string(id) != "null" {
		return b, nil
	}
	id, err := NewTaskID(now, rnd)
	if err != nil {
		return nil, err
	}
	doc["task_id"], _ = json.Marshal(id)
	return json.Marshal(doc)
}
