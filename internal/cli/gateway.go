package cli

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/apiary-dev/apiary/internal/config"
	"github.com/apiary-dev/apiary/internal/gateway"
	"github.com/apiary-dev/apiary/internal/llmapi"
)

func gatewayCommand() *command {
	return &command{
		name:    "gateway",
		summary: "run the scheduling gateway in front of model APIs",
		help: `gateway is a transparent scheduling proxy in front of LLM APIs. Point agents at
it (ANTHROPIC_BASE_URL=http://127.0.0.1:7420, OPENAI_BASE_URL=http://127.0.0.1:7420/v1)
and they change nothing else: the gateway paces requests by the upstream's rate
limits (configured and learned from headers), admits them by priority with
per-agent fair share, resizes concurrency by AIMD, trips a circuit breaker,
retries failures transparently before the first byte, enforces per-agent and
per-key budgets, and records every request in a SQLite ledger.

Upstreams come from --upstream NAME=URL (repeatable; a NAME that is a provider
— anthropic, openai, azure, gemini, ollama — also fixes the wire format) or from
the gateway section of apiary.yaml (--config). Requests are routed by provider,
or to a named upstream with a /NAME/ path prefix.

It prints "listening on http://ADDR" as its first line. Own endpoints:
GET /_apiary/stats, GET /_apiary/health, GET /metrics.`,
		subs: []*command{gatewayKeyCommand(), gatewayUsageCommand()},
		setup: func(fs *flag.FlagSet) runFunc {
			o := gatewayFlags(fs)
			return func(ctx context.Context, e *env, args []string) error {
				if err := noArgs(args); err != nil {
					return err
				}
				return runGateway(ctx, e, o)
			}
		},
	}
}

// gatewayOptions are the gateway's command-line flags.
type gatewayOptions struct {
	listen, configFile, ledger, logLevel, dash  string
	upstreams, upstreamKeys                     stringList
	maxConc, agentMaxConc                       int
	rpm, tpm, itpm, otpm                        int64
	noRetry, noAIMD, noBreaker, noRate, noAdmit bool
	noResume                                    bool
	failFast, noIncludeUsage                    bool
	ttfbTarget, maxRetryWait                    time.Duration
	maxAttempts                                 int
	set                                         map[string]bool // flags given explicitly
	cluster                                     *clusterOptions
	fs                                          *flag.FlagSet
}

func gatewayFlags(fs *flag.FlagSet) *gatewayOptions {
	o := &gatewayOptions{fs: fs, cluster: clusterFlags(fs)}
	fs.StringVar(&o.listen, "listen", config.DefaultGatewayListen, "`ADDR` to listen on; port 0 picks a free port")
	fs.Var(&o.upstreams, "upstream", "upstream `NAME=URL` (repeatable), e.g. anthropic=https://api.anthropic.com")
	fs.Var(&o.upstreamKeys, "upstream-key-env", "`NAME=VAR`: the environment variable holding upstream NAME's real API key, substituted for virtual keys (repeatable)")
	fs.StringVar(&o.configFile, "config", "", "apiary.yaml `FILE` (default: ./apiary.yaml when it exists)")
	fs.StringVar(&o.ledger, "ledger", "", "SQLite `PATH` of the ledger and virtual keys (default: $XDG_STATE_HOME/apiary/state.db, else ~/.local/state/apiary/state.db)")
	fs.IntVar(&o.maxConc, "max-concurrency", 16, "`N` requests in flight per upstream (AIMD's ceiling)")
	fs.IntVar(&o.agentMaxConc, "agent-max-concurrency", 0, "`N` requests in flight per agent per upstream (0: no cap)")
	fs.Int64Var(&o.rpm, "rpm", 0, "known requests-per-minute limit `N` of every upstream (0: learn from headers)")
	fs.Int64Var(&o.tpm, "tpm", 0, "known tokens-per-minute limit `N` (0: learn from headers)")
	fs.Int64Var(&o.itpm, "itpm", 0, "known input-tokens-per-minute limit `N` (0: learn from headers)")
	fs.Int64Var(&o.otpm, "otpm", 0, "known output-tokens-per-minute limit `N` (0: learn from headers)")
	fs.IntVar(&o.maxAttempts, "max-attempts", 10, "`N` attempts per request at most")
	fs.DurationVar(&o.maxRetryWait, "max-retry-wait", 2*time.Minute, "longest total `WAIT` between attempts; a longer retry-after is passed to the client")
	fs.DurationVar(&o.ttfbTarget, "ttfb-target", 0, "time to first byte above `D` counts as congestion for AIMD (0: off)")
	fs.BoolVar(&o.noRetry, "no-retry", false, "send every request once (ablation)")
	fs.BoolVar(&o.noAIMD, "no-aimd", false, "keep concurrency fixed at --max-concurrency (ablation)")
	fs.BoolVar(&o.noResume, "no-resume", false, "end a broken Anthropic stream with an error event instead of resuming it upstream")
	fs.BoolVar(&o.noBreaker, "no-breaker", false, "disable the circuit breaker (ablation)")
	fs.BoolVar(&o.noRate, "no-ratelimit", false, "do not pace by rate limits (ablation)")
	fs.BoolVar(&o.noAdmit, "no-admission", false, "no admission gate: unbounded concurrency (ablation)")
	fs.BoolVar(&o.failFast, "fail-fast", false, "answer at once with a typed error while a breaker is open, instead of waiting")
	fs.BoolVar(&o.noIncludeUsage, "no-include-usage", false, "do not add stream_options.include_usage to OpenAI streams")
	fs.StringVar(&o.logLevel, "log-level", "info", "`LEVEL` of stderr logs: debug (one line per request), info, warn, error")
	fs.StringVar(&o.dash, "dash", "", "serve the dashboard's gateway panel on `ADDR` (e.g. 127.0.0.1:7421)")
	return o
}

// gatewayConfig merges apiary.yaml and the flags into a gateway.Config.
func (o *gatewayOptions) gatewayConfig(e *env) (gateway.Config, *config.Config, error) {
	o.set = map[string]bool{}
	o.fs.Visit(func(f *flag.Flag) { o.set[f.Name] = true })
	var file *config.Config
	path := o.configFile
	if path == "" {
		if _, err := os.Stat("apiary.yaml"); err == nil {
			path = "apiary.yaml"
		}
	}
	if path != "" {
		var err error
		if file, err = config.LoadFile(path); err != nil {
			return gateway.Config{}, nil, err
		}
	} else {
		file, _ = config.Parse("", nil)
	}
	fg := file.Gateway
	cfg := gateway.Config{
		Agents:          map[string]gateway.AgentPolicy{},
		NoRetry:         o.noRetry || fg.Retry.Disabled,
		MaxAttempts:     pick(o.set["max-attempts"], o.maxAttempts, fg.Retry.MaxAttempts, o.maxAttempts),
		RetryBase:       fg.Retry.Base.D(),
		RetryCap:        fg.Retry.Max.D(),
		MaxRetryWait:    pickDur(o.set["max-retry-wait"], o.maxRetryWait, fg.Retry.MaxWait.D(), o.maxRetryWait),
		NoAIMD:          o.noAIMD || fg.AIMD.Disabled,
		NoResume:        o.noResume,
		AIMDMin:         fg.AIMD.Min,
		AIMDFactor:      fg.AIMD.Decrease,
		AIMDCooldown:    fg.AIMD.Cooldown.D(),
		TTFBTarget:      pickDur(o.set["ttfb-target"], o.ttfbTarget, fg.AIMD.TTFBTarget.D(), 0),
		NoBreaker:       o.noBreaker || fg.Breaker.Disabled,
		BreakerFailFast: o.failFast || fg.Breaker.FailFast,
		BreakerRate:     fg.Breaker.FailureRate,
		BreakerMin:      fg.Breaker.MinRequests,
		BreakerWindow:   fg.Breaker.Window.D(),
		BreakerOpenFor:  fg.Breaker.OpenFor.D(),
		BreakerProbes:   fg.Breaker.Probes,
		NoRateLimit:     o.noRate,
		NoAdmission:     o.noAdmit,
		NoIncludeUsage:  o.noIncludeUsage || !*fg.InjectIncludeUsage,
		MaxQueue:        fg.Queue.MaxWaiting,
	}
	if len(file.Prices) > 0 {
		over := map[string]llmapi.Price{}
		for m, p := range file.Prices {
			over[m] = llmapi.Price{Input: llmapi.USD(p.Input), Output: llmapi.USD(p.Output), CacheWrite5m: llmapi.USD(p.CacheWrite5m),
				CacheWrite1h: llmapi.USD(p.CacheWrite1h), CacheRead: llmapi.USD(p.CacheRead)}
		}
		cfg.Prices = llmapi.DefaultPrices().With(over)
	}
	for name, a := range fg.Agents {
		cfg.Agents[name] = gateway.AgentPolicy{Priority: a.Priority, MaxConcurrency: a.MaxConcurrency,
			BudgetMicroUSD: int64(math.Round(a.BudgetUSD * 1e6)), BudgetTokens: a.BudgetTokens}
	}
	keyEnv := map[string]string{}
	for _, kv := range o.upstreamKeys {
		name, v, ok := strings.Cut(kv, "=")
		if !ok || name == "" || v == "" {
			return cfg, nil, usagef("--upstream-key-env %q: want NAME=VAR", kv)
		}
		keyEnv[name] = v
	}
	for _, u := range fg.Upstreams {
		up := gateway.Upstream{Name: u.Name, URL: u.URL, MaxConcurrency: u.MaxConcurrency, AgentMaxConcurrency: u.AgentMaxConc,
			RPM: u.Limits.RPM, TPM: u.Limits.TPM, ITPM: u.Limits.ITPM, OTPM: u.Limits.OTPM}
		if u.Provider != "" {
			p, err := llmapi.ParseProvider(u.Provider)
			if err != nil {
				return cfg, nil, err
			}
			up.Provider = p
		}
		if u.APIKeyEnv != "" {
			keyEnv[u.Name] = u.APIKeyEnv
		}
		cfg.Upstreams = append(cfg.Upstreams, up)
	}
	for _, kv := range o.upstreams {
		name, url, ok := strings.Cut(kv, "=")
		if !ok || name == "" || url == "" {
			return cfg, nil, usagef("--upstream %q: want NAME=URL", kv)
		}
		up := gateway.Upstream{Name: name, URL: url}
		if p, err := llmapi.ParseProvider(name); err == nil {
			up.Provider = p
		}
		cfg.Upstreams = append(cfg.Upstreams, up)
	}
	for i := range cfg.Upstreams {
		u := &cfg.Upstreams[i]
		if u.MaxConcurrency == 0 || o.set["max-concurrency"] {
			u.MaxConcurrency = o.maxConc
		}
		if u.AgentMaxConcurrency == 0 || o.set["agent-max-concurrency"] {
			u.AgentMaxConcurrency = o.agentMaxConc
		}
		if o.set["rpm"] {
			u.RPM = o.rpm
		}
		if o.set["tpm"] {
			u.TPM = o.tpm
		}
		if o.set["itpm"] {
			u.ITPM = o.itpm
		}
		if o.set["otpm"] {
			u.OTPM = o.otpm
		}
		if v := keyEnv[u.Name]; v != "" {
			u.APIKey, u.APIKeyEnv = e.getenv(v), v
			if u.APIKey == "" {
				return cfg, nil, fmt.Errorf("upstream %s: environment variable %s is empty", u.Name, v)
			}
		} else if v := gateway.DefaultKeyEnv(u.Provider); v != "" {
			// The provider's conventional variable, used only to stand in
			// for virtual keys.
			u.APIKey, u.APIKeyEnv = e.getenv(v), v
		}
	}
	if len(cfg.Upstreams) == 0 {
		return cfg, nil, usagef("no upstreams: give --upstream NAME=URL or a gateway.upstreams section in apiary.yaml")
	}
	return cfg, file, nil
}

func pick(set bool, flagV, fileV, def int) int {
	switch {
	case set:
		return flagV
	case fileV != 0:
		return fileV
	}
	return def
}

func pickDur(set bool, flagV, fileV, def time.Duration) time.Duration {
	switch {
	case set:
		return flagV
	case fileV != 0:
		return fileV
	}
	return def
}

func parseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return 0, usagef("--log-level %q: want debug, info, warn or error", s)
	}
	return l, nil
}

func runGateway(ctx context.Context, e *env, o *gatewayOptions) error {
	cfg, file, err := o.gatewayConfig(e)
	if err != nil {
		return err
	}
	level, err := parseLevel(o.logLevel)
	if err != nil {
		return err
	}
	cfg.Logger = slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: level}))
	stopCluster, err := joinCluster(ctx, o.cluster, &cfg)
	if err != nil {
		return err
	}
	defer stopCluster()
	listen := o.listen
	if !o.set["listen"] && file.Gateway.Listen != "" {
		listen = file.Gateway.Listen
	}
	ledgerPath := o.ledger
	if !o.set["ledger"] && file.Gateway.Ledger != "" && file.Gateway.Ledger != config.DefaultLedger {
		ledgerPath = file.Gateway.Ledger
	}
	if ledgerPath, err = resolveLedger(ledgerPath); err != nil {
		return err
	}
	db, err := gateway.OpenDB(ledgerPath)
	if err != nil {
		return err
	}
	defer db.Close()
	// With virtual keys in the ledger the gateway substitutes real ones:
	// without a real key it must not start (every such request would fail).
	if cfg.RequireAPIKeys, err = gateway.HasActiveKeys(ctx, db); err != nil {
		return err
	}
	ledger := gateway.NewLedger(db)
	cfg.DB, cfg.Ledger = db, ledger
	g, err := gateway.New(ctx, cfg)
	if err != nil {
		ledger.Close()
		return err
	}
	l, err := net.Listen("tcp", listen)
	if err != nil {
		ledger.Close()
		return err
	}
	h, stopDash, err := gatewayDash(ctx, e, o.dash, l.Addr(), g)
	if err != nil {
		l.Close()
		ledger.Close()
		return err
	}
	defer stopDash()
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 30 * time.Second}
	fmt.Fprintf(e.stdout, "listening on http://%s\n", l.Addr())
	for _, u := range cfg.Upstreams {
		cfg.Logger.Info("upstream", "name", u.Name, "url", u.URL, "max_concurrency", u.MaxConcurrency, "rpm", u.RPM, "tpm", u.TPM)
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	select {
	case <-ctx.Done():
	case err := <-errc:
		ledger.Close()
		return err
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	_ = g.Close()
	return ledger.Close()
}

func gatewayKeyCommand() *command {
	return &command{
		name:    "key",
		summary: "issue, list and revoke per-agent virtual keys",
		help: `Virtual keys are issued by the gateway and map to an agent, a budget and a
priority; agents present them instead of the real upstream key, which they never
see. The gateway substitutes the upstream's real key (--upstream-key-env).`,
		subs: []*command{
			{
				name:    "create",
				summary: "issue a virtual key for an agent",
				setup: func(fs *flag.FlagSet) runFunc {
					ledger := fs.String("ledger", "", "SQLite `PATH` of the ledger and virtual keys (default: $XDG_STATE_HOME/apiary/state.db, else ~/.local/state/apiary/state.db)")
					agent := fs.String("agent", "", "agent `NAME` the key belongs to (required)")
					usd := fs.Float64("budget-usd", 0, "USD `BUDGET` of the key (0: none)")
					tokens := fs.Int64("budget-tokens", 0, "token `BUDGET` of the key (0: none)")
					prio := fs.Int("priority", 0, "priority class `N`; higher is admitted first")
					asJSON := fs.Bool("json", false, "print the key and its record as JSON")
					return func(ctx context.Context, e *env, args []string) error {
						if err := noArgs(args); err != nil {
							return err
						}
						if *agent == "" {
							return usagef("--agent is required")
						}
						if *usd < 0 || *tokens < 0 {
							return usagef("budgets must not be negative")
						}
						path, err := resolveLedger(*ledger)
						if err != nil {
							return err
						}
						db, err := gateway.OpenDB(path)
						if err != nil {
							return err
						}
						defer db.Close()
						secret, k, err := gateway.CreateKey(ctx, db, *agent, int64(math.Round(*usd*1e6)), *tokens, *prio, time.Now())
						if err != nil {
							return err
						}
						if *asJSON {
							return writeJSON(e.stdout, struct {
								Key string `json:"key"`
								gateway.VirtualKey
							}{secret, k})
						}
						fmt.Fprintln(e.stdout, secret)
						fmt.Fprintf(e.stderr, "key %s for agent %s (shown once; store it now)\n", k.ID, k.Agent)
						return nil
					}
				},
			},
			{
				name:    "list",
				summary: "list issued virtual keys",
				setup: func(fs *flag.FlagSet) runFunc {
					ledger := fs.String("ledger", "", "SQLite `PATH` of the ledger and virtual keys (default: $XDG_STATE_HOME/apiary/state.db, else ~/.local/state/apiary/state.db)")
					asJSON := fs.Bool("json", false, "print JSON")
					return func(ctx context.Context, e *env, args []string) error {
						if err := noArgs(args); err != nil {
							return err
						}
						db, err := openExisting(*ledger)
						if err != nil {
							return err
						}
						defer db.Close()
						keys, err := gateway.ListKeys(ctx, db)
						if err != nil {
							return err
						}
						if *asJSON {
							if keys == nil {
								keys = []gateway.VirtualKey{}
							}
							return writeJSON(e.stdout, keys)
						}
						tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
						fmt.Fprintln(tw, "ID\tAGENT\tBUDGET USD\tBUDGET TOKENS\tPRIORITY\tREVOKED\tCREATED")
						for _, k := range keys {
							fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%v\t%s\n", k.ID, k.Agent, llmapi.MicroUSD(k.BudgetMicro), k.BudgetTokens, k.Priority, k.Revoked, k.CreatedAt.Format(time.RFC3339))
						}
						return tw.Flush()
					}
				},
			},
			{
				name:    "revoke",
				args:    "ID",
				summary: "revoke a virtual key; requests presenting it are refused",
				setup: func(fs *flag.FlagSet) runFunc {
					ledger := fs.String("ledger", "", "SQLite `PATH` of the ledger and virtual keys (default: $XDG_STATE_HOME/apiary/state.db, else ~/.local/state/apiary/state.db)")
					return func(ctx context.Context, e *env, args []string) error {
						if err := exactArgs(args, 1, "a key ID"); err != nil {
							return err
						}
						db, err := openExisting(*ledger)
						if err != nil {
							return err
						}
						defer db.Close()
						return gateway.RevokeKey(ctx, db, args[0])
					}
				},
			},
		},
	}
}

func gatewayUsageCommand() *command {
	return &command{
		name:    "usage",
		summary: "summarise the gateway ledger by agent, model, upstream or key",
		setup: func(fs *flag.FlagSet) runFunc {
			ledger := fs.String("ledger", "", "SQLite `PATH` of the ledger and virtual keys (default: $XDG_STATE_HOME/apiary/state.db, else ~/.local/state/apiary/state.db)")
			by := fs.String("by", "agent", "group by `FIELD`: agent, model, upstream or key")
			asJSON := fs.Bool("json", false, "print JSON")
			return func(ctx context.Context, e *env, args []string) error {
				if err := noArgs(args); err != nil {
					return err
				}
				db, err := openExisting(*ledger)
				if err != nil {
					return err
				}
				defer db.Close()
				rows, err := gateway.Usage(ctx, db, *by)
				if errors.Is(err, gateway.ErrBadGroup) {
					return usagef("--by %q: want agent, model, upstream or key", *by)
				}
				if err != nil {
					return err
				}
				if *asJSON {
					if rows == nil {
						rows = []gateway.UsageRow{}
					}
					return writeJSON(e.stdout, rows)
				}
				tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
				fmt.Fprintf(tw, "%s\tREQUESTS\tERRORS\tATTEMPTS\tINPUT\tOUTPUT\tCACHE\tUSD\t\n", strings.ToUpper(*by))
				for _, r := range rows {
					fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%.6f\t\n", r.Group, r.Requests, r.Errors, r.Attempts, r.InputTokens, r.OutputTokens, r.CacheTokens, r.USD)
				}
				return tw.Flush()
			}
		},
	}
}

// resolveLedger is the ledger's path: the flag's, else the per-user one.
func resolveLedger(flagV string) (string, error) {
	if flagV != "" {
		return flagV, nil
	}
	return gateway.DefaultLedgerPath()
}

// openExisting opens a ledger that must already exist.
func openExisting(flagV string) (*sql.DB, error) {
	path, err := resolveLedger(flagV)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("ledger %s: %w (run the gateway first, or pass --ledger)", path, err)
	}
	return gateway.OpenDB(path)
}
