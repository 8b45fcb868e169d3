package llmfake

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// ErrScript is wrapped by every *ScriptError.
var ErrScript = errors.New("llmfake: bad script")

// ScriptError locates one mistake in a script file.
type ScriptError struct {
	File  string // as given to ParseScripts
	Line  int    // 1-based; 0 if unknown
	Field string // e.g. scripts[0].turns[3].tool_calls[0].name
	Msg   string
}

func (e *ScriptError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		b.WriteString(":" + strconv.Itoa(e.Line))
	}
	b.WriteString(": ")
	if e.Field != "" {
		b.WriteString(e.Field + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

func (e *ScriptError) Unwrap() error { return ErrScript }

// Session keys: how requests are grouped into sessions.
const (
	// SessionByHeader keys a session by the client's session header —
	// X-Claude-Code-Session-Id (Claude Code) or Session-Id (Codex) — and
	// the conversation's first user message, so that a subagent sharing
	// the header has a session of its own, falling back to the API key.
	SessionByHeader = "session"
	// SessionByKey keys a session by the API key.
	SessionByKey = "key"
	// SessionRoundRobin keys a session by the conversation itself (its
	// system prompt and first user message); each new conversation takes
	// the next matching script in turn.
	SessionRoundRobin = "round-robin"
)

// Progress modes: how a session finds its current turn.
const (
	// ProgressHistory takes the turn from the request's history (the number
	// of assistant turns in it), so a retried request gets the same turn.
	ProgressHistory = "history"
	// ProgressCounter advances one turn per answered request of the
	// session, for clients that send no history.
	ProgressCounter = "counter"
)

// Scripts is a parsed script file: one or more named scripts and how
// requests map to them. Read-only after parsing; safe for concurrent use.
//
// A file holds one script (its keys at the top level) or several under
// scripts:. Every field is optional except turns:
//
//	session_key: session   # session (X-Claude-Code-Session-Id or Session-Id, else the API key) | key | round-robin
//	progress: history      # history (turn = assistant turns in the request) | counter (one turn per request)
//	scripts:
//	  - name: writer
//	    match:                       # all given conditions must hold
//	      api_key: k1
//	      headers: {X-Apiary-Agent: "^w[0-9]+$"}   # value regexps
//	      model: "^claude"                         # regexp
//	      system: "substring"                      # or system_regex:
//	      user: "substring"                        # any user message; or user_regex:
//	      any_request: false         # default: only requests that carry tools follow the script
//	    turns:
//	      - id: write                # optional, for goto
//	        text: "I'll write it."
//	        tool_calls:
//	          - name: Write          # any tool name, e.g. Bash, Edit, mcp__server__tool
//	            input: {file_path: "{{cwd}}/a.txt", content: "hi\n"}
//	          - name: exec           # a string input is a freeform (custom) tool call
//	            input: "tools.exec_command({cmd: 'ls'})"
//	          - name: rw_safe_write  # a function of a namespace (Responses API)
//	            namespace: mcp__apiary
//	            input: {path: a.txt, content: "hi"}
//	      - text: "Done?"            # the answer when no branch matches
//	        branches:                # tried in order on the request's last tool_result
//	          - when: {is_error: true, contains: "denied", regex: "..."}
//	            text: "Retrying."
//	            goto: write          # a turn id, or end
//	    final: "All done."           # after the last turn, with stop_reason end_turn
//
// {{cwd}} in text and tool inputs becomes the working directory the agent
// states in its prompt (see WorkingDirPattern). A string input makes a
// freeform tool call: a custom_tool_call on the Responses API, and
// {"input": "..."} as the arguments elsewhere. On the Responses API a name
// the request declares only inside a namespace (Codex groups an MCP
// server's tools as {"type":"namespace","name":"mcp__S","tools":[…]}) is
// answered as a call of that namespace: mcp__S__T, as Claude Code names the
// tool, becomes namespace mcp__S, name T, so one script serves both. A session is bound to the
// first script that matches its first conversational request; when several
// match, new sessions take them in turn. With progress: history a retried
// request gets the same turn again.
type Scripts struct {
	file       string
	sessionKey string
	progress   string
	list       []*script
}

// Names lists the scripts in file order.
func (s *Scripts) Names() []string {
	out := make([]string, len(s.list))
	for i, sc := range s.list {
		out[i] = sc.name
	}
	return out
}

type script struct {
	name  string
	match match
	turns []turn
	final string
}

type match struct {
	apiKey     string
	headers    map[string]*regexp.Regexp // canonical header name → value regex
	model      *regexp.Regexp
	system     string
	systemRe   *regexp.Regexp
	user       string
	userRe     *regexp.Regexp
	anyRequest bool // also requests that carry no tools
}

type turn struct {
	id       string
	resp     response
	branches []branch
}

type branch struct {
	contains string
	re       *regexp.Regexp
	isError  *bool
	resp     response
}

// response is what a turn (or one of its branches) answers.
type response struct {
	text   string
	calls  []callSpec
	gotoID string
	next   int // resolved: index of the next turn; len(turns) ends

	gotoNode *yaml.Node // parse time only
	gotoPath string
}

type callSpec struct {
	name      string
	id        string
	namespace string
	input     any  // decoded YAML: map[string]any, []any, string, numbers, bool, nil
	custom    bool // input is a string: a freeform tool call
}

// LoadScripts reads and parses a script file; errors name it as path.
func LoadScripts(path string) (*Scripts, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrScript, err)
	}
	return ParseScripts(path, data)
}

// ParseScripts parses a script file; name is used in error messages. Errors
// are *ScriptError values (joined when there are several), each naming the
// line and field.
func ParseScripts(name string, data []byte) (*Scripts, error) {
	p := &yparser{file: name}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
		return nil, &ScriptError{File: name, Msg: "empty script file"}
	} else if err != nil {
		line := 0
		msg := err.Error()
		if m := yamlLineRe.FindStringSubmatch(msg); m != nil {
			line, _ = strconv.Atoi(m[1])
			msg = m[2]
		}
		return nil, &ScriptError{File: name, Line: line, Msg: strings.TrimPrefix(msg, "yaml: ")}
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	s := p.parseFile(root)
	if len(p.errs) > 0 {
		return nil, errors.Join(p.errs...)
	}
	return s, nil
}

type yparser struct {
	file string
	errs []error
}

func (p *yparser) errf(n *yaml.Node, field, format string, args ...any) {
	if len(p.errs) >= 20 {
		return
	}
	line := 0
	if n != nil {
		line = n.Line
	}
	p.errs = append(p.errs, &ScriptError{File: p.file, Line: line, Field: field, Msg: fmt.Sprintf(format, args...)})
}

// fields walks a mapping, calling set for each known key; unknown and
// duplicate keys are errors. It returns the keys seen.
func (p *yparser) fields(n *yaml.Node, path string, known []string, set func(key string, v *yaml.Node, path string)) map[string]bool {
	seen := map[string]bool{}
	if n.Kind != yaml.MappingNode {
		p.errf(n, path, "must be a mapping")
		return seen
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		fp := join(path, k.Value)
		switch {
		case seen[k.Value]:
			p.errf(k, fp, "duplicate field")
		case !contains(known, k.Value):
			p.errf(k, fp, "unknown field (want one of %s)", strings.Join(known, ", "))
		default:
			seen[k.Value] = true
			set(k.Value, v, fp)
		}
	}
	return seen
}

func join(path, field string) string {
	if path == "" {
		return field
	}
	return path + "." + field
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (p *yparser) str(n *yaml.Node, path string) string {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		p.errf(n, path, "must be a string")
		return ""
	}
	return n.Value
}

func (p *yparser) boolean(n *yaml.Node, path string) bool {
	var b bool
	if n.Kind != yaml.ScalarNode || n.Decode(&b) != nil {
		p.errf(n, path, "must be true or false")
	}
	return b
}

func (p *yparser) regex(n *yaml.Node, path string) *regexp.Regexp {
	s := p.str(n, path)
	re, err := regexp.Compile(s)
	if err != nil {
		p.errf(n, path, "bad regular expression: %v", err)
		return nil
	}
	return re
}

func (p *yparser) seq(n *yaml.Node, path string) []*yaml.Node {
	if n.Kind != yaml.SequenceNode {
		p.errf(n, path, "must be a list")
		return nil
	}
	return n.Content
}

var scriptFields = []string{"name", "match", "turns", "final"}

func (p *yparser) parseFile(root *yaml.Node) *Scripts {
	s := &Scripts{file: p.file, sessionKey: SessionByHeader, progress: ProgressHistory}
	if root.Kind == 0 || (root.Kind == yaml.ScalarNode && root.Tag == "!!null") {
		p.errf(root, "", "empty script file")
		return s
	}
	var single *yaml.Node // top-level keys of a single-script file
	singleKeys := map[string]bool{}
	known := append([]string{"session_key", "progress", "scripts"}, scriptFields...)
	seen := p.fields(root, "", known, func(key string, v *yaml.Node, path string) {
		switch key {
		case "session_key":
			s.sessionKey = p.str(v, path)
			if !contains([]string{SessionByHeader, SessionByKey, SessionRoundRobin}, s.sessionKey) {
				p.errf(v, path, "%q is not session, key or round-robin", s.sessionKey)
			}
		case "progress":
			s.progress = p.str(v, path)
			if !contains([]string{ProgressHistory, ProgressCounter}, s.progress) {
				p.errf(v, path, "%q is not history or counter", s.progress)
			}
		case "scripts":
			for i, sn := range p.seq(v, path) {
				s.list = append(s.list, p.script(sn, fmt.Sprintf("scripts[%d]", i), i))
			}
		default:
			single = root
			singleKeys[key] = true
		}
	})
	switch {
	case seen["scripts"] && single != nil:
		p.errf(root, "scripts", "a file holds either scripts: or one script's turns:, not both")
	case single != nil:
		s.list = append(s.list, p.scriptBody(root, "", 0, true))
	case !seen["scripts"]:
		p.errf(root, "turns", "required (or scripts:)")
	case len(s.list) == 0:
		p.errf(root, "scripts", "must hold at least one script")
	}
	names := map[string]bool{}
	for _, sc := range s.list {
		if sc != nil && names[sc.name] {
			p.errf(root, "scripts", "duplicate script name %q", sc.name)
		}
		if sc != nil {
			names[sc.name] = true
		}
	}
	return s
}

func (p *yparser) script(n *yaml.Node, path string, i int) *script {
	return p.scriptBody(n, path, i, false)
}

// scriptBody parses a script mapping; top says its keys share the mapping
// with the file-level keys.
func (p *yparser) scriptBody(n *yaml.Node, path string, i int, top bool) *script {
	sc := &script{name: "script" + strconv.Itoa(i), final: "Done."}
	known := scriptFields
	if top {
		known = append([]string{"session_key", "progress"}, scriptFields...)
	}
	var turnsNode *yaml.Node
	seen := p.fields(n, path, known, func(key string, v *yaml.Node, fp string) {
		switch key {
		case "name":
			sc.name = p.str(v, fp)
		case "match":
			sc.match = p.match(v, fp)
		case "final":
			sc.final = p.str(v, fp)
		case "turns":
			turnsNode = v
		}
	})
	tp := join(path, "turns")
	if !seen["turns"] {
		if n.Kind == yaml.MappingNode {
			p.errf(n, tp, "required")
		}
		return sc
	}
	items := p.seq(turnsNode, tp)
	if turnsNode.Kind == yaml.SequenceNode && len(items) == 0 {
		p.errf(turnsNode, tp, "must hold at least one turn")
	}
	ids := map[string]int{}
	for ti, tn := range items {
		sc.turns = append(sc.turns, p.turn(tn, fmt.Sprintf("%s[%d]", tp, ti), ti, ids))
	}
	// Resolve goto targets now that every id is known.
	resolve := func(r *response, def int) {
		r.next = def
		switch r.gotoID {
		case "":
		case "end":
			r.next = len(sc.turns)
		default:
			idx, ok := ids[r.gotoID]
			if !ok {
				p.errf(r.gotoNode, r.gotoPath, "no turn has id %q", r.gotoID)
			}
			r.next = idx
		}
		r.gotoNode = nil
	}
	for ti := range sc.turns {
		t := &sc.turns[ti]
		resolve(&t.resp, ti+1)
		for bi := range t.branches {
			resolve(&t.branches[bi].resp, t.resp.next)
		}
	}
	return sc
}

func (p *yparser) turn(n *yaml.Node, path string, ti int, ids map[string]int) turn {
	var t turn
	seen := p.fields(n, path, []string{"id", "text", "tool_calls", "branches", "goto"}, func(key string, v *yaml.Node, fp string) {
		switch key {
		case "id":
			t.id = p.str(v, fp)
			if t.id == "end" {
				p.errf(v, fp, `"end" is reserved`)
			} else if _, dup := ids[t.id]; dup {
				p.errf(v, fp, "duplicate turn id %q", t.id)
			}
			ids[t.id] = ti
		case "branches":
			for bi, bn := range p.seq(v, fp) {
				t.branches = append(t.branches, p.branch(bn, fmt.Sprintf("%s[%d]", fp, bi)))
			}
		default:
			p.respField(&t.resp, key, v, fp)
		}
	})
	if n.Kind == yaml.MappingNode && !seen["text"] && !seen["tool_calls"] {
		p.errf(n, path+".text", "required: a turn needs text or tool_calls (its answer when no branch matches)")
	}
	return t
}

// respField parses the fields a turn and a branch share.
func (p *yparser) respField(r *response, key string, v *yaml.Node, fp string) {
	switch key {
	case "text":
		r.text = p.str(v, fp)
	case "tool_calls":
		for ci, cn := range p.seq(v, fp) {
			r.calls = append(r.calls, p.call(cn, fmt.Sprintf("%s[%d]", fp, ci)))
		}
	case "goto":
		r.gotoID, r.gotoNode, r.gotoPath = p.str(v, fp), v, fp
	}
}

func (p *yparser) call(n *yaml.Node, path string) callSpec {
	c := callSpec{input: map[string]any{}}
	seen := p.fields(n, path, []string{"name", "id", "namespace", "input"}, func(key string, v *yaml.Node, fp string) {
		switch key {
		case "namespace":
			c.namespace = p.str(v, fp)
		case "name":
			c.name = p.str(v, fp)
			if c.name == "" {
				p.errf(v, fp, "must not be empty")
			}
		case "id":
			c.id = p.str(v, fp)
		case "input":
			if v.Kind == yaml.ScalarNode && v.Tag == "!!str" {
				c.input, c.custom = v.Value, true
				return
			}
			if v.Kind != yaml.MappingNode {
				p.errf(v, fp, "must be a mapping (the tool's arguments) or a string (a freeform tool's input)")
				return
			}
			var in map[string]any
			if err := v.Decode(&in); err != nil {
				p.errf(v, fp, "%v", err)
				return
			}
			c.input = jsonable(in)
		}
	})
	if n.Kind == yaml.MappingNode && !seen["name"] {
		p.errf(n, path+".name", "required")
	}
	return c
}

func (p *yparser) branch(n *yaml.Node, path string) branch {
	var b branch
	seen := p.fields(n, path, []string{"when", "text", "tool_calls", "goto"}, func(key string, v *yaml.Node, fp string) {
		if key != "when" {
			p.respField(&b.resp, key, v, fp)
			return
		}
		cs := p.fields(v, fp, []string{"contains", "regex", "is_error"}, func(key string, v *yaml.Node, fp string) {
			switch key {
			case "contains":
				b.contains = p.str(v, fp)
			case "regex":
				b.re = p.regex(v, fp)
			case "is_error":
				e := p.boolean(v, fp)
				b.isError = &e
			}
		})
		if v.Kind == yaml.MappingNode && len(cs) == 0 {
			p.errf(v, fp, "needs contains, regex or is_error")
		}
	})
	if n.Kind == yaml.MappingNode {
		if !seen["when"] {
			p.errf(n, path+".when", "required")
		}
		if !seen["text"] && !seen["tool_calls"] {
			p.errf(n, path+".text", "required: a branch needs text or tool_calls")
		}
	}
	return b
}

func (p *yparser) match(n *yaml.Node, path string) match {
	var m match
	p.fields(n, path, []string{"api_key", "headers", "model", "system", "system_regex", "user", "user_regex", "any_request"},
		func(key string, v *yaml.Node, fp string) {
			switch key {
			case "api_key":
				m.apiKey = p.str(v, fp)
			case "headers":
				if v.Kind != yaml.MappingNode {
					p.errf(v, fp, "must be a mapping of header name to value regex")
					return
				}
				m.headers = map[string]*regexp.Regexp{}
				for i := 0; i+1 < len(v.Content); i += 2 {
					name := v.Content[i].Value
					if re := p.regex(v.Content[i+1], fp+"."+name); re != nil {
						m.headers[http.CanonicalHeaderKey(name)] = re
					}
				}
			case "model":
				m.model = p.regex(v, fp)
			case "system":
				m.system = p.str(v, fp)
			case "system_regex":
				m.systemRe = p.regex(v, fp)
			case "user":
				m.user = p.str(v, fp)
			case "user_regex":
				m.userRe = p.regex(v, fp)
			case "any_request":
				m.anyRequest = p.boolean(v, fp)
			}
		})
	return m
}

// jsonable turns decoded YAML into values encoding/json can marshal
// (YAML allows non-string map keys).
func jsonable(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			v[k] = jsonable(x)
		}
		return v
	case map[any]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[fmt.Sprint(k)] = jsonable(x)
		}
		return out
	case []any:
		for i, x := range v {
			v[i] = jsonable(x)
		}
		return v
	default:
		return v
	}
}
