package llmfake

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/apiary-dev/apiary/internal/strictyaml"
)

// ErrScript is wrapped by every *ScriptError.
var ErrScript = errors.New("llmfake: bad script")

// ScriptError locates one mistake in a script file.
type ScriptError struct {
	File   string // as given to ParseScripts
	Line   int    // 1-based; 0 if unknown
	Column int    // 1-based; 0 if unknown
	Field  string // e.g. scripts[0].turns[3].tool_calls[0].name
	Msg    string
}

func (e *ScriptError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		b.WriteString(":" + strconv.Itoa(e.Line))
		if e.Column > 0 {
			b.WriteString(":" + strconv.Itoa(e.Column))
		}
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

	gotoPath strictyaml.Path // parse time only
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

// maxScriptErrors bounds the problems reported for one file.
const maxScriptErrors = 20

// maxScriptSize bounds a script file.
const maxScriptSize = 4 << 20

// ParseScripts parses a script file; name is used in error messages. The
// file is read strictly (see internal/strictyaml). Errors are *ScriptError
// values (joined when there are several), each naming the line, column
// and field.
func ParseScripts(name string, data []byte) (*Scripts, error) {
	doc, err := strictyaml.Parse(name, data, strictyaml.Options{MaxBytes: maxScriptSize})
	if err != nil {
		return nil, fromStrict(err)
	}
	if doc.Empty() || doc.Value() == nil {
		return nil, &ScriptError{File: name, Msg: "empty script file"}
	}
	var f fileSpec
	if err := doc.Decode(&f); err != nil {
		return nil, fromStrict(err)
	}
	p := &sparser{doc: doc}
	s := p.file(&f)
	if len(p.errs) > 0 {
		return nil, errors.Join(p.errs...)
	}
	return s, nil
}

// fromStrict converts strictyaml's errors into joined *ScriptErrors.
func fromStrict(err error) error {
	var ses strictyaml.Errors
	if !errors.As(err, &ses) {
		return fmt.Errorf("%w: %w", ErrScript, err)
	}
	var out []error
	for _, e := range ses[:min(len(ses), maxScriptErrors)] {
		out = append(out, &ScriptError{File: e.File, Line: e.Line, Column: e.Column, Field: e.Path.String(), Msg: e.Msg})
	}
	return errors.Join(out...)
}

// The file's shape, as decoded. Pointers and nil slices tell a field left
// out from one given empty.
type fileSpec struct {
	SessionKey *string          `yaml:"session_key"`
	Progress   *string          `yaml:"progress"`
	Scripts    []scriptSpec     `yaml:"scripts"`
	scriptSpec `yaml:",inline"` // a file of one script has its keys at the top
}

type scriptSpec struct {
	Name  *string    `yaml:"name"`
	Match *matchSpec `yaml:"match"`
	Turns []turnSpec `yaml:"turns"`
	Final *string    `yaml:"final"`
}

func (s *scriptSpec) given() bool {
	return s.Name != nil || s.Match != nil || s.Turns != nil || s.Final != nil
}

type matchSpec struct {
	APIKey      string            `yaml:"api_key"`
	Headers     map[string]string `yaml:"headers"`
	Model       *string           `yaml:"model"`
	System      string            `yaml:"system"`
	SystemRegex *string           `yaml:"system_regex"`
	User        string            `yaml:"user"`
	UserRegex   *string           `yaml:"user_regex"`
	AnyRequest  bool              `yaml:"any_request"`
}

type turnSpec struct {
	ID        *string      `yaml:"id"`
	Text      *string      `yaml:"text"`
	ToolCalls []toolSpec   `yaml:"tool_calls"`
	Branches  []branchSpec `yaml:"branches"`
	Goto      *string      `yaml:"goto"`
}

type toolSpec struct {
	Name      *string `yaml:"name"`
	ID        string  `yaml:"id"`
	Namespace string  `yaml:"namespace"`
	Input     any     `yaml:"input"`
}

type branchSpec struct {
	When      *whenSpec  `yaml:"when"`
	Text      *string    `yaml:"text"`
	ToolCalls []toolSpec `yaml:"tool_calls"`
	Goto      *string    `yaml:"goto"`
}

type whenSpec struct {
	Contains *string `yaml:"contains"`
	Regex    *string `yaml:"regex"`
	IsError  *bool   `yaml:"is_error"`
}

type fieldPath = strictyaml.Path

// at returns p extended by elems, never sharing p's array.
func at(p fieldPath, elems ...any) fieldPath {
	return append(p[:len(p):len(p)], elems...)
}

// sparser checks a decoded file and builds Scripts from it.
type sparser struct {
	doc  *strictyaml.Document
	errs []error
}

func (p *sparser) errf(where fieldPath, format string, args ...any) {
	if len(p.errs) >= maxScriptErrors {
		return
	}
	pos := p.doc.Pos(where)
	p.errs = append(p.errs, &ScriptError{File: p.doc.File(), Line: pos.Line, Column: pos.Column, Field: where.String(), Msg: fmt.Sprintf(format, args...)})
}

func (p *sparser) regex(s string, where fieldPath) *regexp.Regexp {
	re, err := regexp.Compile(s)
	if err != nil {
		p.errf(where, "bad regular expression: %v", err)
		return nil
	}
	return re
}

func (p *sparser) file(f *fileSpec) *Scripts {
	s := &Scripts{file: p.doc.File(), sessionKey: SessionByHeader, progress: ProgressHistory}
	if k := f.SessionKey; k != nil {
		s.sessionKey = *k
		if !slices.Contains([]string{SessionByHeader, SessionByKey, SessionRoundRobin}, *k) {
			p.errf(fieldPath{"session_key"}, "%q is not session, key or round-robin", *k)
		}
	}
	if g := f.Progress; g != nil {
		s.progress = *g
		if !slices.Contains([]string{ProgressHistory, ProgressCounter}, *g) {
			p.errf(fieldPath{"progress"}, "%q is not history or counter", *g)
		}
	}
	switch single := f.scriptSpec.given(); {
	case f.Scripts != nil && single:
		p.errf(fieldPath{"scripts"}, "a file holds either scripts: or one script's turns:, not both")
	case single:
		s.list = append(s.list, p.script(&f.scriptSpec, nil, 0))
	case f.Scripts == nil:
		p.errf(fieldPath{"turns"}, "required (or scripts:)")
	case len(f.Scripts) == 0:
		p.errf(fieldPath{"scripts"}, "must hold at least one script")
	default:
		for i := range f.Scripts {
			s.list = append(s.list, p.script(&f.Scripts[i], fieldPath{"scripts", i}, i))
		}
	}
	names := map[string]bool{}
	for _, sc := range s.list {
		if names[sc.name] {
			p.errf(fieldPath{"scripts"}, "duplicate script name %q", sc.name)
		}
		names[sc.name] = true
	}
	return s
}

func (p *sparser) script(spec *scriptSpec, where fieldPath, i int) *script {
	sc := &script{name: "script" + strconv.Itoa(i), final: "Done."}
	if spec.Name != nil {
		sc.name = *spec.Name
	}
	if spec.Final != nil {
		sc.final = *spec.Final
	}
	if spec.Match != nil {
		sc.match = p.match(spec.Match, at(where, "match"))
	}
	tp := at(where, "turns")
	if spec.Turns == nil {
		p.errf(tp, "required")
		return sc
	}
	if len(spec.Turns) == 0 {
		p.errf(tp, "must hold at least one turn")
	}
	ids := map[string]int{}
	for ti := range spec.Turns {
		sc.turns = append(sc.turns, p.turn(&spec.Turns[ti], at(tp, ti), ti, ids))
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
				p.errf(r.gotoPath, "no turn has id %q", r.gotoID)
			}
			r.next = idx
		}
		r.gotoPath = nil
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

func (p *sparser) turn(spec *turnSpec, where fieldPath, ti int, ids map[string]int) turn {
	var t turn
	if spec.ID != nil {
		t.id = *spec.ID
		if t.id == "end" {
			p.errf(at(where, "id"), `"end" is reserved`)
		} else if _, dup := ids[t.id]; dup {
			p.errf(at(where, "id"), "duplicate turn id %q", t.id)
		}
		ids[t.id] = ti
	}
	t.resp = p.response(spec.Text, spec.ToolCalls, spec.Goto, where)
	for bi := range spec.Branches {
		t.branches = append(t.branches, p.branch(&spec.Branches[bi], at(where, "branches", bi)))
	}
	if spec.Text == nil && spec.ToolCalls == nil {
		p.errf(at(where, "text"), "required: a turn needs text or tool_calls (its answer when no branch matches)")
	}
	return t
}

// response builds what a turn or a branch answers.
func (p *sparser) response(text *string, calls []toolSpec, gotoID *string, where fieldPath) response {
	var r response
	if text != nil {
		r.text = *text
	}
	for ci := range calls {
		r.calls = append(r.calls, p.call(&calls[ci], at(where, "tool_calls", ci)))
	}
	if gotoID != nil {
		r.gotoID, r.gotoPath = *gotoID, at(where, "goto")
	}
	return r
}

func (p *sparser) call(spec *toolSpec, where fieldPath) callSpec {
	c := callSpec{id: spec.ID, namespace: spec.Namespace, input: map[string]any{}}
	switch {
	case spec.Name == nil:
		p.errf(at(where, "name"), "required")
	case *spec.Name == "":
		p.errf(at(where, "name"), "must not be empty")
	default:
		c.name = *spec.Name
	}
	switch in := spec.Input.(type) {
	case nil:
	case string:
		c.input, c.custom = in, true
	case map[string]any:
		c.input = in
	default:
		p.errf(at(where, "input"), "must be a mapping (the tool's arguments) or a string (a freeform tool's input)")
	}
	return c
}

func (p *sparser) branch(spec *branchSpec, where fieldPath) branch {
	var b branch
	b.resp = p.response(spec.Text, spec.ToolCalls, spec.Goto, where)
	if w := spec.When; w == nil {
		p.errf(at(where, "when"), "required")
	} else {
		if w.Contains != nil {
			b.contains = *w.Contains
		}
		if w.Regex != nil {
			b.re = p.regex(*w.Regex, at(where, "when", "regex"))
		}
		b.isError = w.IsError
		if w.Contains == nil && w.Regex == nil && w.IsError == nil {
			p.errf(at(where, "when"), "needs contains, regex or is_error")
		}
	}
	if spec.Text == nil && spec.ToolCalls == nil {
		p.errf(at(where, "text"), "required: a branch needs text or tool_calls")
	}
	return b
}

func (p *sparser) match(spec *matchSpec, where fieldPath) match {
	m := match{apiKey: spec.APIKey, system: spec.System, user: spec.User, anyRequest: spec.AnyRequest}
	if spec.Headers != nil {
		m.headers = map[string]*regexp.Regexp{}
		names := make([]string, 0, len(spec.Headers))
		for name := range spec.Headers {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			if re := p.regex(spec.Headers[name], at(where, "headers", name)); re != nil {
				m.headers[http.CanonicalHeaderKey(name)] = re
			}
		}
	}
	if spec.Model != nil {
		m.model = p.regex(*spec.Model, at(where, "model"))
	}
	if spec.SystemRegex != nil {
		m.systemRe = p.regex(*spec.SystemRegex, at(where, "system_regex"))
	}
	if spec.UserRegex != nil {
		m.userRe = p.regex(*spec.UserRegex, at(where, "user_regex"))
	}
	return m
}
