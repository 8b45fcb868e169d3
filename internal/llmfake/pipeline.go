package llmfake

import (
	"errors"
	"hash/fnv"
	"io"
	"math"
	"net"
	"net/http"
	"strconv"
	"time"
)

// maxBody is the largest request body accepted (Anthropic's 32 MB).
const maxBody = 32 << 20

// exchange is one request to a model endpoint on its way through the
// pipeline (see the package doc).
type exchange struct {
	edge  bool // answered by an edge fault, in front of the API
	s     *Server
	w     http.ResponseWriter
	r     *http.Request
	cfg   *Config
	d     dialect
	ep    endpoint
	model string // from the path
	key   string
	reqID string
	start time.Time
	c     *convo

	rl       rateHeaders
	status   int
	finished bool
	entered  bool // holds a concurrency slot
	admitted bool
	outcome  outcome
	rep      *reply
}

type outcome int

const (
	outNormal outcome = iota
	outReset
	outCut
	outStreamError
	outGone // the client went away
)

func (o outcome) String() string {
	switch o {
	case outReset:
		return "reset"
	case outCut:
		return "cut"
	case outStreamError:
		return "stream_error"
	case outGone:
		return "client_gone"
	default:
		return "normal"
	}
}

// rateHeaders is a key's rate-limit state to report in headers.
type rateHeaders struct {
	set    bool
	now    time.Time
	scaled bool
	has    [numDims]bool
	st     [numDims]LimitState
	tok    dim
	hasTok bool
}

// plan is every random draw of one request, made at once in a fixed order.
type plan struct {
	pre     int // 0 none, 1 reset, 2 error, 3 empty 502
	status  int
	stream  int // 0 none, 1 cut, 2 in-stream error
	after   float64
	latency time.Duration
	slow    time.Duration
	z       float64 // standard normal, for the output length
}

func (x *exchange) newRequestID() {
	switch x.d {
	case dAnthropic:
		x.reqID = x.s.ids.next("req_01")
	case dOpenAI:
		x.reqID = x.s.ids.nextN("req_", 32)
	}
}

// serve runs a routed request through the pipeline.
func (x *exchange) serve() {
	body, err := io.ReadAll(http.MaxBytesReader(x.w, x.r.Body, maxBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			x.reject(&failure{status: http.StatusRequestEntityTooLarge, msg: "Request exceeds the maximum allowed number of bytes."})
			return
		}
		x.reject(&failure{status: http.StatusBadRequest, msg: "cannot read request body: " + err.Error()})
		return
	}
	switch x.ep {
	case epAnthropicModels, epOpenAIModels, epGeminiModels, epOllamaTags, epOllamaVersion:
		x.listModels()
		return
	}
	var perr error
	switch x.ep {
	case epMessages, epCountTokens:
		x.c, perr = parseAnthropic(body, x.ep == epCountTokens)
	case epChat:
		x.c, perr = parseChat(body, x.model)
	case epResponses:
		x.c, perr = parseResponses(body, x.model)
	case epEmbeddings:
		x.c, perr = parseEmbeddings(body, x.model)
	case epGenerate, epStreamGenerate, epGeminiCount:
		x.c, perr = parseGemini(body, x.model, x.ep == epStreamGenerate)
	case epOllamaChat, epOllamaGenerate:
		x.c, perr = parseOllama(body, x.ep == epOllamaGenerate)
	}
	if perr != nil {
		x.reject(&failure{status: http.StatusBadRequest, msg: perr.Error()})
		return
	}
	switch x.ep {
	case epCountTokens, epGeminiCount:
		x.countTokens()
		return
	}
	x.generate()
}

// generate admits the request, applies the faults and writes the reply.
func (x *exchange) generate() {
	s := x.s
	var p plan
	drawn := false
	if x.cfg.Faults.Edge {
		// Edge faults happen in front of the API (a load balancer's 502, a
		// reset connection): before the concurrency cap and the rate
		// limiter, so they are charged to no limit and carry no rate-limit
		// headers.
		p, drawn = s.draw(x.cfg), true
		if p.pre != 0 {
			if !x.sleep(p.latency) {
				x.outcome = outGone
				x.finish()
				return
			}
			x.edge = true
			x.preFault(p)
			return
		}
	}
	if !s.enter(x) {
		st := http.StatusServiceUnavailable
		if x.d == dAnthropic {
			st = 529
		}
		x.reject(&failure{status: st, msg: defaultMessage(x.d, st)})
		return
	}
	defer s.leave(x)
	if f := s.admit(x); f != nil {
		x.reject(f)
		return
	}
	if !drawn {
		p = s.draw(x.cfg)
	}
	if !x.sleep(p.latency) {
		x.outcome = outGone
		x.finish()
		return
	}
	if p.pre != 0 {
		x.preFault(p)
		return
	}
	x.rep = x.compose(p.z)
	s.chargeOutput(x, x.rep.out)
	x.setHeaders()
	defer x.finish()
	if x.ep == epEmbeddings {
		x.writeEmbeddings(&p)
		return
	}
	switch x.d {
	case dAnthropic:
		x.writeAnthropic(&p)
	case dOpenAI:
		if x.ep == epResponses {
			x.writeResponses(&p)
		} else {
			x.writeChat(&p)
		}
	case dGemini:
		x.writeGemini(&p)
	case dOllama:
		x.writeOllama(&p)
	}
}

// compose builds the reply: a script turn if one applies, else default text.
func (x *exchange) compose(z float64) *reply {
	c := x.c
	rep := &reply{in: c.inputTokens(), turn: -1}
	if x.ep == epEmbeddings {
		return rep
	}
	if st, ok := x.s.sess.pick(x.cfg.Scripts, c, x.key, x.r.Header); ok {
		prefix := "call_"
		if x.d == dAnthropic {
			prefix = "toolu_01"
		}
		rep.script, rep.turn = st.sc.name, st.turn
		if st.resp == nil {
			rep.text = st.sc.final
		} else {
			rep.text, rep.calls = st.resp.materialize(c, &x.s.ids, prefix)
		}
		rep.out = scriptedOut(rep.text, rep.calls)
		if len(rep.calls) > 0 {
			rep.stop = stopTool
		}
		return rep
	}
	if c.jsonMode {
		rep.text = string(schemaExample(c.jsonSchema))
		rep.out = tokensOf(len(rep.text))
		return rep
	}
	n, capped := outputTokens(&x.cfg.Output, z, c.maxTokens)
	rep.text, rep.out = x.s.words.text(n), n
	if capped {
		rep.stop = stopMax
	}
	return rep
}

// enter takes a concurrency slot; false when the cap is reached.
func (s *Server) enter(x *exchange) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if limit := x.cfg.MaxConcurrent; limit > 0 && s.inFlight >= limit {
		return false
	}
	s.inFlight++
	s.maxInFlight = max(s.maxInFlight, s.inFlight)
	ks := s.key(x.key)
	ks.inFlight++
	ks.maxInFlight = max(ks.maxInFlight, ks.inFlight)
	x.entered = true
	return true
}

func (s *Server) leave(x *exchange) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inFlight--
	if ks := s.keys[x.key]; ks != nil && ks.inFlight > 0 {
		ks.inFlight--
	}
}

// admit runs the rate limiter; it returns the 429 to send, or nil.
func (s *Server) admit(x *exchange) *failure {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := newRateView(x.cfg, s.epoch, s.now())
	ks := s.key(x.key)
	in := int64(x.c.inputTokens())
	res := ks.admit(&v, in)
	x.rl = ks.headers(&v, x.cfg.scaled())
	if !res.ok {
		f := &failure{status: http.StatusTooManyRequests, dim: res.dim, limit: v.limit[res.dim], wait: res.wait, model: x.c.model}
		f.msg = rateLimitMessage(x.d, f)
		return f
	}
	x.admitted = true
	ks.c.in += in
	s.total.in += in
	return nil
}

func (s *Server) chargeOutput(x *exchange, out int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := newRateView(x.cfg, s.epoch, s.now())
	ks := s.key(x.key)
	ks.chargeOutput(&v, int64(out))
	ks.c.out += int64(out)
	s.total.out += int64(out)
}

// peekHeaders fills x.rl for a response that never reached the limiter.
func (s *Server) peekHeaders(x *exchange) {
	if x.rl.set || x.d == dGemini || x.d == dOllama {
		return
	}
	lim := x.cfg.Limits
	if lim.RPM == 0 && lim.TPM == 0 && lim.ITPM == 0 && lim.OTPM == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	v := newRateView(x.cfg, s.epoch, s.now())
	x.rl = s.key(x.key).headers(&v, x.cfg.scaled())
}

func (k *keyState) headers(v *rateView, scaled bool) rateHeaders {
	if !v.limited() {
		return rateHeaders{}
	}
	h := rateHeaders{set: true, now: v.now, scaled: scaled}
	for d := range numDims {
		if v.limit[d] != 0 {
			h.has[d], h.st[d] = true, k.state(v, d)
		}
	}
	h.tok, h.hasTok = k.tokenDim(v)
	return h
}

// preFault answers with the pre-response fault the plan drew.
func (x *exchange) preFault(p plan) {
	switch p.pre {
	case 1:
		x.reset()
	case 2:
		x.reject(&failure{status: p.status, msg: defaultMessage(x.d, p.status)})
	case 3:
		x.setHeaders()
		x.w.Header().Set("Content-Length", "0")
		x.status = http.StatusBadGateway
		x.w.WriteHeader(http.StatusBadGateway)
		x.finish()
	}
}

// draw makes the request's random decisions.
func (s *Server) draw(cfg *Config) plan {
	s.rngMu.Lock()
	u := [7]float64{}
	for i := range u {
		u[i] = s.rng.Float64()
	}
	z := s.rng.NormFloat64()
	s.rngMu.Unlock()

	f := &cfg.Faults
	p := plan{z: z, after: u[6]}
	switch {
	case u[0] < f.ResetRate:
		p.pre = 1
	case u[0] < f.ResetRate+f.ErrorRate:
		p.pre = 2
		sts := cfg.errorStatuses()
		p.status = sts[min(int(u[1]*float64(len(sts))), len(sts)-1)]
	case u[0] < f.ResetRate+f.ErrorRate+f.EmptyBodyRate:
		p.pre = 3
	}
	switch {
	case u[2] < f.CutRate:
		p.stream = 1
	case u[2] < f.CutRate+f.StreamErrorRate:
		p.stream = 2
	}
	lat := float64(f.Latency) + u[3]*float64(f.Jitter)
	if u[4] < f.SpikeRate {
		m := f.SpikeMult
		if m == 0 {
			m = defaultSpikeMult
		}
		lat *= m
	}
	p.latency = cfg.scale(time.Duration(lat))
	if u[5] < f.SlowFirstByteRate {
		p.slow = cfg.scale(f.SlowFirstByte)
	}
	return p
}

// sleep waits d unless the client goes away first.
func (x *exchange) sleep(d time.Duration) bool {
	if d <= 0 {
		return x.r.Context().Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-x.r.Context().Done():
		return false
	}
}

// reset closes the connection with a TCP RST before any response.
func (x *exchange) reset() {
	x.outcome = outReset
	x.finish()
	conn, _, err := http.NewResponseController(x.w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler) // HTTP/2 or a recorder: abort the stream
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	conn.Close()
}

// reject answers with an error before any body was written.
func (x *exchange) reject(f *failure) {
	if !x.edge {
		// The API's answers carry its rate-limit state; a load balancer's
		// do not.
		x.s.peekHeaders(x)
	}
	x.setHeaders()
	if f.status == http.StatusTooManyRequests {
		h := x.w.Header()
		if x.d == dAnthropic || x.d == dOpenAI {
			secs := int(math.Ceil(f.wait.Seconds()))
			h.Set("Retry-After", strconv.Itoa(max(secs, 1)))
			if x.cfg.scaled() {
				h.Set("Retry-After-Ms", strconv.FormatInt(max(f.wait.Milliseconds(), 1), 10))
			}
		}
	}
	x.status = f.status
	writeFailure(x.w, x.d, f, x.reqID)
	x.finish()
}

// setHeaders writes the request id and rate-limit headers.
func (x *exchange) setHeaders() {
	h := x.w.Header()
	switch x.d {
	case dAnthropic:
		if x.reqID != "" {
			h.Set("Request-Id", x.reqID)
		}
	case dOpenAI:
		if x.reqID != "" {
			h.Set("X-Request-Id", x.reqID)
		}
	}
	rl := &x.rl
	if !rl.set {
		return
	}
	switch x.d {
	case dAnthropic:
		if rl.has[dimRequests] {
			setAnthropicFamily(h, "requests", rl.st[dimRequests], rl.scaled)
		}
		if rl.has[dimInput] {
			setAnthropicFamily(h, "input-tokens", rl.st[dimInput], rl.scaled)
		}
		if rl.has[dimOutput] {
			setAnthropicFamily(h, "output-tokens", rl.st[dimOutput], rl.scaled)
		}
		if rl.hasTok {
			setAnthropicFamily(h, "tokens", rl.st[rl.tok], rl.scaled)
		}
	case dOpenAI:
		if rl.has[dimRequests] {
			setOpenAIFamily(h, "requests", rl.st[dimRequests], rl.now)
		}
		if rl.hasTok {
			setOpenAIFamily(h, "tokens", rl.st[rl.tok], rl.now)
		}
	}
}

func setAnthropicFamily(h http.Header, name string, st LimitState, scaled bool) {
	p := "Anthropic-Ratelimit-" + name + "-"
	h.Set(p+"Limit", strconv.FormatInt(st.Limit, 10))
	h.Set(p+"Remaining", strconv.FormatInt(st.Remaining, 10))
	reset := st.Reset.UTC()
	if scaled {
		// Milliseconds, rounded up like the whole seconds below: a client
		// that waits until the stated reset must find the window open.
		if reset.Nanosecond()%int(time.Millisecond) != 0 {
			reset = reset.Truncate(time.Millisecond).Add(time.Millisecond)
		}
		h.Set(p+"Reset", reset.Format("2006-01-02T15:04:05.000Z07:00"))
	} else {
		if reset.Nanosecond() != 0 {
			reset = reset.Truncate(time.Second).Add(time.Second)
		}
		h.Set(p+"Reset", reset.Format(time.RFC3339))
	}
}

func setOpenAIFamily(h http.Header, name string, st LimitState, now time.Time) {
	h.Set("X-Ratelimit-Limit-"+name, strconv.FormatInt(st.Limit, 10))
	h.Set("X-Ratelimit-Remaining-"+name, strconv.FormatInt(st.Remaining, 10))
	d := max(st.Reset.Sub(now), 0).Round(time.Millisecond)
	h.Set("X-Ratelimit-Reset-"+name, d.String())
}

// finish records the request in the stats and the log; it runs once.
func (x *exchange) finish() {
	if x.finished {
		return
	}
	x.finished = true
	s := x.s
	s.mu.Lock()
	for _, c := range []*counters{&s.total, &s.key(x.key).c} {
		c.requests++
		switch x.outcome {
		case outReset:
			c.resets++
		case outCut:
			c.cuts++
		case outStreamError:
			c.streamErrors++
		}
		if x.outcome != outReset && x.outcome != outGone && x.status != 0 {
			c.status(x.status)
		}
		switch {
		case x.status == http.StatusTooManyRequests:
			c.rateLimited++
		case !x.entered && (x.status == 529 || x.status == http.StatusServiceUnavailable):
			c.overloaded++
		}
	}
	s.mu.Unlock()
	if s.log.Enabled(x.r.Context(), -4) {
		attrs := []any{"method", x.r.Method, "path", x.r.URL.Path, "dialect", x.d.String(), "status", x.status,
			"outcome", x.outcome.String(), "key_id", keyID(x.key), "duration_ms", float64(s.now().Sub(x.start).Microseconds()) / 1000}
		if x.rep != nil {
			attrs = append(attrs, "tokens_in", x.rep.in, "tokens_out", x.rep.out)
			if x.rep.script != "" {
				attrs = append(attrs, "script", x.rep.script, "turn", x.rep.turn)
			}
		}
		s.log.Debug("request", attrs...)
	}
}

// keyID is a short, stable name for an API key in logs.
func keyID(key string) string {
	if key == "" {
		return ""
	}
	h := fnv.New32a()
	h.Write([]byte(key))
	return strconv.FormatUint(uint64(h.Sum32()), 16)
}
