package bench

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apiary-dev/apiary/internal/sse"
)

// ZooModel is one upstream of the zoo: an independent model of a rate-limited
// API, written from the providers' documented behaviour and not from the
// gateway's assumptions. Every field is drawn from the seed (see NewZooModel);
// none of it is told to the gateway.
type ZooModel struct {
	Seed   uint64 `json:"seed"`
	Format string `json:"format"` // anthropic or openai
	// Kind is window (fixed windows of Period) or bucket (a continuous
	// bucket that refills Limit per Period).
	Kind   string        `json:"kind"`
	Period time.Duration `json:"period_ns"`
	// Lead (fixed windows) is how long the window the agents start in
	// has been open when they start, so that a seed's first window is as
	// long on every run; Phase is where that puts the windows past the
	// Unix epoch, set as the run starts.
	Lead  time.Duration `json:"lead_ns"`
	Phase time.Duration `json:"phase_ns"`
	Limit int64         `json:"limit"`
	// TokenLimit is a per-period token limit, reported but rarely binding.
	TokenLimit int64 `json:"token_limit"`
	// Resets: truncated, ceil (rounded up) or millis for Anthropic's RFC
	// 3339 times; seconds (a whole-second delay, rounded up, as "6m0s") or
	// millis ("1.234s") for OpenAI's delays.
	Resets string `json:"resets"`
	// RetryAfter on 429s: seconds (rounded up), http-date or ms
	// (retry-after-ms alongside whole seconds).
	RetryAfter string `json:"retry_after"`
	// Cap answers CapStatus (529 or 503) beyond Cap requests in flight (0:
	// none).
	Cap       int `json:"cap"`
	CapStatus int `json:"cap_status"`
	// ErrRate is edge 5xx answers (uncharged), ResetRate TCP resets before
	// any answer, CutRate streams cut mid-way (Anthropic only: a cut
	// OpenAI stream cannot be resumed by anyone).
	ErrRate   float64       `json:"err_rate"`
	ResetRate float64       `json:"reset_rate"`
	CutRate   float64       `json:"cut_rate"`
	Latency   time.Duration `json:"latency_ns"`
	Jitter    time.Duration `json:"jitter_ns"`
}

// NewZooModel draws an upstream from seed: windows from 1 s to 120 s or a
// bucket with a period that is not a minute, one of the reset and
// retry-after styles of its format, and some faults.
func NewZooModel(seed uint64) ZooModel {
	r := rand.New(rand.NewPCG(seed, 0x200))
	m := ZooModel{Seed: seed}
	m.Format = []string{"anthropic", "openai"}[r.IntN(2)]
	if r.IntN(4) == 0 {
		m.Kind = "bucket"
		m.Period = time.Duration(5+r.IntN(86)) * time.Second // 5–90 s, rarely 60
		if m.Period == time.Minute {
			m.Period += 7 * time.Second
		}
	} else {
		m.Kind = "window"
		periods := []time.Duration{time.Second, 2 * time.Second, 3 * time.Second, 5 * time.Second, 7500 * time.Millisecond,
			10 * time.Second, 15 * time.Second, 20 * time.Second, 30 * time.Second, 45 * time.Second, time.Minute, 90 * time.Second, 2 * time.Minute}
		m.Period = periods[r.IntN(len(periods))]
	}
	m.Lead = time.Duration(r.Int64N(int64(m.Period)))
	m.Limit = int64(3 + r.IntN(28))
	m.TokenLimit = m.Limit * int64(2000+r.IntN(4000))
	if m.Format == "anthropic" {
		m.Resets = []string{"truncated", "ceil", "millis"}[r.IntN(3)]
		m.CapStatus = 529
	} else {
		// Go-style delays carry milliseconds below a second; whole seconds
		// ("6m0s") only for windows of ten seconds or more, where a delay
		// is rarely below one.
		m.Resets = []string{"seconds", "millis"}[r.IntN(2)]
		if m.Period < 10*time.Second {
			m.Resets = "millis"
		}
		m.CapStatus = 503
	}
	m.RetryAfter = []string{"seconds", "http-date", "ms"}[r.IntN(3)]
	if r.IntN(3) == 0 {
		m.Cap = 2 + r.IntN(5)
	}
	m.ErrRate = []float64{0, 0, 0.02, 0.05}[r.IntN(4)]
	m.ResetRate = []float64{0, 0, 0.02, 0.04}[r.IntN(4)]
	if m.Format == "anthropic" {
		m.CutRate = []float64{0, 0, 0.03}[r.IntN(3)]
	}
	m.Latency = time.Duration(40+r.IntN(160)) * time.Millisecond
	m.Jitter = m.Latency / 4
	return m
}

func (m ZooModel) String() string {
	return fmt.Sprintf("%s %s %v limit %d, resets %s, retry-after %s, cap %d, 5xx %.0f%%, resets %.0f%%, cuts %.0f%%",
		m.Format, m.Kind, m.Period, m.Limit, m.Resets, m.RetryAfter, m.Cap, 100*m.ErrRate, 100*m.ResetRate, 100*m.CutRate)
}

// ZooStats are an upstream's counts.
type ZooStats struct {
	Requests    int64 `json:"requests"`     // every request that arrived
	Admitted    int64 `json:"admitted"`     // charged to the rate limit
	RateLimited int64 `json:"rate_limited"` // 429s
	CapRefused  int64 `json:"cap_refused"`
	Errors5xx   int64 `json:"errors_5xx"`
	Resets      int64 `json:"resets"`
	Cuts        int64 `json:"cuts"`
	// FirstAt is when the first request arrived.
	FirstAt time.Time `json:"first_at"`
}

// zooUpstream serves a ZooModel.
type zooUpstream struct {
	m ZooModel

	mu       sync.Mutex
	rnd      *rand.Rand
	counts   map[int64]int64 // window → admitted
	level    float64         // bucket
	levelAt  time.Time
	tokens   map[int64]int64
	inflight int
	st       ZooStats
}

func newZooUpstream(m ZooModel) *zooUpstream {
	return &zooUpstream{m: m, rnd: rand.New(rand.NewPCG(m.Seed, 0x201)), counts: map[int64]int64{}, tokens: map[int64]int64{}, level: float64(m.Limit)}
}

// anchor places the windows so that the one holding start has been open
// for the model's Lead.
func (u *zooUpstream) anchor(start time.Time) {
	u.mu.Lock()
	defer u.mu.Unlock()
	p := int64(u.m.Period)
	u.m.Phase = time.Duration(((start.UnixNano()-int64(u.m.Lead))%p + p) % p)
}

func (u *zooUpstream) stats() ZooStats {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.st
}

// windowCounts are the requests admitted per window, from the window
// holding start.
func (u *zooUpstream) windowCounts(start time.Time) []int64 {
	u.mu.Lock()
	defer u.mu.Unlock()
	return perWindow(u.window(start), u.counts)
}

func (u *zooUpstream) window(t time.Time) int64 {
	return int64(math.Floor(float64(t.UnixNano()-int64(u.m.Phase)) / float64(u.m.Period)))
}

func (u *zooUpstream) windowEnd(w int64) time.Time {
	return time.Unix(0, (w+1)*int64(u.m.Period)+int64(u.m.Phase))
}

// admit charges a request arriving at now, or says when it could go.
func (u *zooUpstream) admit(now time.Time, tokens int64) (ok bool, retry time.Duration) {
	if u.m.Kind == "bucket" {
		rate := float64(u.m.Limit) / float64(u.m.Period)
		u.level = min(float64(u.m.Limit), u.level+rate*float64(now.Sub(u.levelAt)))
		u.levelAt = now
		if u.level < 1 {
			return false, time.Duration((1 - u.level) / rate)
		}
		u.level--
		return true, 0
	}
	w := u.window(now)
	if u.counts[w] >= u.m.Limit {
		return false, u.windowEnd(w).Sub(now)
	}
	u.counts[w]++
	u.tokens[w] += tokens
	return true, 0
}

// figures are the rate-limit headers' values at now for a request counted
// in the window holding at.
func (u *zooUpstream) figures(at, now time.Time) (remaining int64, reset time.Time, tokRemaining int64) {
	if u.m.Kind == "bucket" {
		rate := float64(u.m.Limit) / float64(u.m.Period)
		level := min(float64(u.m.Limit), u.level+rate*float64(now.Sub(u.levelAt)))
		return int64(level), now.Add(time.Duration((float64(u.m.Limit) - level) / rate)), u.m.TokenLimit
	}
	w := u.window(at)
	return u.m.Limit - u.counts[w], u.windowEnd(w), u.m.TokenLimit - u.tokens[w]
}

func (u *zooUpstream) setRateHeaders(h http.Header, remaining int64, reset time.Time, tokRemaining int64, now time.Time) {
	if u.m.Format == "anthropic" {
		var v string
		switch u.m.Resets {
		case "truncated":
			v = reset.UTC().Truncate(time.Second).Format(time.RFC3339)
		case "ceil":
			v = reset.UTC().Add(time.Second - 1).Truncate(time.Second).Format(time.RFC3339)
		default:
			v = reset.UTC().Format("2006-01-02T15:04:05.000Z07:00")
		}
		h.Set("Anthropic-Ratelimit-Requests-Limit", strconv.FormatInt(u.m.Limit, 10))
		h.Set("Anthropic-Ratelimit-Requests-Remaining", strconv.FormatInt(max(remaining, 0), 10))
		h.Set("Anthropic-Ratelimit-Requests-Reset", v)
		// Token figures are rounded to the thousand, as Anthropic's are.
		h.Set("Anthropic-Ratelimit-Tokens-Limit", strconv.FormatInt(u.m.TokenLimit, 10))
		h.Set("Anthropic-Ratelimit-Tokens-Remaining", strconv.FormatInt(max(tokRemaining, 0)/1000*1000, 10))
		h.Set("Anthropic-Ratelimit-Tokens-Reset", v)
		return
	}
	d := max(reset.Sub(now), 0)
	var v string
	if u.m.Resets == "seconds" {
		v = ((d + time.Second - 1) / time.Second * time.Second).String()
	} else {
		v = d.Round(time.Millisecond).String()
	}
	if d == 0 {
		v = "0s"
	}
	h.Set("X-Ratelimit-Limit-Requests", strconv.FormatInt(u.m.Limit, 10))
	h.Set("X-Ratelimit-Remaining-Requests", strconv.FormatInt(max(remaining, 0), 10))
	h.Set("X-Ratelimit-Reset-Requests", v)
	h.Set("X-Ratelimit-Limit-Tokens", strconv.FormatInt(u.m.TokenLimit, 10))
	h.Set("X-Ratelimit-Remaining-Tokens", strconv.FormatInt(max(tokRemaining, 0), 10))
	h.Set("X-Ratelimit-Reset-Tokens", v)
}

func (u *zooUpstream) setRetryAfter(h http.Header, d time.Duration, now time.Time) {
	secs := int64((d + time.Second - 1) / time.Second)
	switch u.m.RetryAfter {
	case "http-date":
		h.Set("Retry-After", now.Add(d).Add(time.Second-1).UTC().Format(http.TimeFormat))
	case "ms":
		h.Set("Retry-After", strconv.FormatInt(secs, 10))
		h.Set("Retry-After-Ms", strconv.FormatInt(d.Milliseconds()+1, 10))
	default:
		h.Set("Retry-After", strconv.FormatInt(secs, 10))
	}
}

func (u *zooUpstream) errorBody(status int, typ, msg string) []byte {
	if u.m.Format == "anthropic" {
		b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]string{"type": typ, "message": msg}})
		return b
	}
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"type": typ, "message": msg, "code": typ}})
	return b
}

func (u *zooUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Stream    bool `json:"stream"`
		MaxTokens int  `json:"max_tokens"`
		Messages  []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, "bad json", http.StatusBadRequest)
		return
	}
	inTok := int64(10)
	for _, m := range req.Messages {
		inTok += int64(len(m.Content) / 4)
	}
	now := time.Now()
	u.mu.Lock()
	u.st.Requests++
	if u.st.FirstAt.IsZero() {
		u.st.FirstAt = now
	}
	u.inflight++
	defer func() {
		u.mu.Lock()
		u.inflight--
		u.mu.Unlock()
	}()
	capped := u.m.Cap > 0 && u.inflight > u.m.Cap
	fault := u.rnd.Float64()
	lat := u.m.Latency + time.Duration((u.rnd.Float64()*2-1)*float64(u.m.Jitter))
	outTok := int64(50 + u.rnd.IntN(200))
	cut := req.Stream && u.rnd.Float64() < u.m.CutRate
	switch {
	case capped:
		u.st.CapRefused++
		u.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(u.m.CapStatus)
		_, _ = w.Write(u.errorBody(u.m.CapStatus, "overloaded_error", "Overloaded"))
		return
	case fault < u.m.ResetRate:
		u.st.Resets++
		u.mu.Unlock()
		resetConn(w)
		return
	case fault < u.m.ResetRate+u.m.ErrRate:
		u.st.Errors5xx++
		u.mu.Unlock()
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusBadGateway)
		_, _ = w.Write([]byte("<html><body>502 Bad Gateway</body></html>"))
		return
	}
	ok, retry := u.admit(now, inTok+int64(req.MaxTokens))
	if !ok {
		u.st.RateLimited++
		rem, reset, tok := u.figures(now, now)
		u.mu.Unlock()
		u.setRateHeaders(w.Header(), rem, reset, tok, now)
		u.setRetryAfter(w.Header(), retry, now)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = w.Write(u.errorBody(429, "rate_limit_error", "Rate limit reached for requests"))
		return
	}
	u.st.Admitted++
	if cut {
		u.st.Cuts++
	}
	u.mu.Unlock()
	time.Sleep(max(lat, time.Millisecond))
	done := time.Now()
	u.mu.Lock()
	rem, reset, tok := u.figures(now, done)
	u.mu.Unlock()
	u.setRateHeaders(w.Header(), rem, reset, tok, done)
	u.respond(w, req.Stream, inTok, outTok, cut)
}

// resetConn closes the client's connection with a TCP reset, before any
// answer.
func resetConn(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler)
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		return
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

func (u *zooUpstream) respond(w http.ResponseWriter, stream bool, in, out int64, cut bool) {
	text := strings.Repeat("ok ", int(out))
	h := w.Header()
	if !stream {
		h.Set("Content-Type", "application/json")
		var b []byte
		if u.m.Format == "anthropic" {
			b, _ = json.Marshal(map[string]any{"id": "msg_zoo", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
				"content": []map[string]string{{"type": "text", "text": text}}, "stop_reason": "end_turn",
				"usage": map[string]int64{"input_tokens": in, "output_tokens": out}})
		} else {
			b, _ = json.Marshal(map[string]any{"id": "chatcmpl-zoo", "object": "chat.completion", "model": "gpt-4o",
				"choices": []map[string]any{{"index": 0, "message": map[string]string{"role": "assistant", "content": text}, "finish_reason": "stop"}},
				"usage":   map[string]int64{"prompt_tokens": in, "completion_tokens": out, "total_tokens": in + out}})
		}
		_, _ = w.Write(b)
		return
	}
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	sw := sse.NewWriter(w) // flushes after every event
	emit := func(event string, v any) {
		b, _ := json.Marshal(v)
		_ = sw.Event(event, b)
	}
	chunks := []string{text[:len(text)/3], text[len(text)/3 : 2*len(text)/3], text[2*len(text)/3:]}
	if u.m.Format == "anthropic" {
		emit("message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": "msg_zoo", "type": "message", "role": "assistant",
			"model": "claude-sonnet-4-5", "content": []any{}, "usage": map[string]int64{"input_tokens": in, "output_tokens": 1}}})
		emit("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]string{"type": "text", "text": ""}})
		for i, c := range chunks {
			if cut && i == 1 {
				panic(http.ErrAbortHandler) // the connection breaks mid-stream
			}
			emit("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]string{"type": "text_delta", "text": c}})
			time.Sleep(5 * time.Millisecond)
		}
		emit("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
		emit("message_delta", map[string]any{"type": "message_delta", "delta": map[string]string{"stop_reason": "end_turn"}, "usage": map[string]int64{"output_tokens": out}})
		emit("message_stop", map[string]any{"type": "message_stop"})
		return
	}
	for _, c := range chunks {
		emit("", map[string]any{"id": "chatcmpl-zoo", "object": "chat.completion.chunk", "model": "gpt-4o",
			"choices": []map[string]any{{"index": 0, "delta": map[string]string{"content": c}, "finish_reason": nil}}})
		time.Sleep(5 * time.Millisecond)
	}
	emit("", map[string]any{"id": "chatcmpl-zoo", "object": "chat.completion.chunk", "model": "gpt-4o",
		"choices": []map[string]any{{"index": 0, "delta": map[string]string{}, "finish_reason": "stop"}}})
	emit("", map[string]any{"id": "chatcmpl-zoo", "object": "chat.completion.chunk", "model": "gpt-4o", "choices": []any{},
		"usage": map[string]int64{"prompt_tokens": in, "completion_tokens": out, "total_tokens": in + out}})
	_ = sw.Event("", []byte("[DONE]"))
}
