package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/apiary-dev/apiary/internal/llmfake"
)

func mockllmCommand() *command {
	return &command{
		Name:    "mockllm",
		Summary: "run llmfake, the scripted fault-injecting model server",
		Help: `mockllm serves fake Anthropic, OpenAI (also Azure paths), Gemini and Ollama APIs on
loopback, with per-key rate limits and their real headers, injected faults and
scripted tool-calling conversations, so agents and the gateway run without keys.

It prints "listening on http://ADDR" as its first line and runs until
interrupted. Durations given in ms are multiplied by --time-scale, as is the
rate-limit window. Control endpoints: GET /_health, GET /_stats, POST /_reset,
POST /_config (a JSON patch of the configuration, applied live).

Example:
  apiary mockllm --listen 127.0.0.1:0 --rpm 50 --error-rate 0.08 --error-statuses 502`,
		Examples: []string{
			"apiary mockllm --listen 127.0.0.1:7411 --rpm 50",
			"apiary mockllm --script script.yaml --format anthropic",
			"apiary mockllm --error-rate 0.1 --cut-rate 0.05 --seed 7",
		},
		Setup: func(fs *flag.FlagSet) runFunc {
			listen := fs.String("listen", "127.0.0.1:7411", "`ADDR` to listen on; port 0 picks a free port")
			format := fs.String("format", "auto", "wire `FORMAT`: anthropic, openai, gemini, ollama, or auto (by path)")
			rpm := fs.Int64("rpm", 0, "`N` requests per window per API key (0: unlimited)")
			tpm := fs.Int64("tpm", 0, "`N` input+output tokens per window per API key (0: unlimited)")
			itpm := fs.Int64("itpm", 0, "`N` input tokens per window per API key (0: unlimited)")
			otpm := fs.Int64("otpm", 0, "`N` output tokens per window per API key (0: unlimited)")
			window := fs.String("window", "fixed", "rate-limit `KIND`: fixed (counters reset at window boundaries) or bucket (continuous refill)")
			windowLen := fs.Duration("window-length", llmfake.DefaultWindowLength, "rate-limit window `LENGTH`, before --time-scale")
			maxConc := fs.Int("max-concurrent", 0, "`N` requests in flight across all keys before 529/503 (0: no cap)")
			errRate := fs.Float64("error-rate", 0, "probability `P` of a 5xx with the provider's error body")
			errStatuses := fs.String("error-statuses", "500,502,503", "comma-separated 5xx `STATUSES` that --error-rate picks from")
			emptyRate := fs.Float64("empty-502-rate", 0, "probability `P` of a 502 with an empty body")
			resetRate := fs.Float64("reset-rate", 0, "probability `P` of a TCP reset (RST) before any response")
			edge := fs.Bool("edge-faults", false, "inject resets, 5xx and empty 502s in front of the API: before the concurrency cap and rate limits, charged to no limit")
			cutRate := fs.Float64("cut-rate", 0, "probability `P` that a response is cut (connection closed mid-stream)")
			streamErrRate := fs.Float64("stream-error-rate", 0, "probability `P` of an in-stream error event (Anthropic overloaded_error) in a 200 stream")
			afterEvents := fs.Int("after-events", 0, "`K` stream events sent before a cut or stream error (0: random)")
			latency := fs.Float64("latency-ms", 0, "base latency `MS` before the response headers")
			jitter := fs.Float64("jitter-ms", 0, "uniform random latency `MS` added to --latency-ms")
			spikeRate := fs.Float64("spike-rate", 0, "probability `P` that a request's latency is multiplied by --spike-mult")
			spikeMult := fs.Float64("spike-mult", 5, "latency multiplier `M` of a spike")
			slowRate := fs.Float64("slow-first-byte-rate", 0, "probability `P` that the first body byte is delayed after the headers")
			slowMS := fs.Float64("slow-first-byte-ms", 0, "delay `MS` of a slow first byte")
			eventDelay := fs.Float64("event-delay-ms", 0, "pause `MS` between stream events")
			outMean := fs.Float64("output-tokens-mean", 20, "mean output tokens `N` of unscripted replies")
			outStd := fs.Float64("output-tokens-std", 0, "standard deviation `N` of the output tokens of unscripted replies")
			chunkTokens := fs.Int("chunk-tokens", 8, "`N` output tokens per stream delta")
			script := fs.String("script", "", "YAML script `FILE` that drives tool-calling conversations")
			seed := fs.Uint64("seed", 1, "`SEED` of the fault and output-length RNG")
			timeScale := fs.Float64("time-scale", 1, "`FACTOR` applied to every duration (window, latencies); 0.01 runs a 60s window in 0.6s")
			requireKey := fs.Bool("require-key", false, "answer 401 to requests without an API key")
			verbose := fs.Bool("verbose", false, "log every request to stderr")
			return func(ctx context.Context, e *env, args []string) error {
				if err := noArgs(args); err != nil {
					return err
				}
				ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
				statuses, err := llmfake.ParseStatuses(*errStatuses)
				if err != nil {
					return usagef("--error-statuses: %v", err)
				}
				cfg := llmfake.Config{
					Format:        llmfake.Format(*format),
					RequireKey:    *requireKey,
					MaxConcurrent: *maxConc,
					TimeScale:     *timeScale,
					Limits: llmfake.Limits{RPM: *rpm, TPM: *tpm, ITPM: *itpm, OTPM: *otpm,
						Window: llmfake.Window(*window), WindowLength: *windowLen},
					Faults: llmfake.Faults{
						Edge: *edge, ResetRate: *resetRate, ErrorRate: *errRate, ErrorStatuses: statuses, EmptyBodyRate: *emptyRate,
						CutRate: *cutRate, StreamErrorRate: *streamErrRate, AfterEvents: *afterEvents,
						Latency: ms(*latency), Jitter: ms(*jitter), SpikeRate: *spikeRate, SpikeMult: *spikeMult,
						SlowFirstByteRate: *slowRate, SlowFirstByte: ms(*slowMS), EventDelay: ms(*eventDelay),
					},
					Output: llmfake.Output{TokensMean: *outMean, TokensStd: *outStd, ChunkTokens: *chunkTokens},
				}
				if err := cfg.Validate(); err != nil {
					return usagef("%v", strings.TrimPrefix(err.Error(), llmfake.ErrConfig.Error()+": "))
				}
				if *script != "" {
					scs, err := llmfake.LoadScripts(*script)
					if err != nil {
						return err
					}
					cfg.Scripts = scs
				}
				opts := llmfake.Options{Seed: *seed}
				if *verbose {
					opts.Logger = slog.New(slog.NewTextHandler(e.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
				}
				if err := checkListen("--listen", *listen); err != nil {
					return err
				}
				srv, err := llmfake.New(cfg, opts)
				if err != nil {
					return err
				}
				l, err := net.Listen("tcp", *listen)
				if err != nil {
					return err
				}
				hs := llmfake.Serve(l, srv)
				fmt.Fprintf(e.Stdout, "listening on %s\n", hs.URL)
				<-ctx.Done()
				// Let requests in flight finish for a while, then cut them.
				sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
				defer cancel()
				if err := hs.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
					return err
				}
				return nil
			}
		},
	}
}
