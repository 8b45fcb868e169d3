package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/apiary-dev/apiary/internal/board"
	"github.com/apiary-dev/apiary/internal/board/connect"
	"github.com/apiary-dev/apiary/internal/dashboard"
	"github.com/apiary-dev/apiary/internal/git"
	"github.com/apiary-dev/apiary/internal/rundir"
	"github.com/apiary-dev/apiary/internal/runs"
	"github.com/apiary-dev/apiary/internal/telemetry"
)

// defaultDashListen is where `apiary dash` listens unless told otherwise.
const defaultDashListen = "127.0.0.1:7421"

func dashCommand() *command {
	return &command{
		name:    "dash",
		summary: "serve the web dashboard: runs, the gateway, the board and the money",
		help: `Serves apiary's dashboard, a web page on this machine (no CDN, nothing loaded
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
		setup: func(fs *flag.FlagSet) runFunc {
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
}

func (o *dashOptions) sourceFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.repo, "repo", ".", "the git repository `DIR` whose runs to show")
	fs.StringVar(&o.gateway, "gateway", "", "base `URL` of a running gateway to show (e.g. http://127.0.0.1:7420)")
	fs.StringVar(&o.board, "board", "", "board `DSN` (local:PATH or etcd://HOST:PORT,...; default the repository's local board when it exists)")
	fs.Var(&o.plots, "plots", "a `DIR` of SVG or PNG plots to show besides .apiary/plots (repeatable)")
}

func (o *dashOptions) run(ctx context.Context, e *env) error {
	src, closeSrc, err := o.sources(ctx, e)
	if err != nil {
		return err
	}
	defer closeSrc()
	l, hosts, err := dashListen(e, o.listen)
	if err != nil {
		return err
	}
	srv, err := dashboard.New(dashboard.Config{Sources: src, Hosts: hosts, Logger: dashLogger(e)})
	if err != nil {
		l.Close()
		return err
	}
	fmt.Fprintf(e.stdout, "dashboard on http://%s\n", l.Addr())
	return srv.Serve(ctx, l)
}

// sources opens what the flags name. The returned function closes it.
func (o *dashOptions) sources(ctx context.Context, e *env) (dashboard.Sources, func(), error) {
	var src dashboard.Sources
	closers := []func(){}
	closeAll := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	root, err := git.New(o.repo, git.Options{}).TopLevel(ctx)
	if err != nil && o.repo != "." {
		return src, closeAll, fmt.Errorf("%s is not in a git repository: %w", o.repo, err)
	}
	dsn := o.board
	if dsn == "" && root != "" {
		dsn = defaultBoardDSN(root)
	}
	var st *board.Store
	if dsn != "" {
		if st, err = connect.Open(ctx, dsn, connect.Options{}); err != nil {
			return src, closeAll, fmt.Errorf("board %s: %w", dsn, err)
		}
		closers = append(closers, func() { st.Close() })
		bv := boardView{st: st}
		src.Board, src.Hints = bv, bv
	}
	if root != "" {
		src.Runs = newRunFiles(root, st)
		src.Cancel = runControl{root: root, now: time.Now}
		q := escrowQueue{q: runs.NewEscrowQueue(root, nil)}
		src.Escrow, src.Decide = q, q
	}
	var dirs dashboard.PlotDirs
	if root != "" {
		dirs = append(dirs, rundir.State(root, "plots"))
	}
	for _, d := range o.plots {
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			closeAll()
			return src, func() {}, usagef("--plots %s: not a directory", d)
		}
		dirs = append(dirs, d)
	}
	src.Plots = dirs
	if o.gateway != "" {
		src.Gateway = &dashboard.GatewayClient{URL: o.gateway}
	}
	if src.Runs == nil && src.Gateway == nil && src.Board == nil {
		closeAll()
		return src, func() {}, errors.New("nothing to show: not in a git repository, and no --gateway or --board")
	}
	return src, closeAll, nil
}

// dashListen listens on addr and returns the Host names the dashboard
// must accept: only loopback names unless addr is not a loopback address,
// which is reported.
func dashListen(e *env, addr string) (net.Listener, []string, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, nil, usagef("--listen %q: want HOST:PORT", addr)
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	if ip := net.ParseIP(host); host == "localhost" || ip != nil && ip.IsLoopback() {
		return l, nil, nil
	}
	fmt.Fprintf(e.stderr, "apiary: the dashboard listens on %s, beyond this machine: whoever reaches it can cancel runs and approve hints\n", l.Addr())
	return l, []string{"*"}, nil
}

// dashLogger logs the dashboard's actions (cancellations, reviews,
// decisions) and failures on stderr.
func dashLogger(e *env) *slog.Logger {
	return telemetry.NewLogger(e.stderr, telemetry.LogOptions{Level: slog.LevelInfo})
}

// serveDash serves the dashboard on addr in the background for run,
// gateway and worker (--dash), announcing its address on stderr. stop ends
// it and waits.
func serveDash(ctx context.Context, e *env, addr string, src dashboard.Sources) (srv *dashboard.Server, stop func(), err error) {
	l, hosts, err := dashListen(e, addr)
	if err != nil {
		return nil, nil, err
	}
	srv, err = dashboard.New(dashboard.Config{Sources: src, Hosts: hosts, Logger: dashLogger(e)})
	if err != nil {
		l.Close()
		return nil, nil, err
	}
	fmt.Fprintf(e.stderr, "apiary: dashboard on http://%s\n", l.Addr())
	dctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := srv.Serve(dctx, l); err != nil {
			fmt.Fprintf(e.stderr, "apiary: dashboard: %v\n", err)
		}
	})
	return srv, func() {
		cancel()
		wg.Wait()
	}, nil
}

// workerDash serves, for a worker (--dash ADDR), the dashboard's board
// panels — workers, claims, conflicts and resolution hints, with approve
// and reject — read from the worker's board st. stop ends it; with addr ""
// it does nothing.
func workerDash(ctx context.Context, e *env, addr string, st *board.Store) (stop func(), err error) {
	if addr == "" {
		return func() {}, nil
	}
	bv := boardView{st: st}
	_, stop, err = serveDash(ctx, e, addr, dashboard.Sources{Board: bv, Hints: bv})
	return stop, err
}

// tracingFromEnv sets up OpenTelemetry tracing when the standard OTLP
// variables name an endpoint (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, else
// OTEL_EXPORTER_OTLP_ENDPOINT); otherwise tracing is off.
func tracingFromEnv(ctx context.Context, e *env, service string) (*telemetry.Tracing, error) {
	ep := e.getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
	if ep == "" {
		ep = e.getenv("OTEL_EXPORTER_OTLP_ENDPOINT")
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
		cfg.Logger = telemetry.NewLogger(e.stderr, telemetry.LogOptions{Level: slog.LevelWarn}).With(telemetry.KeyRun, runID)
	}
	tracing, err := tracingFromEnv(ctx, e, "apiary-run")
	if err != nil {
		return nil, err
	}
	metrics := telemetry.NewMetrics()
	traces := tracing.Runs()
	var srv *dashboard.Server
	stopDash := func() {}
	if dashAddr != "" {
		o := &dashOptions{repo: root}
		src, closeSrc, err := o.sources(ctx, e)
		if err != nil {
			return nil, err
		}
		src.Metrics = metrics.Handler()
		var stopSrv func()
		if srv, stopSrv, err = serveDash(ctx, e, dashAddr, src); err != nil {
			closeSrc()
			return nil, err
		}
		stopDash = func() {
			stopSrv()
			closeSrc()
		}
	}
	cfg.OnEvent = func(ev runs.Event) {
		te := telemetryEvent(root, ev, tracing.Enabled())
		metrics.Observe(te)
		traces.Observe(te)
		if srv != nil {
			srv.Notify()
		}
	}
	return func() {
		stopDash()
		traces.Close(time.Now())
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if err := tracing.Shutdown(sctx); err != nil {
			fmt.Fprintf(e.stderr, "apiary: exporting traces: %v\n", err)
		}
	}, nil
}

// telemetryEvent converts a run event; with files it also reads what the
// trace needs from the run's files (its trace id, a task's checks).
func telemetryEvent(root string, ev runs.Event, files bool) telemetry.Event {
	te := telemetry.Event{Time: ev.Time, Run: ev.Run, Kind: ev.Kind, Task: ev.Task, Attempt: ev.Attempt, Role: ev.Role,
		Base: ev.Base, Commit: ev.Commit, Status: ev.Status, Reason: ev.Reason, Integrated: ev.Integrated, Exit: ev.Exit,
		Fence: ev.Fence, Traceparent: ev.Trace}
	if ev.Gate != nil {
		te.Gate, te.GateDetail = ev.Gate.Gate, ev.Gate.Detail
	}
	if ev.Usage != nil {
		te.InputTokens, te.OutputTokens, te.USD = ev.Usage.InputTokens, ev.Usage.OutputTokens, ev.Usage.USD
	}
	if !files {
		return te
	}
	switch ev.Kind {
	case rundir.EvRunStarted, rundir.EvRunResumed:
		if rec, err := rundir.Open(root, ev.Run).Record(); err == nil {
			te.TraceID = rec.TraceID
		}
	case rundir.EvTaskDone:
		if rc, err := rundir.Open(root, ev.Run).Task(ev.Task).Receipt(); err == nil && rc != nil {
			for _, c := range rc.Checks {
				te.Checks = append(te.Checks, telemetry.Check{Command: c.Command, Exit: c.Exit, Duration: time.Duration(c.Duration * float64(time.Second))})
			}
		}
	}
	return te
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

// writeJSONTo encodes v indented.
func writeJSONTo(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
