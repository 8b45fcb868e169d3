package mcpserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	segjson "github.com/segmentio/encoding/json"
)

// The stdio transport's vetting of single lines: what a valid JSON-RPC 2.0
// message is, the error reply an invalid one deserves, and the codes of
// error replies.

// nullID stands for "id": null in error replies.
var nullID = jsonrpc.ID{}

// wireError is a JSON-RPC error reply built by the transport itself.
type wireError struct {
	id   json.RawMessage // the request's id as sent, or nil for null
	code int64
	msg  string
}

func (e wireError) encode() []byte {
	id := e.id
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": e.code, "message": e.msg}})
	return body
}

// envelope is the part of a JSON-RPC message the transport inspects. Object
// params come split into their members in the same pass (objParams), so a
// tools/call's arguments are reached without scanning the params again.
type envelope struct {
	JSONRPC json.RawMessage `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  json.RawMessage `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   json.RawMessage `json:"error"`
}

type objEnvelope struct {
	JSONRPC json.RawMessage            `json:"jsonrpc"`
	ID      json.RawMessage            `json:"id"`
	Method  json.RawMessage            `json:"method"`
	Params  map[string]json.RawMessage `json:"params"`
	Result  json.RawMessage            `json:"result"`
	Error   json.RawMessage            `json:"error"`
}

// call is a request as the transport delivers it, with its params' members
// when the params are an object.
type call struct {
	*jsonrpc.Request
	members map[string]json.RawMessage
}

// decodeLine parses one JSON-RPC message, or returns the error reply it
// deserves: -32700 if it is not JSON, -32600 if it is not a valid message,
// with its id when that id is usable.
func decodeLine(line []byte) (any, *wireError) {
	if len(line) == 0 || line[0] != '{' {
		if segjson.Valid(line) {
			return nil, &wireError{code: jsonrpc.CodeInvalidRequest, msg: "Invalid Request: a message must be a JSON object"}
		}
		return nil, &wireError{code: jsonrpc.CodeParseError, msg: "Parse error: not JSON"}
	}
	var e envelope
	var members map[string]json.RawMessage
	var oe objEnvelope
	// Raw values alias the line, which is never reused.
	if rest, err := segjson.Parse(line, &oe, segjson.DontCopyRawMessage|segjson.DontMatchCaseInsensitiveStructFields); err == nil && len(bytes.TrimSpace(rest)) == 0 {
		e = envelope{JSONRPC: oe.JSONRPC, ID: oe.ID, Method: oe.Method, Result: oe.Result, Error: oe.Error}
		members = oe.Params
		if members != nil {
			e.Params = json.RawMessage("{}") // stands for "an object"; rebuilt below
		}
	} else if rest, err := segjson.Parse(line, &e, segjson.DontMatchCaseInsensitiveStructFields); err != nil || len(bytes.TrimSpace(rest)) != 0 {
		if err == nil {
			err = errors.New("data after the message")
		}
		if segjson.Valid(line) {
			// JSON, but not an envelope (a member of the wrong type)
			return nil, &wireError{code: jsonrpc.CodeInvalidRequest, msg: "Invalid Request: " + err.Error()}
		}
		return nil, &wireError{code: jsonrpc.CodeParseError, msg: "Parse error: " + err.Error()}
	}
	id, idOK := parseID(e.ID)
	invalid := func(why string) (any, *wireError) {
		w := &wireError{code: jsonrpc.CodeInvalidRequest, msg: "Invalid Request: " + why}
		if idOK && id.IsValid() {
			w.id = e.ID
		}
		return nil, w
	}
	if string(e.JSONRPC) != `"2.0"` {
		return invalid(`"jsonrpc" must be "2.0"`)
	}
	if !idOK {
		return invalid(`"id" must be a string or an integer`)
	}
	params := e.Params
	if string(params) == "null" {
		params = nil
	}
	if len(params) > 0 && params[0] != '{' && params[0] != '[' {
		return invalid(`"params" must be an object or an array`)
	}
	if len(e.Method) == 0 {
		if !id.IsValid() || (len(e.Result) == 0 && len(e.Error) == 0) {
			return invalid(`neither a request (no "method") nor a response`)
		}
		resp := &jsonrpc.Response{ID: id, Result: e.Result}
		if len(e.Error) > 0 {
			var we jsonrpc.Error
			if json.Unmarshal(e.Error, &we) != nil {
				return invalid(`"error" must be an error object`)
			}
			resp.Error = &we
		}
		return resp, nil
	}
	var method string
	if json.Unmarshal(e.Method, &method) != nil {
		return invalid(`"method" must be a string`)
	}
	if string(e.ID) == "null" {
		return invalid(`a request's "id" must not be null`)
	}
	req := &jsonrpc.Request{ID: id, Method: method, Params: params}
	if members != nil {
		if method == "tools/call" && id.IsValid() {
			return call{req, members}, nil
		}
		raw, err := json.Marshal(members)
		if err != nil {
			return invalid(`"params" cannot be re-encoded`)
		}
		req.Params = raw
	}
	return req, nil
}

// parseID reads a JSON-RPC id: absent (a notification), a string, or an
// integer that survives a float64 (the SDK's representation). ok is false
// for any other value.
func parseID(raw json.RawMessage) (jsonrpc.ID, bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return jsonrpc.ID{}, true
	}
	switch raw[0] {
	case '"':
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return jsonrpc.ID{}, false
		}
		id, err := jsonrpc.MakeID(s)
		return id, err == nil
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		f, err := strconv.ParseFloat(string(raw), 64)
		if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
			return jsonrpc.ID{}, false
		}
		id, err := jsonrpc.MakeID(f)
		return id, err == nil
	}
	return jsonrpc.ID{}, false
}

// predecodeCall takes a tools/call's params members, splits its arguments,
// stores them for the handler under a fresh token, and returns params whose
// arguments are {} and whose _meta carries the token: the SDK then decodes
// only what is left. Arguments that are not an object are left for the
// handler to refuse (tok is "").
func predecodeCall(pm map[string]json.RawMessage) (params json.RawMessage, tok string, err error) {
	raw := bytes.TrimSpace(pm["arguments"])
	if len(raw) > 0 && raw[0] == '{' {
		am, err := splitObject(raw)
		if err != nil {
			return nil, "", err
		}
		meta := map[string]json.RawMessage{}
		if mr := bytes.TrimSpace(pm["_meta"]); len(mr) > 0 && string(mr) != "null" && mr[0] == '{' {
			if meta, err = splitObject(mr); err != nil {
				return nil, "", err
			}
		}
		tok = newToken()
		meta[metaArgsKey] = json.RawMessage(`"` + tok + `"`)
		if pm["_meta"], err = json.Marshal(meta); err != nil {
			return nil, "", err
		}
		pm["arguments"] = json.RawMessage("{}")
		splitCalls.Store(tok, &splitCall{args: am})
	}
	params, err = json.Marshal(pm)
	if err != nil && tok != "" {
		splitCalls.Delete(tok)
	}
	return params, tok, err
}

// cancelledID reads notifications/cancelled's requestId.
func cancelledID(params json.RawMessage) (jsonrpc.ID, bool) {
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	if json.Unmarshal(params, &p) != nil {
		return jsonrpc.ID{}, false
	}
	id, ok := parseID(p.RequestID)
	return id, ok && id.IsValid()
}

// specCode gives an error response the JSON-RPC code its failure deserves
// when the SDK left it at 0, which is no code of the spec.
func specCode(resp *jsonrpc.Response) *jsonrpc.Response {
	var we *jsonrpc.Error
	if errors.As(resp.Error, &we) && we.Code != 0 {
		return resp
	}
	msg := resp.Error.Error()
	code := int64(jsonrpc.CodeInternalError)
	switch {
	case strings.Contains(msg, "unmarshaling"), strings.Contains(msg, `missing required "params"`):
		code = jsonrpc.CodeInvalidParams
	case strings.Contains(msg, "during session initialization"), strings.Contains(msg, "duplicate"), strings.Contains(msg, " before "):
		code = jsonrpc.CodeInvalidRequest
	}
	out := *resp
	out.Error = &jsonrpc.Error{Code: code, Message: msg}
	return &out
}
