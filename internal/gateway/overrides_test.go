package gateway

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apiary-dev/apiary/internal/config"
	"github.com/apiary-dev/apiary/internal/llmapi"
)

// TestSettings: a value given explicitly wins over apiary.yaml's, the
// file's wins over a default, and each upstream's key is read from the
// variable the file (over --upstream-key-env) or its provider names.
func TestSettings(t *testing.T) {
	t.Parallel()
	doc := `
gateway:
  retry: {max_attempts: 7, max_wait: 9s}
  upstreams:
    - {name: main, url: "http://127.0.0.1:1", provider: openai, api_key_env: MY_KEY, max_concurrency: 3, limits: {rpm: 60}}
`
	file, err := config.Parse("apiary.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"MY_KEY": "real", "OTHER": "other", "ANTHROPIC_API_KEY": "ant"}
	getenv := func(k string) string { return env[k] }
	defaults := Overrides{MaxConcurrency: 16, MaxAttempts: 10, MaxRetryWait: 2 * time.Minute}

	cfg, err := Settings(file, defaults, getenv)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.MaxAttempts != 7 || cfg.MaxRetryWait != 9*time.Second || cfg.TTFBTarget != 0 {
		t.Errorf("the file's retries: %+v", cfg)
	}
	if u := cfg.Upstreams[0]; u.MaxConcurrency != 3 || u.RPM != 60 || u.APIKey != "real" || u.APIKeyEnv != "MY_KEY" {
		t.Errorf("the file's upstream: %+v", u)
	}

	o := defaults
	o.MaxAttempts, o.MaxConcurrency, o.RPM, o.TTFBTarget = 2, 5, 30, time.Second
	o.Set = OverridesSet{MaxAttempts: true, MaxConcurrency: true, RPM: true, TTFBTarget: true}
	o.Upstreams = []string{"anthropic=http://127.0.0.1:2"}
	o.UpstreamKeyEnv = []string{"main=OTHER"}
	o.NoRetry, o.NoResume = true, true
	cfg, err = Settings(file, o, getenv)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.MaxAttempts != 2 || cfg.MaxRetryWait != 9*time.Second || cfg.TTFBTarget != time.Second || !cfg.NoRetry || !cfg.NoResume {
		t.Errorf("given values: %+v", cfg)
	}
	if len(cfg.Upstreams) != 2 {
		t.Fatalf("upstreams %+v", cfg.Upstreams)
	}
	if u := cfg.Upstreams[0]; u.MaxConcurrency != 5 || u.RPM != 30 || u.APIKeyEnv != "MY_KEY" {
		t.Errorf("the file's upstream under flags (the file names its key): %+v", u)
	}
	if u := cfg.Upstreams[1]; u.Provider != llmapi.Anthropic || u.URL != "http://127.0.0.1:2" || u.APIKey != "ant" || u.MaxConcurrency != 5 {
		t.Errorf("the flag's upstream: %+v", u)
	}
}

// TestSettingsErrors: malformed overrides and a missing upstream are
// OverrideErrors naming the flag; an empty key variable is not.
func TestSettingsErrors(t *testing.T) {
	t.Parallel()
	empty, err := config.Parse("", nil)
	if err != nil {
		t.Fatal(err)
	}
	getenv := func(string) string { return "" }
	for _, tt := range []struct {
		name     string
		o        Overrides
		want     string
		override bool
	}{
		{"no upstreams", Overrides{}, "no upstreams", true},
		{"bad upstream", Overrides{Upstreams: []string{"anthropic"}}, `--upstream "anthropic": want NAME=URL`, true},
		{"bad key env", Overrides{UpstreamKeyEnv: []string{"x="}}, `--upstream-key-env "x=": want NAME=VAR`, true},
		{"empty key", Overrides{Upstreams: []string{"x=http://127.0.0.1:1"}, UpstreamKeyEnv: []string{"x=NOPE"}}, "environment variable NOPE is empty", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Settings(empty, tt.o, getenv)
			var oe *OverrideError
			if err == nil || !strings.Contains(err.Error(), tt.want) || errors.As(err, &oe) != tt.override {
				t.Errorf("got %v (an OverrideError: %v), want %q (%v)", err, errors.As(err, &oe), tt.want, tt.override)
			}
		})
	}
}

// TestOpenExistingDB: a ledger that does not exist is not created.
func TestOpenExistingDB(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "state.db")
	if _, err := OpenExistingDB(path); err == nil || !strings.Contains(err.Error(), "run the gateway first") {
		t.Errorf("a missing ledger: %v", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the ledger was created: %v", err)
	}
	db, err := OpenDB(path)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	db, err = OpenExistingDB(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var buf bytes.Buffer
	if err := WriteKeys(&buf, nil); err != nil || !strings.HasPrefix(buf.String(), "ID ") {
		t.Errorf("an empty key table: %q %v", buf.String(), err)
	}
}
