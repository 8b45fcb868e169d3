package llmfake

import (
	"encoding/json"
	"time"
)

// Ollama native API (POST /api/chat, /api/generate): NDJSON streams by
// default, one object with "stream": false.

type ollamaRequest struct {
	Model    *string           `json:"model"`
	Messages []ollamaMessage   `json:"messages"`
	Prompt   string            `json:"prompt"`
	System   string            `json:"system"`
	Tools    []json.RawMessage `json:"tools"`
	Stream   *bool             `json:"stream"`
	Options  struct {
		NumPredict *int `json:"num_predict"`
	} `json:"options"`
}

type ollamaCall struct {
	Function struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

type ollamaMessage struct {
	Role      string       `json:"role"`
	Content   string       `json:"content"`
	ToolCalls []ollamaCall `json:"tool_calls,omitempty"`
}

// parseOllama reads /api/chat (generate=false) or /api/generate.
func parseOllama(body []byte, generate bool) (*convo, error) {
	var req ollamaRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, badRequest("invalid character in request body: %v", err)
	}
	if req.Model == nil || *req.Model == "" {
		return nil, badRequest("model is required")
	}
	c := newConvo()
	c.model = *req.Model
	c.stream = req.Stream == nil || *req.Stream
	c.hasTools = len(req.Tools) > 0
	for _, t := range req.Tools {
		c.raw(len(t))
	}
	if n := req.Options.NumPredict; n != nil && *n > 0 {
		c.maxTokens = *n
	}
	if generate {
		c.addSystem(req.System)
		c.message("user")
		c.text(req.Prompt)
		return c, nil
	}
	for i, m := range req.Messages {
		switch m.Role {
		case "":
			return nil, badRequest("messages[%d]: role is required", i)
		case "system":
			c.addSystem(m.Content)
			continue
		}
		c.message(m.Role)
		if m.Role == "tool" {
			c.toolResult(m.Content, false)
			continue
		}
		c.text(m.Content)
		for _, tc := range m.ToolCalls {
			c.raw(len(tc.Function.Name) + len(tc.Function.Arguments))
		}
	}
	return c, nil
}

type ollamaOut struct {
	Model     string         `json:"model"`
	CreatedAt string         `json:"created_at"`
	Message   *ollamaMessage `json:"message,omitempty"`
	Response  *string        `json:"response,omitempty"`
	Done      bool           `json:"done"`
	// Only on the final object.
	DoneReason         string `json:"done_reason,omitempty"`
	TotalDuration      int64  `json:"total_duration,omitempty"`
	LoadDuration       int64  `json:"load_duration,omitempty"`
	PromptEvalCount    int    `json:"prompt_eval_count,omitempty"`
	PromptEvalDuration int64  `json:"prompt_eval_duration,omitempty"`
	EvalCount          int    `json:"eval_count,omitempty"`
	EvalDuration       int64  `json:"eval_duration,omitempty"`
}

func (x *exchange) writeOllama(p *plan) {
	rep := x.rep
	generate := x.ep == epOllamaGenerate
	var calls []ollamaCall
	for _, tc := range rep.calls {
		var oc ollamaCall
		oc.Function.Name, oc.Function.Arguments = tc.name, tc.args
		calls = append(calls, oc)
	}
	obj := func(text string, tcs []ollamaCall) ollamaOut {
		o := ollamaOut{Model: x.c.model, CreatedAt: x.s.now().UTC().Format(time.RFC3339Nano)}
		if generate {
			o.Response = &text
		} else {
			o.Message = &ollamaMessage{Role: "assistant", Content: text, ToolCalls: tcs}
		}
		return o
	}
	final := func(o ollamaOut) []byte {
		o.Done = true
		o.DoneReason = "stop"
		if rep.stop == stopMax {
			o.DoneReason = "length"
		}
		o.LoadDuration = 100_000
		o.PromptEvalCount, o.PromptEvalDuration = rep.in, int64(rep.in)*20_000
		o.EvalCount, o.EvalDuration = rep.out, int64(rep.out)*50_000
		o.TotalDuration = max(x.s.now().Sub(x.start).Nanoseconds(), o.LoadDuration+o.PromptEvalDuration+o.EvalDuration)
		b, _ := json.Marshal(o)
		return b
	}
	if !x.c.stream {
		x.sendBody(ctJSON+"; charset=utf-8", final(obj(rep.text, calls)), p)
		return
	}
	var evs []event
	for _, piece := range chunks(rep.text, x.chunkBytes()) {
		b, _ := json.Marshal(obj(piece, nil))
		evs = append(evs, event{data: b})
	}
	if len(calls) > 0 {
		b, _ := json.Marshal(obj("", calls))
		evs = append(evs, event{data: b})
	}
	evs = append(evs, event{data: final(obj("", nil))})
	errEv := event{data: []byte(`{"error":"an error was encountered while running the model: unexpected EOF"}`)}
	x.sendStream(ctNDJSON, frameNDJSON, evs, errEv, p)
}
