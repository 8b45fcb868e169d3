package durable_test

import (
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apiary-dev/apiary/internal/capability"
	"github.com/apiary-dev/apiary/internal/durable"
)

var capKey = []byte("0123456789abcdef0123456789abcdef")

func capToken(t testing.TB, caveats ...capability.Caveat) *capability.Token {
	t.Helper()
	tok, err := capability.Mint(capKey, capability.ID{Root: "run", Path: []string{"task"}}, caveats...)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestCapabilityAuthority: through a workspace, writes inside the token's
// path prefixes and with its tools succeed; a path outside, a tool outside,
// an expired, revoked or forged token are refused with typed envelopes
// and nothing is written; an escrowed tool waits for its approval.
func TestCapabilityAuthority(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	ep := capability.NewEpochs()
	good := capToken(t, capability.Tools("rw.safe_write", "rw.read", "rw.journal_tail"), capability.PathPrefixes("src"), capability.ExpiresAt(now.Add(time.Hour)))
	mk := func(tok *capability.Token, key []byte, at time.Time) *durable.Capability {
		c, err := durable.NewCapability(key, tok.String(), ep, func() time.Time { return at })
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	otherKey := []byte(strings.Repeat("k", 32))
	tests := []struct {
		name string
		auth *durable.Capability
		path string
		why  string // "" allowed
	}{
		{"allowed", mk(good, capKey, now), "src/a.go", ""},
		{"outside the prefixes", mk(good, capKey, now), "docs/a.md", "capability_denied"},
		{"sibling prefix", mk(good, capKey, now), "src2/a.go", "capability_denied"},
		{"expired", mk(good, capKey, now.Add(2*time.Hour)), "src/a.go", "capability_expired"},
		{"other key", mk(good, otherKey, now), "src/a.go", "capability_invalid"},
		{"tool not granted", mk(capToken(t, capability.Tools("rw.read")), capKey, now), "src/a.go", "capability_denied"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, durable.Config{Authority: tc.auth})
			_, err := f.w.SafeWrite(t.Context(), durable.SafeWriteParams{Path: tc.path, Content: "x"})
			if tc.why == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var e *durable.Error
			if !errors.As(err, &e) || e.Kind != durable.KindPolicyViolation || e.Reason != durable.ReasonPermission || e.Context["reason"] != tc.why {
				t.Fatalf("error %v (%+v), want %s", err, e, tc.why)
			}
			if _, err := os.Stat(filepath.Join(f.ws, tc.path)); err == nil {
				t.Error("the refused write happened")
			}
		})
	}
	// Revocation takes effect on the next call.
	rev := capability.NewEpochs()
	c, _ := durable.NewCapability(capKey, good.String(), rev, func() time.Time { return now })
	if err := c.Allow("rw.safe_write", "src/a.go"); err != nil {
		t.Fatal(err)
	}
	rev.Revoke("run", "task")
	var e *durable.Error
	if err := c.Allow("rw.safe_write", "src/a.go"); !errors.As(err, &e) || e.Context["reason"] != "capability_revoked" {
		t.Errorf("after revocation: %v", err)
	}
	// Escrow: refused until the callback allows.
	approved := false
	esc, _ := durable.NewCapability(capKey, good.String(), nil, func() time.Time { return now })
	esc.EscrowTools = []string{"rw.journal_tail"}
	esc.Escrow = func(tool string) error {
		if approved {
			return nil
		}
		return errors.New("pending request 1")
	}
	if err := esc.Allow("rw.journal_tail", ""); !errors.As(err, &e) || e.Context["reason"] != "escrow_elevation_required" {
		t.Errorf("escrowed tool: %v", err)
	}
	approved = true
	if err := esc.Allow("rw.journal_tail", ""); err != nil {
		t.Errorf("approved escrowed tool: %v", err)
	}
	if _, err := durable.NewCapability(capKey, "apcap.garbage", nil, nil); !errors.Is(err, capability.ErrMalformed) {
		t.Errorf("malformed token: %v", err)
	}
}

// FuzzCapabilityAuthority: a token whose text was mutated in any byte is
// either refused by NewCapability or refuses every call; it never allows
// one.
func FuzzCapabilityAuthority(f *testing.F) {
	good := capToken(f, capability.Tools("rw.safe_write"), capability.PathPrefixes("src"))
	f.Add(0, byte(1))
	f.Add(10, byte(0x80))
	f.Add(len(good.String())-1, byte(3))
	f.Fuzz(func(t *testing.T, pos int, flip byte) {
		text := []byte(good.String())
		if pos < 0 || flip == 0 {
			return
		}
		text[pos%len(text)] ^= flip
		c, err := durable.NewCapability(capKey, string(text), nil, nil)
		if err != nil {
			return
		}
		if err := c.Allow("rw.safe_write", "src/a.go"); err == nil {
			bin, _ := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(string(text), "apcap."))
			t.Fatalf("mutated token %q allowed a call (%x)", text, bin)
		}
	})
}
