package llmfake

import (
	"encoding/json"
	"hash/fnv"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// maxSessions bounds the session table; past it, old sessions are dropped.
const maxSessions = 1 << 16

// sessions binds conversations to scripts and, in counter mode, tracks
// their position. Safe for concurrent use.
type sessions struct {
	mu     sync.Mutex
	owner  *Scripts // the Scripts the table belongs to
	m      map[string]*session
	rotate map[string]int // per candidate set: sessions bound so far
}

type session struct {
	sc   *script
	next int // counter mode: the next turn
}

func (ss *sessions) reset() {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.owner, ss.m, ss.rotate = nil, nil, nil
}

// step is one scripted answer.
type step struct {
	sc   *script
	turn int // index of the turn answered; len(turns) = the final text
	resp *response
}

// pick resolves the scripted answer to a request, or ok=false when no script
// applies and the default text answers.
func (ss *sessions) pick(scs *Scripts, c *convo, key string, h http.Header) (step, bool) {
	if scs == nil || len(scs.list) == 0 {
		return step{}, false
	}
	id := sessionID(scs.sessionKey, c, key, h)
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.owner != scs {
		ss.owner, ss.m, ss.rotate = scs, map[string]*session{}, map[string]int{}
	}
	sess := ss.m[id]
	if sess == nil {
		var cands []*script
		for _, sc := range scs.list {
			if sc.match.ok(c, key, h) && sc.match.wants(c) {
				cands = append(cands, sc)
			}
		}
		if len(cands) == 0 {
			return step{}, false
		}
		sig := names(cands)
		n := ss.rotate[sig]
		ss.rotate[sig] = n + 1
		if len(ss.m) >= maxSessions {
			for k := range ss.m {
				delete(ss.m, k)
				if len(ss.m) < maxSessions/2 {
					break
				}
			}
		}
		sess = &session{sc: cands[n%len(cands)]}
		ss.m[id] = sess
	}
	sc := sess.sc
	if !sc.match.wants(c) {
		return step{}, false // a side request inside the session
	}
	if scs.progress == ProgressCounter {
		st := sc.at(sess.next, c.results[len(c.results)-1])
		if st.resp != nil {
			sess.next = st.resp.next
		}
		return st, true
	}
	// History: replay the branches taken so far from the tool results in
	// the request, so a retried request gets the same turn.
	t := 0
	for j := 0; j < c.steps; j++ {
		st := sc.at(t, c.results[j])
		if st.resp == nil {
			return st, true
		}
		t = st.resp.next
	}
	return sc.at(t, c.results[c.steps]), true
}

// at answers turn t given the last tool result; a nil resp means the script
// is over (the final text).
func (sc *script) at(t int, tr toolResult) step {
	if t >= len(sc.turns) {
		return step{sc: sc, turn: len(sc.turns)}
	}
	tn := &sc.turns[t]
	for i := range tn.branches {
		if b := &tn.branches[i]; b.matches(tr) {
			return step{sc: sc, turn: t, resp: &b.resp}
		}
	}
	return step{sc: sc, turn: t, resp: &tn.resp}
}

func (b *branch) matches(tr toolResult) bool {
	if !tr.present {
		return false
	}
	if b.isError != nil && *b.isError != tr.isError {
		return false
	}
	if b.contains != "" && !strings.Contains(tr.content, b.contains) {
		return false
	}
	if b.re != nil && !b.re.MatchString(tr.content) {
		return false
	}
	return true
}

func (m *match) ok(c *convo, key string, h http.Header) bool {
	if m.apiKey != "" && m.apiKey != key {
		return false
	}
	for name, re := range m.headers {
		if !re.MatchString(h.Get(name)) {
			return false
		}
	}
	if m.model != nil && !m.model.MatchString(c.model) {
		return false
	}
	if m.system != "" && !strings.Contains(c.system, m.system) {
		return false
	}
	if m.systemRe != nil && !m.systemRe.MatchString(c.system) {
		return false
	}
	if m.user == "" && m.userRe == nil {
		return true
	}
	// Any user message may carry the prompt: Codex sends its
	// <environment_context> as a user message of its own before it.
	for _, u := range c.users {
		if (m.user == "" || strings.Contains(u, m.user)) && (m.userRe == nil || m.userRe.MatchString(u)) {
			return true
		}
	}
	return false
}

// wants reports whether the request belongs to a scripted conversation:
// by default only requests that carry tools do (agent CLIs' side requests —
// titles, summaries, quota probes — carry none).
func (m *match) wants(c *convo) bool { return m.anyRequest || c.hasTools }

// sessionID names the session a request belongs to. In session mode a
// conversation is the session header plus its first user message, so a
// subagent (same header, its own conversation) is a session of its own.
func sessionID(mode string, c *convo, key string, h http.Header) string {
	switch mode {
	case SessionByKey:
		return "k:" + key
	case SessionRoundRobin:
		return "c:" + fingerprint(c.system, c.firstUser)
	default:
		for _, name := range []string{"X-Claude-Code-Session-Id", "Session-Id"} {
			if id := h.Get(name); id != "" {
				return "s:" + id + ":" + fingerprint(c.firstUser)
			}
		}
		return "k:" + key
	}
}

func fingerprint(parts ...string) string {
	f := fnv.New64a()
	for _, p := range parts {
		f.Write([]byte(p))
		f.Write([]byte{0})
	}
	return strconv.FormatUint(f.Sum64(), 36)
}

func names(list []*script) string {
	var b strings.Builder
	for _, sc := range list {
		b.WriteString(sc.name)
		b.WriteByte(0)
	}
	return b.String()
}

// materialize fills placeholders and encodes the tool inputs; calls without
// a script id get a fresh one with the dialect's prefix.
func (r *response) materialize(c *convo, ids *idGen, prefix string) (string, []toolCall) {
	need := strings.Contains(r.text, "{{cwd}}")
	for _, cs := range r.calls {
		need = need || hasPlaceholder(cs.input)
	}
	cwd := ""
	if need {
		cwd = c.workingDir()
	}
	text := strings.ReplaceAll(r.text, "{{cwd}}", cwd)
	calls := make([]toolCall, len(r.calls))
	for i, cs := range r.calls {
		tc := toolCall{id: cs.id, name: cs.name, namespace: cs.namespace, custom: cs.custom}
		in := substitute(cs.input, cwd)
		if cs.custom {
			tc.input, _ = in.(string)
			in = map[string]any{"input": tc.input}
		}
		args, err := json.Marshal(in)
		if err != nil {
			args = []byte("{}")
		}
		tc.args = args
		if tc.namespace == "" && !cs.custom {
			tc.namespace, tc.name = c.namespaceOf(tc.name)
		}
		if tc.id == "" {
			tc.id = ids.next(prefix)
		}
		calls[i] = tc
	}
	return text, calls
}

func hasPlaceholder(v any) bool {
	switch v := v.(type) {
	case string:
		return strings.Contains(v, "{{cwd}}")
	case map[string]any:
		for _, x := range v {
			if hasPlaceholder(x) {
				return true
			}
		}
	case []any:
		for _, x := range v {
			if hasPlaceholder(x) {
				return true
			}
		}
	}
	return false
}

// substitute returns v with {{cwd}} replaced in every string, copying what
// it changes (script values are shared and read-only).
func substitute(v any, cwd string) any {
	switch v := v.(type) {
	case string:
		return strings.ReplaceAll(v, "{{cwd}}", cwd)
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[k] = substitute(x, cwd)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = substitute(x, cwd)
		}
		return out
	default:
		return v
	}
}
