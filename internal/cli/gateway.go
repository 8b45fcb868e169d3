package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math"
	"net"
	"time"

	"github.com/apiary-dev/apiary/internal/config"
	"github.com/apiary-dev/apiary/internal/gateway"
)

func gatewayCommand() *command {
	return &command{
		Name:    "gateway",
		Summary: "run the scheduling gateway in front of model APIs",
		Help: `gateway is a transparent scheduling proxy in front of LLM APIs. Point agents at
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
		Examples: []string{
			"apiary gateway --upstream anthropic=https://api.anthropic.com --upstream-key-env anthropic=ANTHROPIC_API_KEY",
			"apiary gateway --config apiary.yaml --dash 127.0.0.1:7421",
			"apiary gateway --listen 127.0.0.1:0 --rpm 50 --tpm 40000 --log-level debug",
		},
		Subs: []*command{gatewayKeyCommand(), gatewayUsageCommand()},
		Setup: func(fs *flag.FlagSet) runFunc {
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
	file, err := loadApiaryYAML(o.configFile)
	if err != nil {
		return gateway.Config{}, nil, err
	}
	cfg, err := gateway.Settings(file, gateway.Overrides{
		Upstreams: o.upstreams, UpstreamKeyEnv: o.upstreamKeys,
		MaxConcurrency: o.maxConc, AgentMaxConcurrency: o.agentMaxConc,
		RPM: o.rpm, TPM: o.tpm, ITPM: o.itpm, OTPM: o.otpm,
		MaxAttempts: o.maxAttempts, MaxRetryWait: o.maxRetryWait, TTFBTarget: o.ttfbTarget,
		NoRetry: o.noRetry, NoAIMD: o.noAIMD, NoResume: o.noResume, NoBreaker: o.noBreaker,
		NoRateLimit: o.noRate, NoAdmission: o.noAdmit, FailFast: o.failFast, NoIncludeUsage: o.noIncludeUsage,
		Set: gateway.OverridesSet{
			MaxConcurrency: o.set["max-concurrency"], AgentMaxConcurrency: o.set["agent-max-concurrency"],
			RPM: o.set["rpm"], TPM: o.set["tpm"], ITPM: o.set["itpm"], OTPM: o.set["otpm"],
			MaxAttempts: o.set["max-attempts"], MaxRetryWait: o.set["max-retry-wait"], TTFBTarget: o.set["ttfb-target"],
		},
	}, e.Getenv)
	var oe *gateway.OverrideError
	if errors.As(err, &oe) {
		return cfg, nil, usagef("%v", err)
	}
	if err != nil {
		return cfg, nil, err
	}
	return cfg, file, nil
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
	cfg.Logger = slog.New(slog.NewTextHandler(e.Stderr, &slog.HandlerOptions{Level: level}))
	listen := o.listen
	if !o.set["listen"] && file.Gateway.Listen != "" {
		listen = file.Gateway.Listen
	}
	// Bad addresses are usage errors, found before anything is opened.
	if err := checkListen("--listen", listen); err != nil {
		return err
	}
	if o.dash != "" {
		if err := checkListen("--dash", o.dash); err != nil {
			return err
		}
	}
	stopCluster, err := joinCluster(ctx, o.cluster, &cfg)
	if err != nil {
		return err
	}
	defer stopCluster()
	ledgerPath := o.ledger
	if !o.set["ledger"] && file.Gateway.Ledger != "" {
		ledgerPath = file.Gateway.Ledger
	}
	if ledgerPath, err = gateway.LedgerPath(ledgerPath); err != nil {
		return err
	}
	g, closeGateway, err := gateway.Standalone(ctx, cfg, ledgerPath)
	if err != nil {
		return err
	}
	l, err := net.Listen("tcp", listen)
	if err != nil {
		closeGateway()
		return err
	}
	h, stopDash, err := gatewayDash(ctx, e, o.dash, l.Addr(), g)
	if err != nil {
		l.Close()
		closeGateway()
		return err
	}
	defer stopDash()
	fmt.Fprintf(e.Stdout, "listening on http://%s\n", l.Addr())
	for _, u := range cfg.Upstreams {
		cfg.Logger.Info("upstream", "name", u.Name, "url", u.URL, "max_concurrency", u.MaxConcurrency, "rpm", u.RPM, "tpm", u.TPM)
	}
	if err := gateway.ServeUntil(ctx, l, h); err != nil {
		closeGateway()
		return err
	}
	return closeGateway()
}

func gatewayKeyCommand() *command {
	return &command{
		Name:    "key",
		Summary: "issue, list and revoke per-agent virtual keys",
		Help: `Virtual keys are issued by the gateway and map to an agent, a budget and a
priority; agents present them instead of the real upstream key, which they never
see. The gateway substitutes the upstream's real key (--upstream-key-env).`,
		Examples: []string{
			"apiary gateway key create --agent alice --budget-usd 5",
			"apiary gateway key list",
		},
		Subs: []*command{
			{
				Name:    "create",
				Summary: "issue a virtual key for an agent",
				Examples: []string{
					"apiary gateway key create --agent alice --budget-usd 5 --priority 2",
					"apiary gateway key create --agent ci --budget-tokens 2000000 --json",
				},
				Setup: func(fs *flag.FlagSet) runFunc {
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
						path, err := gateway.LedgerPath(*ledger)
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
							return writeJSON(e.Stdout, struct {
								Key string `json:"key"`
								gateway.VirtualKey
							}{secret, k})
						}
						fmt.Fprintln(e.Stdout, secret)
						fmt.Fprintf(e.Stderr, "key %s for agent %s (shown once; store it now)\n", k.ID, k.Agent)
						return nil
					}
				},
			},
			{
				Name:    "list",
				Summary: "list issued virtual keys",
				Examples: []string{
					"apiary gateway key list",
					"apiary gateway key list --json --ledger ./state.db",
				},
				Setup: func(fs *flag.FlagSet) runFunc {
					ledger := fs.String("ledger", "", "SQLite `PATH` of the ledger and virtual keys (default: $XDG_STATE_HOME/apiary/state.db, else ~/.local/state/apiary/state.db)")
					asJSON := fs.Bool("json", false, "print JSON")
					return func(ctx context.Context, e *env, args []string) error {
						if err := noArgs(args); err != nil {
							return err
						}
						db, err := gateway.OpenExistingDB(*ledger)
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
							return writeJSON(e.Stdout, keys)
						}
						return gateway.WriteKeys(e.Stdout, keys)
					}
				},
			},
			{
				Name:    "revoke",
				Args:    "ID",
				Summary: "revoke a virtual key; requests presenting it are refused",
				Examples: []string{
					"apiary gateway key revoke vk_4e0c1f9a7b2d",
				},
				Setup: func(fs *flag.FlagSet) runFunc {
					ledger := fs.String("ledger", "", "SQLite `PATH` of the ledger and virtual keys (default: $XDG_STATE_HOME/apiary/state.db, else ~/.local/state/apiary/state.db)")
					return func(ctx context.Context, e *env, args []string) error {
						if err := exactArgs(args, 1, "a key ID"); err != nil {
							return err
						}
						db, err := gateway.OpenExistingDB(*ledger)
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
		Name:    "usage",
		Summary: "summarise the gateway ledger by agent, model, upstream or key",
		Examples: []string{
			"apiary gateway usage",
			"apiary gateway usage --by model --json",
		},
		Setup: func(fs *flag.FlagSet) runFunc {
			ledger := fs.String("ledger", "", "SQLite `PATH` of the ledger and virtual keys (default: $XDG_STATE_HOME/apiary/state.db, else ~/.local/state/apiary/state.db)")
			by := fs.String("by", "agent", "group by `FIELD`: agent, model, upstream or key")
			asJSON := fs.Bool("json", false, "print JSON")
			return func(ctx context.Context, e *env, args []string) error {
				if err := noArgs(args); err != nil {
					return err
				}
				switch *by {
				case "agent", "model", "upstream", "key":
				default:
					return usagef("--by %q: want agent, model, upstream or key", *by)
				}
				db, err := gateway.OpenExistingDB(*ledger)
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
					return writeJSON(e.Stdout, rows)
				}
				return gateway.WriteUsage(e.Stdout, *by, rows)
			}
		},
	}
}
