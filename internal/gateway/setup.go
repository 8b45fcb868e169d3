package gateway

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/apiary-dev/apiary/internal/llmapi"
)

// ErrNoAPIKey is wrapped by *NoKeyError.
var ErrNoAPIKey = errors.New("gateway: no real API key")

// NoKeyError says an upstream that must substitute virtual keys has no real
// key, and which environment variable would give it one. New returns it
// when Config.RequireAPIKeys is set: without it every request with a virtual
// key would be answered 500, and clients such as Claude Code retry that for
// minutes.
type NoKeyError struct {
	Upstream string
	Env      string // the variable to set
}

func (e *NoKeyError) Error() string {
	return fmt.Sprintf("gateway: upstream %s has no real API key: set %s", e.Upstream, e.Env)
}

// Unwrap returns ErrNoAPIKey.
func (e *NoKeyError) Unwrap() error { return ErrNoAPIKey }

// DefaultKeyEnv is the conventional environment variable of a provider's
// real key: ANTHROPIC_API_KEY, OPENAI_API_KEY, AZURE_OPENAI_API_KEY or
// GEMINI_API_KEY ("" for providers without keys, such as Ollama).
func DefaultKeyEnv(p llmapi.Provider) string {
	switch p {
	case llmapi.Anthropic:
		return "ANTHROPIC_API_KEY"
	case llmapi.OpenAI, llmapi.OpenAICompatible:
		return "OPENAI_API_KEY"
	case llmapi.Azure:
		return "AZURE_OPENAI_API_KEY"
	case llmapi.Gemini:
		return "GEMINI_API_KEY"
	}
	return ""
}

// CheckAPIKeys returns a *NoKeyError for the first upstream in ups that has
// no real key but needs one (every provider but Ollama), naming its
// APIKeyEnv or its provider's DefaultKeyEnv. Callers that mint virtual keys
// (apiary run --model-url, a gateway whose ledger holds keys) check before
// they start.
func CheckAPIKeys(ups []Upstream) error {
	for _, u := range ups {
		if u.APIKey != "" {
			continue
		}
		p := u.Provider
		if p == 0 {
			if pu, err := url.Parse(u.URL); err == nil {
				p = guessProvider(pu)
			}
		}
		if p == llmapi.Ollama {
			continue
		}
		env := u.APIKeyEnv
		if env == "" {
			env = DefaultKeyEnv(p)
		}
		if env == "" {
			env = "a key with --upstream-key-env " + u.Name + "=VAR"
		}
		return &NoKeyError{Upstream: u.Name, Env: env}
	}
	return nil
}

// HasActiveKeys reports whether db holds a virtual key that is not revoked.
func HasActiveKeys(ctx context.Context, db *sql.DB) (bool, error) {
	var n int
	err := db.QueryRowContext(ctx, `SELECT count(*) FROM gateway_keys WHERE revoked = 0`).Scan(&n)
	if err != nil && strings.Contains(err.Error(), "no such table") {
		return false, nil
	}
	return n > 0, err
}

// DefaultLedgerPath is the ledger's per-user location:
// $XDG_STATE_HOME/apiary/state.db, else ~/.local/state/apiary/state.db — not
// a file in whatever directory the gateway was started from.
func DefaultLedgerPath() (string, error) {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "apiary", "state.db"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("gateway: no per-user state directory (set XDG_STATE_HOME or --ledger): %w", err)
	}
	return filepath.Join(home, ".local", "state", "apiary", "state.db"), nil
}

// publicCause describes a transport failure to a client without what only
// the operator should see (internal addresses, ports, host names).
func publicCause(err error) string {
	var dnsErr *net.DNSError
	var opErr *net.OpError
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return "connection reset"
	case errors.As(err, &dnsErr):
		return "name resolution failed"
	case isTimeout(err):
		return "timeout"
	case strings.Contains(err.Error(), "tls:") || strings.Contains(err.Error(), "x509:"):
		return "TLS handshake failed"
	case errors.As(err, &opErr):
		return "network error"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), strings.HasSuffix(err.Error(), "EOF"):
		return "connection closed"
	}
	return "transport error"
}
