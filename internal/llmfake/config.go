package llmfake

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/apiary-dev/apiary/internal/strictyaml"
)

// ErrConfig is wrapped by every error about an invalid Config.
var ErrConfig = errors.New("llmfake: invalid config")

// Format restricts a Server to one provider's wire format.
type Format string

// Formats. FormatAuto (or "") serves every provider and picks by path.
const (
	FormatAuto      Format = "auto"
	FormatAnthropic Format = "anthropic"
	FormatOpenAI    Format = "openai"
	FormatGemini    Format = "gemini"
	FormatOllama    Format = "ollama"
)

// Window is how rate-limit windows refill.
type Window string

// Window kinds. "" means WindowFixed.
const (
	// WindowFixed counts per window; the counters reset at window
	// boundaries (the HIVEMIND evaluation's model).
	WindowFixed Window = "fixed"
	// WindowBucket is a token bucket of capacity limit that refills
	// continuously at limit per window length (Anthropic's model).
	WindowBucket Window = "bucket"
)

// DefaultWindowLength is the window length used when Limits.WindowLength is 0.
const DefaultWindowLength = time.Minute

// Config is everything that shapes a Server's behaviour. The zero value is an
// unlimited, fault-free, fast server serving every format. A Config may be
// replaced at any time with Server.SetConfig.
//
// Its JSON form (GET and POST /_config) uses the json tag names; the
// durations limits.window_length, faults.latency, faults.jitter,
// faults.slow_first_byte and faults.event_delay are Go duration strings
// ("80ms", "1m0s"), and a plain number is read as milliseconds. A POST merges
// the given fields into the current Config; unknown fields are rejected.
type Config struct {
	// Format restricts the server to one provider; other providers' paths
	// get a 404 in this provider's shape. "" or "auto" serves all.
	Format Format `json:"format,omitempty"`
	// RequireKey makes requests without an API key fail with 401.
	RequireKey bool `json:"require_key,omitempty"`
	// MaxConcurrent caps the requests in flight across all keys; 0 means no
	// cap. Over the cap Anthropic answers 529, the others 503.
	MaxConcurrent int `json:"max_concurrent,omitempty"`
	// TimeScale multiplies every configured duration; 0 means 1.
	TimeScale float64 `json:"time_scale,omitempty"`

	Limits Limits `json:"limits"`
	Faults Faults `json:"faults"`
	Output Output `json:"output"`

	// Scripts drive conversations; nil answers every request with default
	// text. They are not part of the JSON form.
	Scripts *Scripts `json:"-"`
}

// Limits are per-API-key rate limits; a zero limit is no limit.
type Limits struct {
	RPM  int64 `json:"rpm,omitempty"`  // requests per window
	TPM  int64 `json:"tpm,omitempty"`  // input + output tokens per window
	ITPM int64 `json:"itpm,omitempty"` // input tokens per window
	OTPM int64 `json:"otpm,omitempty"` // output tokens per window
	// Window is fixed (default) or bucket.
	Window Window `json:"window,omitempty"`
	// WindowLength is the window (bucket refill period) before time
	// scaling; 0 means DefaultWindowLength.
	WindowLength time.Duration `json:"-"`
}

// Faults are injected failures; every rate is a probability in [0, 1]. The
// pre-response faults (ResetRate, ErrorRate, EmptyBodyRate) exclude each
// other and must sum to at most 1; so must the stream faults (CutRate,
// StreamErrorRate).
type Faults struct {
	// ResetRate is the probability of a TCP reset (RST) before any response.
	ResetRate float64 `json:"reset_rate,omitempty"`
	// ErrorRate is the probability of a 5xx with the provider's body; the
	// status is drawn uniformly from ErrorStatuses.
	ErrorRate float64 `json:"error_rate,omitempty"`
	// ErrorStatuses are the statuses ErrorRate picks from; empty means
	// 500, 502 and 503.
	ErrorStatuses []int `json:"error_statuses,omitempty"`
	// EmptyBodyRate is the probability of a 502 with an empty body.
	EmptyBodyRate float64 `json:"empty_body_rate,omitempty"`
	// Edge places the three faults above in front of the API, as a load
	// balancer's 502 or a reset connection would be: they happen before
	// the concurrency cap and the rate limiter, are charged to no limit
	// and carry no rate-limit headers. Without it they happen after
	// admission and count toward the limits, as failed requests do at
	// OpenAI.
	Edge bool `json:"edge,omitempty"`
	// CutRate is the probability that a successful response is cut: the
	// connection closes after AfterEvents stream events (a non-streaming
	// body is cut in the middle), without a terminal event.
	CutRate float64 `json:"cut_rate,omitempty"`
	// StreamErrorRate is the probability that a stream carries the
	// provider's in-stream error (Anthropic: event: error, overloaded_error)
	// after AfterEvents events, and then ends.
	StreamErrorRate float64 `json:"stream_error_rate,omitempty"`
	// AfterEvents is K for cuts and stream errors; 0 picks K uniformly among
	// the stream's events (at least one event is sent, never the last).
	AfterEvents int `json:"after_events,omitempty"`

	// Latency is the base time before the response headers.
	Latency time.Duration `json:"-"`
	// Jitter adds a uniform [0, Jitter) to Latency.
	Jitter time.Duration `json:"-"`
	// SpikeRate is the probability that the latency is multiplied by
	// SpikeMult (0 means 5).
	SpikeRate float64 `json:"spike_rate,omitempty"`
	SpikeMult float64 `json:"spike_mult,omitempty"`
	// SlowFirstByteRate is the probability that, after the headers, the
	// first body byte is delayed by SlowFirstByte.
	SlowFirstByteRate float64       `json:"slow_first_byte_rate,omitempty"`
	SlowFirstByte     time.Duration `json:"-"`
	// EventDelay is the pause between two stream events.
	EventDelay time.Duration `json:"-"`
}

// Output shapes replies without a script.
type Output struct {
	// TokensMean and TokensStd give the output length ~ N(mean, std),
	// clamped to [1, max_tokens]; a zero mean means 20.
	TokensMean float64 `json:"tokens_mean,omitempty"`
	TokensStd  float64 `json:"tokens_std,omitempty"`
	// ChunkTokens is the number of output tokens per stream delta; 0 means
	// 8.
	ChunkTokens int `json:"chunk_tokens,omitempty"`
}

// Defaults applied to zero fields.
const (
	defaultTokensMean  = 20
	defaultChunkTokens = 8
	defaultSpikeMult   = 5
)

// Validate reports the first invalid setting, wrapping ErrConfig.
func (c *Config) Validate() error {
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrConfig, field, fmt.Sprintf(format, args...))
	}
	switch c.Format {
	case "", FormatAuto, FormatAnthropic, FormatOpenAI, FormatGemini, FormatOllama:
	default:
		return bad("format", "%q is not one of anthropic, openai, gemini, ollama, auto", c.Format)
	}
	switch c.Limits.Window {
	case "", WindowFixed, WindowBucket:
	default:
		return bad("limits.window", "%q is not fixed or bucket", c.Limits.Window)
	}
	if c.MaxConcurrent < 0 {
		return bad("max_concurrent", "negative")
	}
	if c.TimeScale < 0 || math.IsNaN(c.TimeScale) || math.IsInf(c.TimeScale, 0) {
		return bad("time_scale", "must be a finite number >= 0")
	}
	type num struct {
		name string
		v    float64
	}
	f := &c.Faults
	// Checked in a fixed order so the first problem reported is stable.
	for _, n := range []num{{"limits.rpm", float64(c.Limits.RPM)}, {"limits.tpm", float64(c.Limits.TPM)},
		{"limits.itpm", float64(c.Limits.ITPM)}, {"limits.otpm", float64(c.Limits.OTPM)},
		{"limits.window_length", float64(c.Limits.WindowLength)}, {"faults.latency", float64(f.Latency)},
		{"faults.jitter", float64(f.Jitter)}, {"faults.slow_first_byte", float64(f.SlowFirstByte)},
		{"faults.event_delay", float64(f.EventDelay)}} {
		if n.v < 0 {
			return bad(n.name, "negative")
		}
	}
	for _, n := range []num{{"faults.reset_rate", f.ResetRate}, {"faults.error_rate", f.ErrorRate},
		{"faults.empty_body_rate", f.EmptyBodyRate}, {"faults.cut_rate", f.CutRate}, {"faults.stream_error_rate", f.StreamErrorRate},
		{"faults.spike_rate", f.SpikeRate}, {"faults.slow_first_byte_rate", f.SlowFirstByteRate}} {
		if !(n.v >= 0 && n.v <= 1) {
			return bad(n.name, "%v is not a probability in [0, 1]", n.v)
		}
	}
	if s := f.ResetRate + f.ErrorRate + f.EmptyBodyRate; s > 1+1e-9 {
		return bad("faults", "reset_rate + error_rate + empty_body_rate = %v > 1", s)
	}
	if s := f.CutRate + f.StreamErrorRate; s > 1+1e-9 {
		return bad("faults", "cut_rate + stream_error_rate = %v > 1", s)
	}
	for _, st := range f.ErrorStatuses {
		if st < 500 || st > 599 {
			return bad("faults.error_statuses", "%d is not a 5xx status", st)
		}
	}
	if f.AfterEvents < 0 {
		return bad("faults.after_events", "negative")
	}
	if f.SpikeMult < 0 || math.IsNaN(f.SpikeMult) {
		return bad("faults.spike_mult", "negative")
	}
	o := &c.Output
	if o.TokensMean < 0 || o.TokensStd < 0 || math.IsNaN(o.TokensMean) || math.IsNaN(o.TokensStd) {
		return bad("output", "token mean and std must be >= 0")
	}
	if o.ChunkTokens < 0 {
		return bad("output.chunk_tokens", "negative")
	}
	return nil
}

// scale multiplies d by the time scale.
func (c *Config) scale(d time.Duration) time.Duration {
	if c.TimeScale == 0 || c.TimeScale == 1 {
		return d
	}
	return time.Duration(float64(d) * c.TimeScale)
}

// window is the effective (scaled) window length.
func (c *Config) window() time.Duration {
	w := c.Limits.WindowLength
	if w == 0 {
		w = DefaultWindowLength
	}
	w = c.scale(w)
	if w <= 0 {
		w = time.Millisecond
	}
	return w
}

func (c *Config) scaled() bool { return c.TimeScale != 0 && c.TimeScale != 1 }

func (c *Config) errorStatuses() []int {
	if len(c.Faults.ErrorStatuses) == 0 {
		return []int{500, 502, 503}
	}
	return c.Faults.ErrorStatuses
}

// The JSON form writes durations as Go duration strings ("80ms"), which is
// what POST /_config accepts. The shadow structs below replace the duration
// fields (the outer field wins over the embedded one of the same name).

type limitsPlain Limits

type limitsJSON struct {
	limitsPlain
	WindowLength jsonDuration `json:"window_length,omitempty"`
}

// MarshalJSON writes the window length as a duration string.
func (l Limits) MarshalJSON() ([]byte, error) {
	return json.Marshal(limitsJSON{limitsPlain(l), jsonDuration(l.WindowLength)})
}

type faultsPlain Faults

type faultsJSON struct {
	faultsPlain
	Latency       jsonDuration `json:"latency,omitempty"`
	Jitter        jsonDuration `json:"jitter,omitempty"`
	SlowFirstByte jsonDuration `json:"slow_first_byte,omitempty"`
	EventDelay    jsonDuration `json:"event_delay,omitempty"`
}

// MarshalJSON writes durations as duration strings.
func (f Faults) MarshalJSON() ([]byte, error) {
	return json.Marshal(faultsJSON{faultsPlain(f), jsonDuration(f.Latency), jsonDuration(f.Jitter),
		jsonDuration(f.SlowFirstByte), jsonDuration(f.EventDelay)})
}

type configPlain Config

type configJSON struct {
	configPlain
	Limits limitsJSON `json:"limits"`
	Faults faultsJSON `json:"faults"`
}

// UnmarshalJSON merges data into c: the fields it gives replace c's, a
// null resets one, durations are strings like "80ms" or numbers of
// milliseconds. It is strict (see internal/strictyaml): an unknown field,
// a wrong type or a key given twice is an error, and every one is
// reported with its line, column and field.
func (c *Config) UnmarshalJSON(data []byte) error {
	doc, err := strictyaml.ParseJSON("config", data, strictyaml.Options{MaxBytes: 1 << 20})
	if err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	l, f := c.Limits, c.Faults
	aux := configJSON{configPlain(*c),
		limitsJSON{limitsPlain(l), jsonDuration(l.WindowLength)},
		faultsJSON{faultsPlain(f), jsonDuration(f.Latency), jsonDuration(f.Jitter), jsonDuration(f.SlowFirstByte), jsonDuration(f.EventDelay)}}
	if err := doc.Decode(&aux); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	*c = Config(aux.configPlain)
	c.Limits = Limits(aux.Limits.limitsPlain)
	c.Limits.WindowLength = time.Duration(aux.Limits.WindowLength)
	c.Faults = Faults(aux.Faults.faultsPlain)
	c.Faults.Latency, c.Faults.Jitter = time.Duration(aux.Faults.Latency), time.Duration(aux.Faults.Jitter)
	c.Faults.SlowFirstByte, c.Faults.EventDelay = time.Duration(aux.Faults.SlowFirstByte), time.Duration(aux.Faults.EventDelay)
	return nil
}

// jsonDuration is a time.Duration written as "1.5s"; it also reads a number
// of milliseconds.
type jsonDuration time.Duration

func (d jsonDuration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

func (d *jsonDuration) UnmarshalText(b []byte) error {
	if p, err := time.ParseDuration(string(b)); err == nil {
		*d = jsonDuration(p)
		return nil
	}
	ms, err := strconv.ParseFloat(string(b), 64)
	if err != nil || math.IsInf(ms, 0) || math.IsNaN(ms) || math.Abs(ms) > float64(math.MaxInt64/int64(time.Millisecond)) {
		return fmt.Errorf("%q is not a duration: want a string like \"80ms\" or a number of milliseconds", b)
	}
	*d = jsonDuration(ms * float64(time.Millisecond))
	return nil
}

// ParseStatuses reads a comma-separated list of 5xx statuses (for
// Faults.ErrorStatuses); empty entries are skipped.
func ParseStatuses(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 500 || n > 599 {
			return nil, fmt.Errorf("%q is not a 5xx status", f)
		}
		out = append(out, n)
	}
	return out, nil
}
