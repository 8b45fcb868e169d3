package llmfake

import (
	"encoding/json"
)

// OpenAI Responses API (POST /v1/responses).

type respRequest struct {
	Model              *string           `json:"model"`
	Input              json.RawMessage   `json:"input"`
	Instructions       *string           `json:"instructions"`
	Tools              []json.RawMessage `json:"tools"`
	Stream             bool              `json:"stream"`
	MaxOutputTokens    *int              `json:"max_output_tokens"`
	PreviousResponseID string            `json:"previous_response_id"`
}

type respItem struct {
	Type      string            `json:"type"`
	Role      string            `json:"role"`
	Content   json.RawMessage   `json:"content"`
	Name      string            `json:"name"`
	Arguments string            `json:"arguments"`
	Input     string            `json:"input"`
	Output    json.RawMessage   `json:"output"`
	Tools     []json.RawMessage `json:"tools"` // additional_tools
}

// respTool is a tool definition: a function, a custom (freeform) tool, or
// a namespace grouping more of them.
type respTool struct {
	Type  string     `json:"type"`
	Name  string     `json:"name"`
	Tools []respTool `json:"tools"`
}

func parseResponses(body []byte, deployment string) (*convo, error) {
	var req respRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, openAIBadJSON(err)
	}
	c := newConvo()
	switch {
	case req.Model != nil:
		c.model = *req.Model
	case deployment != "":
		c.model = deployment
	default:
		return nil, badRequest("Missing required parameter: 'model'.")
	}
	if len(req.Input) == 0 || string(req.Input) == "null" {
		return nil, badRequest("Missing required parameter: 'input'.")
	}
	c.stream = req.Stream
	c.declareTools(req.Tools)
	if req.MaxOutputTokens != nil {
		c.maxTokens = *req.MaxOutputTokens
	}
	if req.Instructions != nil {
		c.addSystem(*req.Instructions)
	}
	if req.Input[0] == '"' {
		var s string
		if err := json.Unmarshal(req.Input, &s); err != nil {
			return nil, openAIBadJSON(err)
		}
		c.message("user")
		c.text(s)
		return c, nil
	}
	var items []respItem
	if err := json.Unmarshal(req.Input, &items); err != nil {
		return nil, badRequest("Invalid type for 'input': expected a string or an array of input items.")
	}
	for i, it := range items {
		switch it.Type {
		case "function_call":
			c.message("assistant")
			c.raw(len(it.Name) + len(it.Arguments))
		case "custom_tool_call":
			c.message("assistant")
			c.raw(len(it.Name) + len(it.Input))
		case "function_call_output", "custom_tool_call_output":
			c.message("tool")
			out, _ := chatText(it.Output)
			c.toolResult(out, false)
		case "reasoning":
			c.message("assistant")
			c.raw(len(it.Content))
		case "additional_tools":
			// Codex sends the tools of its "code mode" as an input item
			// instead of the top-level tools.
			c.declareTools(it.Tools)
		case "", "message":
			text, err := chatText(it.Content)
			if err != nil {
				return nil, badRequest("Invalid value for 'input[%d].content': %v", i, err)
			}
			switch it.Role {
			case "":
				return nil, badRequest("Missing required parameter: 'input[%d].role'.", i)
			case "system", "developer":
				c.addSystem(text)
			default:
				c.message(it.Role)
				c.text(text)
			}
		default:
			// Other items (configuration_update, web_search_call, …) cost
			// input tokens but are nobody's message.
			c.raw(len(it.Content) + len(it.Output) + len(it.Input))
		}
	}
	return c, nil
}

// declareTools records tool definitions: they cost input tokens, make the
// request one that carries tools, and name the functions a script may call
// (with their namespace).
func (c *convo) declareTools(tools []json.RawMessage) {
	for _, raw := range tools {
		c.raw(len(raw))
		c.hasTools = true
		var t respTool
		if json.Unmarshal(raw, &t) != nil {
			continue
		}
		c.addTool("", t)
	}
}

func (c *convo) addTool(ns string, t respTool) {
	if t.Type == "namespace" {
		for _, child := range t.Tools {
			c.addTool(t.Name, child)
		}
		return
	}
	if t.Name == "" {
		return
	}
	if ns == "" {
		if c.flatTools == nil {
			c.flatTools = map[string]bool{}
		}
		c.flatTools[t.Name] = true
		return
	}
	c.nsTools = append(c.nsTools, [2]string{ns, t.Name})
}

// namespaceOf resolves a scripted function name against the namespaces the
// request declared: a flat tool of that name wins; then a namespace N with
// a tool T such that name is N__T (Claude Code's spelling of an MCP tool)
// or T itself. It returns "" and name when nothing applies.
func (c *convo) namespaceOf(name string) (ns, fn string) {
	if c.flatTools[name] || len(c.nsTools) == 0 {
		return "", name
	}
	for _, nt := range c.nsTools {
		if nt[0]+"__"+nt[1] == name {
			return nt[0], nt[1]
		}
	}
	for _, nt := range c.nsTools {
		if nt[1] == name {
			return nt[0], nt[1]
		}
	}
	return "", name
}

// responseObject renders the response in the given status with the output
// so far (nil: none yet).
func (x *exchange) responseObject(status string, output []any, usage bool) map[string]any {
	rep := x.rep
	var maxOut any
	if x.c.maxTokens > 0 {
		maxOut = x.c.maxTokens
	}
	var incomplete any
	if status == "incomplete" {
		incomplete = map[string]string{"reason": "max_output_tokens"}
	}
	if output == nil {
		output = []any{}
	}
	var u any
	if usage {
		u = map[string]any{
			"input_tokens": rep.in, "input_tokens_details": map[string]int{"cached_tokens": 0},
			"output_tokens": rep.out, "output_tokens_details": map[string]int{"reasoning_tokens": 0},
			"total_tokens": rep.in + rep.out,
		}
	}
	var instructions any
	if x.c.system != "" {
		instructions = x.c.system
	}
	return map[string]any{
		"id": rep.id, "object": "response", "created_at": x.start.Unix(), "status": status, "background": false,
		"error": nil, "incomplete_details": incomplete, "instructions": instructions, "max_output_tokens": maxOut,
		"model": x.c.model, "output": output, "parallel_tool_calls": true, "previous_response_id": nil,
		"reasoning": map[string]any{"effort": nil, "summary": nil}, "store": true, "temperature": 1.0,
		"text": map[string]any{"format": map[string]string{"type": "text"}}, "tool_choice": "auto", "tools": []any{},
		"top_p": 1.0, "truncation": "disabled", "usage": u, "user": nil, "metadata": map[string]any{},
	}
}

func (x *exchange) writeResponses(p *plan) {
	rep := x.rep
	rep.id = x.s.ids.nextN("resp_", 48)
	final := "completed"
	if rep.stop == stopMax {
		final = "incomplete"
	}
	type item struct {
		done    map[string]any
		msgID   string
		callIdx int // -1 for the message
	}
	var items []item
	var output []any
	if rep.text != "" || len(rep.calls) == 0 {
		id := x.s.ids.nextN("msg_", 48)
		done := map[string]any{"id": id, "type": "message", "status": "completed", "role": "assistant",
			"content": []any{map[string]any{"type": "output_text", "text": rep.text, "annotations": []any{}, "logprobs": []any{}}}}
		items = append(items, item{done, id, -1})
		output = append(output, done)
	}
	for i, tc := range rep.calls {
		var done map[string]any
		var id string
		if tc.custom {
			id = x.s.ids.nextN("ctc_", 48)
			done = map[string]any{"id": id, "type": "custom_tool_call", "status": "completed", "call_id": tc.id,
				"name": tc.name, "input": tc.input}
		} else {
			id = x.s.ids.nextN("fc_", 48)
			done = map[string]any{"id": id, "type": "function_call", "status": "completed", "call_id": tc.id,
				"name": tc.name, "arguments": string(tc.args)}
		}
		if tc.namespace != "" {
			done["namespace"] = tc.namespace
		}
		items = append(items, item{done, id, i})
		output = append(output, done)
	}
	if !x.c.stream {
		body, _ := json.Marshal(x.responseObject(final, output, true))
		x.sendBody(ctJSON, body, p)
		return
	}
	var evs []event
	add := func(typ string, fields map[string]any) {
		fields["sequence_number"] = len(evs)
		evs = append(evs, event{typ, typedJSON(typ, fields)})
	}
	add("response.created", map[string]any{"response": x.responseObject("in_progress", nil, false)})
	add("response.in_progress", map[string]any{"response": x.responseObject("in_progress", nil, false)})
	for oi, it := range items {
		if it.callIdx < 0 {
			add("response.output_item.added", map[string]any{"output_index": oi, "item": map[string]any{
				"id": it.msgID, "type": "message", "status": "in_progress", "role": "assistant", "content": []any{}}})
			add("response.content_part.added", map[string]any{"item_id": it.msgID, "output_index": oi, "content_index": 0,
				"part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}, "logprobs": []any{}}})
			for _, piece := range chunks(rep.text, x.chunkBytes()) {
				add("response.output_text.delta", map[string]any{"item_id": it.msgID, "output_index": oi, "content_index": 0,
					"delta": piece, "logprobs": []any{}})
			}
			add("response.output_text.done", map[string]any{"item_id": it.msgID, "output_index": oi, "content_index": 0,
				"text": rep.text, "logprobs": []any{}})
			add("response.content_part.done", map[string]any{"item_id": it.msgID, "output_index": oi, "content_index": 0,
				"part": map[string]any{"type": "output_text", "text": rep.text, "annotations": []any{}, "logprobs": []any{}}})
		} else if tc := rep.calls[it.callIdx]; tc.custom {
			added := map[string]any{"id": it.msgID, "type": "custom_tool_call", "status": "in_progress", "call_id": tc.id, "name": tc.name, "input": ""}
			if tc.namespace != "" {
				added["namespace"] = tc.namespace
			}
			add("response.output_item.added", map[string]any{"output_index": oi, "item": added})
			for _, piece := range chunks(tc.input, max((len(tc.input)+3)/4, 1)) {
				add("response.custom_tool_call_input.delta", map[string]any{"item_id": it.msgID, "output_index": oi, "delta": piece})
			}
			add("response.custom_tool_call_input.done", map[string]any{"item_id": it.msgID, "output_index": oi, "input": tc.input})
		} else {
			added := map[string]any{"id": it.msgID, "type": "function_call", "status": "in_progress", "call_id": tc.id, "name": tc.name, "arguments": ""}
			if tc.namespace != "" {
				added["namespace"] = tc.namespace
			}
			add("response.output_item.added", map[string]any{"output_index": oi, "item": added})
			for _, piece := range jsonPieces(tc.args) {
				add("response.function_call_arguments.delta", map[string]any{"item_id": it.msgID, "output_index": oi, "delta": piece})
			}
			add("response.function_call_arguments.done", map[string]any{"item_id": it.msgID, "output_index": oi,
				"name": tc.name, "arguments": string(tc.args)})
		}
		add("response.output_item.done", map[string]any{"output_index": oi, "item": it.done})
	}
	add("response."+final, map[string]any{"response": x.responseObject(final, output, true)})
	errEv := func(k int) event {
		return event{"error", typedJSON("error", map[string]any{"code": "server_error", "param": nil, "sequence_number": k,
			"message": "The server had an error while processing your request. Sorry about that!"})}
	}
	x.sendStreamFn(ctSSE, frameSSE, evs, errEv, p)
}

// typedJSON encodes fields as an object whose first member is "type": typ,
// as the providers order their events.
func typedJSON(typ string, fields map[string]any) []byte {
	rest, _ := json.Marshal(fields)
	t, _ := json.Marshal(typ)
	out := append([]byte(`{"type":`), t...)
	if len(rest) > 2 {
		out = append(out, ',')
	}
	return append(out, rest[1:]...)
}
