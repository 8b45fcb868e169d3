package llmfake

import (
	"bytes"
	"encoding/json"
)

// Anthropic Messages API (POST /v1/messages, /v1/messages/count_tokens).

type anthRequest struct {
	Model     *string           `json:"model"`
	MaxTokens *int              `json:"max_tokens"`
	Messages  []anthMessage     `json:"messages"`
	System    json.RawMessage   `json:"system"`
	Tools     []json.RawMessage `json:"tools"`
	Stream    bool              `json:"stream"`
}

type anthMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type anthBlock struct {
	Type     string          `json:"type"`
	Text     string          `json:"text"`
	Thinking string          `json:"thinking"`
	Name     string          `json:"name"`
	Input    json.RawMessage `json:"input"`
	Content  json.RawMessage `json:"content"`
	IsError  bool            `json:"is_error"`
}

// parseAnthropic reads a Messages request; count says it is for
// count_tokens, which needs no max_tokens.
func parseAnthropic(body []byte, count bool) (*convo, error) {
	var req anthRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, badJSON(err)
	}
	switch {
	case req.Model == nil:
		return nil, badRequest("model: Field required")
	case req.MaxTokens == nil && !count:
		return nil, badRequest("max_tokens: Field required")
	case req.Messages == nil:
		return nil, badRequest("messages: Field required")
	case len(req.Messages) == 0:
		return nil, badRequest("messages: at least one message is required")
	case req.MaxTokens != nil && *req.MaxTokens < 1:
		return nil, badRequest("max_tokens: Input should be greater than or equal to 1")
	}
	c := newConvo()
	c.model, c.stream, c.hasTools = *req.Model, req.Stream, len(req.Tools) > 0
	if req.MaxTokens != nil {
		c.maxTokens = *req.MaxTokens
	}
	for _, t := range req.Tools {
		c.raw(len(t))
	}
	if len(req.System) > 0 && req.System[0] == '"' {
		var s string
		if err := json.Unmarshal(req.System, &s); err != nil {
			return nil, badJSON(err)
		}
		c.addSystem(s)
	} else if len(req.System) > 0 && !bytes.Equal(req.System, []byte("null")) {
		var blocks []anthBlock
		if err := json.Unmarshal(req.System, &blocks); err != nil {
			return nil, badRequest("system: Input should be a valid string or list of text blocks")
		}
		for _, b := range blocks {
			c.addSystem(b.Text)
		}
	}
	for i, m := range req.Messages {
		if m.Role == "" {
			return nil, badRequest("messages.%d.role: Field required", i)
		}
		c.message(m.Role)
		if err := anthContent(c, m.Content, i); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func anthContent(c *convo, raw json.RawMessage, i int) error {
	if len(raw) == 0 {
		return badRequest("messages.%d.content: Field required", i)
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return badJSON(err)
		}
		c.text(s)
		return nil
	}
	var blocks []anthBlock
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return badRequest("messages.%d.content: Input should be a valid string or list of content blocks", i)
	}
	for _, b := range blocks {
		switch b.Type {
		case "text":
			c.text(b.Text)
		case "thinking":
			c.raw(len(b.Thinking))
		case "tool_use", "server_tool_use":
			c.raw(len(b.Name) + len(b.Input))
		case "tool_result":
			c.toolResult(resultText(b.Content), b.IsError)
		default:
			c.raw(len(b.Text))
		}
	}
	return nil
}

// resultText flattens a tool_result's content: a string or text blocks.
func resultText(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	if raw[0] == '"' {
		var s string
		json.Unmarshal(raw, &s)
		return s
	}
	var blocks []anthBlock
	if json.Unmarshal(raw, &blocks) != nil {
		return string(raw)
	}
	var b bytes.Buffer
	for i, bl := range blocks {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(bl.Text)
	}
	return b.String()
}

func badJSON(err error) error {
	return badRequest("There was an error parsing the body of your request: %v", err)
}

// anthUsage is Anthropic's usage object; the optional parts appear on
// messages (not on message_delta), as the API sends them.
type anthUsage struct {
	InputTokens         int                `json:"input_tokens"`
	CacheCreationTokens int                `json:"cache_creation_input_tokens"`
	CacheReadTokens     int                `json:"cache_read_input_tokens"`
	CacheCreation       *anthCacheCreation `json:"cache_creation,omitempty"`
	OutputTokens        int                `json:"output_tokens"`
	ServerToolUse       *anthServerTools   `json:"server_tool_use,omitempty"`
	ServiceTier         string             `json:"service_tier,omitempty"`
}

type anthCacheCreation struct {
	Ephemeral5m int `json:"ephemeral_5m_input_tokens"`
	Ephemeral1h int `json:"ephemeral_1h_input_tokens"`
}

type anthServerTools struct {
	WebSearchRequests int `json:"web_search_requests"`
}

// messageUsage is the full usage object of a message.
func messageUsage(in, out int) anthUsage {
	return anthUsage{InputTokens: in, OutputTokens: out, CacheCreation: &anthCacheCreation{},
		ServerToolUse: &anthServerTools{}, ServiceTier: "standard"}
}

type anthOutBlock struct {
	Type  string          `json:"type"`
	Text  *string         `json:"text,omitempty"`
	ID    string          `json:"id,omitempty"`
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
}

type anthMessageOut struct {
	ID           string         `json:"id"`
	Type         string         `json:"type"`
	Role         string         `json:"role"`
	Model        string         `json:"model"`
	Content      []anthOutBlock `json:"content"`
	StopReason   *string        `json:"stop_reason"`
	StopSequence *string        `json:"stop_sequence"`
	Usage        anthUsage      `json:"usage"`
}

func anthStop(s stopReason) string {
	switch s {
	case stopTool:
		return "tool_use"
	case stopMax:
		return "max_tokens"
	default:
		return "end_turn"
	}
}

func (x *exchange) writeAnthropic(p *plan) {
	rep := x.rep
	rep.id = x.s.ids.next("msg_01")
	msg := anthMessageOut{ID: rep.id, Type: "message", Role: "assistant", Model: x.c.model, Content: []anthOutBlock{}}
	if !x.c.stream {
		if rep.text != "" || len(rep.calls) == 0 {
			t := rep.text
			msg.Content = append(msg.Content, anthOutBlock{Type: "text", Text: &t})
		}
		for _, tc := range rep.calls {
			msg.Content = append(msg.Content, anthOutBlock{Type: "tool_use", ID: tc.id, Name: tc.name, Input: tc.args})
		}
		stop := anthStop(rep.stop)
		msg.StopReason = &stop
		msg.Usage = messageUsage(rep.in, rep.out)
		body, _ := json.Marshal(msg)
		x.sendBody(ctJSON, body, p)
		return
	}
	evs := make([]event, 0, 8+len(rep.text)/32)
	add := func(ev anthEvent) {
		b, _ := json.Marshal(ev)
		evs = append(evs, event{ev.Type, b})
	}
	msg.Usage = messageUsage(rep.in, min(1, rep.out))
	add(anthEvent{Type: "message_start", Message: &msg})
	idx := 0
	if rep.text != "" || len(rep.calls) == 0 {
		empty := ""
		add(anthEvent{Type: "content_block_start", Index: &idx, ContentBlock: &anthOutBlock{Type: "text", Text: &empty}})
		evs = append(evs, event{"ping", []byte(`{"type": "ping"}`)})
		for _, piece := range chunks(rep.text, x.chunkBytes()) {
			add(anthEvent{Type: "content_block_delta", Index: &idx, Delta: &anthDelta{Type: "text_delta", Text: &piece}})
		}
		add(anthEvent{Type: "content_block_stop", Index: &idx})
		idx++
	}
	for _, tc := range rep.calls {
		i := idx
		add(anthEvent{Type: "content_block_start", Index: &i,
			ContentBlock: &anthOutBlock{Type: "tool_use", ID: tc.id, Name: tc.name, Input: json.RawMessage("{}")}})
		for _, piece := range append([]string{""}, jsonPieces(tc.args)...) {
			add(anthEvent{Type: "content_block_delta", Index: &i, Delta: &anthDelta{Type: "input_json_delta", PartialJSON: &piece}})
		}
		add(anthEvent{Type: "content_block_stop", Index: &i})
		idx++
	}
	stop := anthStop(rep.stop)
	add(anthEvent{Type: "message_delta", Delta: &anthDelta{StopReason: &stop, StopSeq: true},
		Usage: &anthUsage{InputTokens: rep.in, OutputTokens: rep.out}})
	evs = append(evs, event{"message_stop", []byte(`{"type":"message_stop"}`)})
	errEv := event{"error", []byte(`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)}
	x.sendStream(ctSSE, frameSSE, evs, errEv, p)
}

// anthEvent is one Anthropic stream event; "type" comes first, as on the
// wire.
type anthEvent struct {
	Type         string          `json:"type"`
	Message      *anthMessageOut `json:"message,omitempty"`
	Index        *int            `json:"index,omitempty"`
	ContentBlock *anthOutBlock   `json:"content_block,omitempty"`
	Delta        *anthDelta      `json:"delta,omitempty"`
	Usage        *anthUsage      `json:"usage,omitempty"`
}

type anthDelta struct {
	Type        string  `json:"type,omitempty"`
	Text        *string `json:"text,omitempty"`
	PartialJSON *string `json:"partial_json,omitempty"`
	StopReason  *string `json:"stop_reason,omitempty"`
	// StopSeq adds "stop_sequence": null (message_delta only).
	StopSeq bool `json:"-"`
}

// MarshalJSON writes stop_sequence as null on message_delta.
func (d *anthDelta) MarshalJSON() ([]byte, error) {
	type plain anthDelta
	b, err := json.Marshal((*plain)(d))
	if err != nil || !d.StopSeq {
		return b, err
	}
	return append(b[:len(b)-1], `,"stop_sequence":null}`...), nil
}

// chunkBytes is the size of one text delta.
func (x *exchange) chunkBytes() int {
	n := x.cfg.Output.ChunkTokens
	if n == 0 {
		n = defaultChunkTokens
	}
	return 4 * n
}
