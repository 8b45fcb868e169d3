package gateway

import (
	"database/sql"
	"fmt"
	"io"
	"maps"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/apiary-dev/apiary/internal/config"
	"github.com/apiary-dev/apiary/internal/llmapi"
)

// Overrides are the gateway's settings as `apiary gateway` takes them on its
// command line, laid over apiary.yaml by Settings. A value whose Set bit is
// false was not given: the file's value wins over it, and it is the default
// when the file has none.
type Overrides struct {
	// Upstreams are NAME=URL pairs, added after the file's upstreams; a
	// NAME that is a provider also fixes the wire format.
	Upstreams []string
	// UpstreamKeyEnv are NAME=VAR pairs: the environment variable holding
	// upstream NAME's real key. The file's choice for a name wins.
	UpstreamKeyEnv []string

	MaxConcurrency, AgentMaxConcurrency int
	RPM, TPM, ITPM, OTPM                int64
	MaxAttempts                         int
	MaxRetryWait, TTFBTarget            time.Duration

	// The ablations and switches: each is on when the flag or the file
	// says so (NoResume, NoRateLimit and NoAdmission only by flag).
	NoRetry, NoAIMD, NoResume, NoBreaker bool
	NoRateLimit, NoAdmission, FailFast   bool
	NoIncludeUsage                       bool
	Set                                  OverridesSet
}

// OverridesSet says which values of Overrides were given explicitly.
type OverridesSet struct {
	MaxConcurrency, AgentMaxConcurrency bool
	RPM, TPM, ITPM, OTPM                bool
	MaxAttempts, MaxRetryWait           bool
	TTFBTarget                          bool
}

// OverrideError is a malformed override or a configuration with no
// upstream; its message names the flag to fix.
type OverrideError struct{ Msg string }

func (e *OverrideError) Error() string { return e.Msg }

// Settings merges apiary.yaml's gateway section (file), the overrides and
// the defaults into a Config, and reads each upstream's real key from the
// environment through getenv: the variable the file or UpstreamKeyEnv
// names (which must not be empty), else the provider's conventional one
// (see DefaultKeyEnv), used only to stand in for virtual keys. Logger, DB
// and Ledger are left for the caller.
func Settings(file *config.Config, o Overrides, getenv func(string) string) (Config, error) {
	keyEnv := map[string]string{}
	for _, kv := range o.UpstreamKeyEnv {
		name, v, ok := strings.Cut(kv, "=")
		if !ok || name == "" || v == "" {
			return Config{}, &OverrideError{fmt.Sprintf("--upstream-key-env %q: want NAME=VAR", kv)}
		}
		keyEnv[name] = v
	}
	cfg, fileKeyEnv, err := FromFile(file)
	if err != nil {
		return cfg, err
	}
	maps.Copy(keyEnv, fileKeyEnv)
	cfg.NoRetry = o.NoRetry || cfg.NoRetry
	cfg.MaxAttempts = pick(o.Set.MaxAttempts, o.MaxAttempts, cfg.MaxAttempts, o.MaxAttempts)
	cfg.MaxRetryWait = pick(o.Set.MaxRetryWait, o.MaxRetryWait, cfg.MaxRetryWait, o.MaxRetryWait)
	cfg.NoAIMD = o.NoAIMD || cfg.NoAIMD
	cfg.NoResume = o.NoResume
	cfg.TTFBTarget = pick(o.Set.TTFBTarget, o.TTFBTarget, cfg.TTFBTarget, 0)
	cfg.NoBreaker = o.NoBreaker || cfg.NoBreaker
	cfg.BreakerFailFast = o.FailFast || cfg.BreakerFailFast
	cfg.NoRateLimit, cfg.NoAdmission = o.NoRateLimit, o.NoAdmission
	cfg.NoIncludeUsage = o.NoIncludeUsage || cfg.NoIncludeUsage
	for _, kv := range o.Upstreams {
		name, url, ok := strings.Cut(kv, "=")
		if !ok || name == "" || url == "" {
			return cfg, &OverrideError{fmt.Sprintf("--upstream %q: want NAME=URL", kv)}
		}
		up := Upstream{Name: name, URL: url}
		if p, err := llmapi.ParseProvider(name); err == nil {
			up.Provider = p
		}
		cfg.Upstreams = append(cfg.Upstreams, up)
	}
	for i := range cfg.Upstreams {
		u := &cfg.Upstreams[i]
		if u.MaxConcurrency == 0 || o.Set.MaxConcurrency {
			u.MaxConcurrency = o.MaxConcurrency
		}
		if u.AgentMaxConcurrency == 0 || o.Set.AgentMaxConcurrency {
			u.AgentMaxConcurrency = o.AgentMaxConcurrency
		}
		if o.Set.RPM {
			u.RPM = o.RPM
		}
		if o.Set.TPM {
			u.TPM = o.TPM
		}
		if o.Set.ITPM {
			u.ITPM = o.ITPM
		}
		if o.Set.OTPM {
			u.OTPM = o.OTPM
		}
		if v := keyEnv[u.Name]; v != "" {
			u.APIKey, u.APIKeyEnv = getenv(v), v
			if u.APIKey == "" {
				return cfg, fmt.Errorf("upstream %s: environment variable %s is empty", u.Name, v)
			}
		} else if v := DefaultKeyEnv(u.Provider); v != "" {
			// The provider's conventional variable, used only to stand in
			// for virtual keys.
			u.APIKey, u.APIKeyEnv = getenv(v), v
		}
	}
	if len(cfg.Upstreams) == 0 {
		return cfg, &OverrideError{"no upstreams: give --upstream NAME=URL or a gateway.upstreams section in apiary.yaml"}
	}
	return cfg, nil
}

// pick is the value given explicitly, else the file's (when not zero),
// else def.
func pick[T int | int64 | time.Duration](set bool, given, file, def T) T {
	switch {
	case set:
		return given
	case file != 0:
		return file
	}
	return def
}

// LedgerPath is the ledger's path: path when not empty, else the per-user
// one (DefaultLedgerPath).
func LedgerPath(path string) (string, error) {
	if path != "" {
		return path, nil
	}
	return DefaultLedgerPath()
}

// OpenExistingDB opens the ledger at LedgerPath(path), which must already
// exist: reading keys or usage never creates one.
func OpenExistingDB(path string) (*sql.DB, error) {
	path, err := LedgerPath(path)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("ledger %s: %w (run the gateway first, or pass --ledger)", path, err)
	}
	return OpenDB(path)
}

// WriteKeys prints keys as a table, one key per line.
func WriteKeys(w io.Writer, keys []VirtualKey) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tAGENT\tBUDGET USD\tBUDGET TOKENS\tPRIORITY\tREVOKED\tCREATED")
	for _, k := range keys {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%v\t%s\n", k.ID, k.Agent, llmapi.MicroUSD(k.BudgetMicro), k.BudgetTokens, k.Priority, k.Revoked, k.CreatedAt.Format(time.RFC3339))
	}
	return tw.Flush()
}

// WriteUsage prints what Usage grouped by group returned as a table with
// right-aligned columns.
func WriteUsage(w io.Writer, group string, rows []UsageRow) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%s\tREQUESTS\tERRORS\tATTEMPTS\tINPUT\tOUTPUT\tCACHE\tUSD\t\n", strings.ToUpper(group))
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%.6f\t\n", r.Group, r.Requests, r.Errors, r.Attempts, r.InputTokens, r.OutputTokens, r.CacheTokens, r.USD)
	}
	return tw.Flush()
}
