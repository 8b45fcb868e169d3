package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/apiary-dev/apiary/internal/access"
	"github.com/apiary-dev/apiary/internal/board"
	"github.com/apiary-dev/apiary/internal/dashboard"
	"github.com/apiary-dev/apiary/internal/git"
	"github.com/apiary-dev/apiary/internal/runs"
	"github.com/apiary-dev/apiary/internal/runview"
	"github.com/apiary-dev/apiary/internal/telemetry"
)

// defaultDashListen is where `apiary dash` listens unless told otherwise.
const defaultDashListen = "127.0.0.1:7421"

func dashCommand() *command {
	return &command{
		Name:    "dash",
		Summary: "serve the web dashboard: runs, the gateway, the board and the money",
		Help: `Serves apiary's dashboard, a web page on this machine (no CDN, nothing loaded
from elsewhere), at http://127.0.0.1:7421 unless --listen says otherwise. It
shows the runs of the repository (--repo, default the current directory);
a run's task DAG with live status and the critical path; a task's envelope,
receipt, gate results, diff stat, log tail, tokens, dollars, lease and fencing
token; workers, claims, conflicts and resolution hints from the board
(--board DSN, default the repository's local board when it exists); the
gateway (--gateway URL): requests in flight, queue depth, the concurrency
limit over time, breaker state, 429/5xx and retries, tokens and dollars per
agent; escrow requests; and the SVG and PNG plots under .apiary/plots and
--plots DIR.

Its buttons cancel a task and its subtree or a whole run (through the run's
control socket, so the run may belong to another process), approve or reject
a pending resolution hint, and approve or deny an escrowed operation. It
prints "dashboard on http://ADDR" first. Only requests from its own page are
obeyed; on a non-loopback --listen address anyone who can reach it can press
those buttons. 'apiary run --dash ADDR' and 'apiary gateway --dash ADDR'
serve the same page from inside the run or the gateway; 'apiary top' shows
it in a terminal.`,
		Examples: []string{
			"apiary dash",
			"apiary dash --gateway http://127.0.0.1:7420 --listen 127.0.0.1:0",
		},
		Setup: func(fs *flag.FlagSet) runFunc {
			o := &dashOptions{}
			fs.StringVar(&o.listen, "listen", defaultDashListen, "`ADDR` to listen on; port 0 picks a free port")
			o.sourceFlags(fs)
			return func(ctx context.Context, e *env, args []string) error {
				if err := noArgs(args); err != nil {
					return err
				}
				return o.run(ctx, e)
			}
		},
	}
}

// dashOptions are the flags that choose what the dashboard (and top) read.
type dashOptions struct {
	listen, repo, gateway, board string
	plots                        stringList
	// ledger, if set, is the run gateway's ledger of this process (for
	// `apiary run --dash`), read instead of the file.
	ledger *runview.Ledger
}

func (o *dashOptions) sourceFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.repo, "repo", ".", "the git repository `DIR` whose runs to show")
	fs.StringVar(&o.gateway, "gateway", "", "base `URL` of a running gateway to show (e.g. http://127.0.0.1:7420)")
	fs.StringVar(&o.board, "board", "", "board `DSN` (local:PATH or etcd://HOST:PORT,...; default the repository's local board when it exists)")
	fs.Var(&o.plots, "plots", "a `DIR` of SVG or PNG plots to show besides .apiary/plots (repeatable)")
}

func (o *dashOptions) run(ctx context.Context, e *env) error {
	if err := checkListen("--listen", o.listen); err != nil {
		return err
	}
	src, closeSrc, err := o.sources(ctx, e)
	if err != nil {
		return err
	}
	defer closeSrc()
	l, hosts, err := dashListen(e, "--listen", o.listen)
	if err != nil {
		return err
	}
	srv, err := dashboard.New(dashboard.Config{Sources: src, Hosts: hosts, Logger: dashLogger(e)})
	if err != nil {
		l.Close()
		return err
	}
	fmt.Fprintf(e.Stdout, "dashboard on http://%s\n", l.Addr())
	return srv.Serve(ctx, l)
}

// sources opens what the flags name (see runview.Open). The returned
// function closes it.
func (o *dashOptions) sources(ctx context.Context, e *env) (dashboard.Sources, func(), error) {
	root, err := git.New(o.repo, git.Options{}).TopLevel(ctx)
	if err != nil && o.repo != "." {
		return dashboard.Sources{}, func() {}, repoError(o.repo, err)
	}
	ro := runview.OpenOptions{Root: root, Gateway: o.gateway, Board: o.board, Plots: o.plots, Ledger: o.ledger}
	if root != "" {
		ro.LedgerPath = access.RunLedger(root)
	}
	src, closeSrc, err := runview.Open(ctx, ro)
	return src, closeSrc, viewUsage(err)
}

// openBoardReadOnly opens the board dsn names for reading (see
// runview.OpenBoard).
func openBoardReadOnly(ctx context.Context, dsn string) (*board.Store, error) {
	st, err := runview.OpenBoard(ctx, dsn)
	return st, viewUsage(err)
}

// viewUsage makes a runview.OptionError a usage error.
func viewUsage(err error) error {
	var oe *runview.OptionError
	if errors.As(err, &oe) {
		return usagef("%v", err)
	}
	return err
}

// dashListen listens on addr (given as flagName, for its usage errors)
// and returns the Host names the dashboard must accept: only loopback names
// unless addr is not a loopback address, which is reported.
func dashListen(e *env, flagName, addr string) (net.Listener, []string, error) {
	if err := checkListen(flagName, addr); err != nil {
		return nil, nil, err
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	hosts := dashboard.AllowedHosts(addr)
	if hosts != nil {
		fmt.Fprintf(e.Stderr, "apiary: the dashboard listens on %s, beyond this machine: whoever reaches it can cancel runs and approve hints\n", l.Addr())
	}
	return l, hosts, nil
}

// checkListen is the usage error of a bad listen address, nil for a good
// one.
func checkListen(flagName, addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return usagef("%s %q: want HOST:PORT", flagName, addr)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return usagef("%s %q: the port must be a number from 0 to 65535", flagName, addr)
	}
	return nil
}

// dashLogger logs the dashboard's actions (cancellations, reviews,
// decisions) and failures on stderr.
func dashLogger(e *env) *slog.Logger {
	return telemetry.NewLogger(e.Stderr, telemetry.LogOptions{Level: slog.LevelInfo})
}

// serveDash serves the dashboard on addr in the background for run,
// gateway and worker (--dash), announcing its address on stderr. stop ends
// it and waits.
func serveDash(ctx context.Context, e *env, addr string, src dashboard.Sources) (srv *dashboard.Server, stop func(), err error) {
	l, hosts, err := dashListen(e, "--dash", addr)
	if err != nil {
		return nil, nil, err
	}
	srv, err = dashboard.New(dashboard.Config{Sources: src, Hosts: hosts, Logger: dashLogger(e)})
	if err != nil {
		l.Close()
		return nil, nil, err
	}
	fmt.Fprintf(e.Stderr, "apiary: dashboard on http://%s\n", l.Addr())
	return srv, srv.Start(ctx, l, func(err error) { fmt.Fprintf(e.Stderr, "apiary: dashboard: %v\n", err) }), nil
}

// workerDash serves, for a worker (--dash ADDR), the dashboard's board
// panels — workers, claims, conflicts and resolution hints, with approve
// and reject — read from the worker's board st. stop ends it; with addr ""
// it does nothing.
func workerDash(ctx context.Context, e *env, addr string, st *board.Store) (stop func(), err error) {
	if addr == "" {
		return func() {}, nil
	}
	_, stop, err = serveDash(ctx, e, addr, runview.BoardSources(st))
	return stop, err
}

// tracingFromEnv sets up OpenTelemetry tracing when the standard OTLP
// variables name an endpoint (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, else
// OTEL_EXPORTER_OTLP_ENDPOINT); otherwise tracing is off.
func tracingFromEnv(ctx context.Context, e *env, service string) (*telemetry.Tracing, error) {
	ep := e.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
	if ep == "" {
		ep = e.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT")
	}
	return telemetry.NewTracing(ctx, telemetry.TraceOptions{Endpoint: ep, ServiceName: service})
}

// observeRun wires a run's telemetry — runtime metrics, a trace per run
// when OTLP is configured, the runtime's warnings logged on stderr with the
// run's id (unless cfg.Logger is set) — and, with dashAddr, a dashboard
// that the run's events refresh at once. It sets cfg.OnEvent; stop ends it
// all (spans are exported then).
func observeRun(ctx context.Context, e *env, root, runID, dashAddr string, cfg *runs.Config) (stop func(), err error) {
	if cfg.Logger == nil {
		cfg.Logger = telemetry.NewLogger(e.Stderr, telemetry.LogOptions{Level: slog.LevelWarn}).With(telemetry.KeyRun, runID)
	}
	tracing, err := tracingFromEnv(ctx, e, "apiary-run")
	if err != nil {
		return nil, err
	}
	obs := runview.NewObserver(root, tracing)
	stopDash := func() {}
	if dashAddr != "" {
		o := &dashOptions{repo: root}
		// The run's own gateway, when it has one: its panel and its ledger.
		if ga, ok := cfg.Models.(*access.Gateway); ok {
			o.gateway, o.ledger = ga.URL(), runview.InProcessLedger(ga.DB(), ga.Flush)
		}
		src, closeSrc, err := o.sources(ctx, e)
		if err != nil {
			return nil, err
		}
		src.Metrics = obs.Metrics()
		srv, stopSrv, err := serveDash(ctx, e, dashAddr, src)
		if err != nil {
			closeSrc()
			return nil, err
		}
		obs.Notify(srv.Notify)
		stopDash = func() {
			stopSrv()
			closeSrc()
		}
	}
	cfg.OnEvent = obs.Event
	return func() {
		stopDash()
		if err := obs.Close(ctx); err != nil {
			fmt.Fprintf(e.Stderr, "apiary: exporting traces: %v\n", err)
		}
	}, nil
}

// gatewayDash serves the dashboard of a gateway listening on addr
// (--dash) and wraps its handler in tracing when OTLP is configured. stop
// ends both.
func gatewayDash(ctx context.Context, e *env, dashAddr string, gw net.Addr, h http.Handler) (http.Handler, func(), error) {
	tracing, err := tracingFromEnv(ctx, e, "apiary-gateway")
	if err != nil {
		return nil, nil, err
	}
	stopDash := func() {}
	if dashAddr != "" {
		src := dashboard.Sources{Gateway: &dashboard.GatewayClient{URL: "http://" + gw.String()}}
		if _, stopDash, err = serveDash(ctx, e, dashAddr, src); err != nil {
			return nil, nil, err
		}
	}
	return tracing.Middleware("gateway", h), func() {
		stopDash()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_ = tracing.Shutdown(sctx)
	}, nil
}
