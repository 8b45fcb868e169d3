package llmfake

import (
	"encoding/json"
)

// Gemini API (POST /v1beta/models/{m}:generateContent and
// :streamGenerateContent, :countTokens). Proto JSON accepts camelCase and
// snake_case field names; both are read.

type gemRequest struct {
	Contents          []gemContent      `json:"contents"`
	SystemInstruction *gemContent       `json:"systemInstruction"`
	SystemSnake       *gemContent       `json:"system_instruction"`
	Tools             []json.RawMessage `json:"tools"`
	GenerationConfig  *gemGenConfig     `json:"generationConfig"`
	GenConfigSnake    *gemGenConfig     `json:"generation_config"`
}

type gemGenConfig struct {
	MaxOutputTokens *int            `json:"maxOutputTokens"`
	MaxOutputSnake  *int            `json:"max_output_tokens"`
	MimeType        string          `json:"responseMimeType"`
	MimeTypeSnake   string          `json:"response_mime_type"`
	JSONSchema      json.RawMessage `json:"responseJsonSchema"`
	JSONSchemaSnake json.RawMessage `json:"response_json_schema"`
	Schema          json.RawMessage `json:"responseSchema"`
	SchemaSnake     json.RawMessage `json:"response_schema"`
}

type gemContent struct {
	Role  string    `json:"role"`
	Parts []gemPart `json:"parts"`
}

type gemCall struct {
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

type gemResponse struct {
	Name     string          `json:"name"`
	Response json.RawMessage `json:"response"`
}

type gemPart struct {
	Text          string       `json:"text,omitempty"`
	FunctionCall  *gemCall     `json:"functionCall,omitempty"`
	CallSnake     *gemCall     `json:"function_call,omitempty"`
	FunctionResp  *gemResponse `json:"functionResponse,omitempty"`
	FuncRespSnake *gemResponse `json:"function_response,omitempty"`
}

// parseGemini reads a generateContent request for the model in the path.
func parseGemini(body []byte, model string, stream bool) (*convo, error) {
	var req gemRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, badRequest("Invalid JSON payload received. %v", err)
	}
	if len(req.Contents) == 0 {
		return nil, badRequest("* GenerateContentRequest.contents: contents is not specified\n")
	}
	c := newConvo()
	c.model, c.stream, c.hasTools = model, stream, len(req.Tools) > 0
	for _, t := range req.Tools {
		c.raw(len(t))
	}
	for _, gc := range []*gemGenConfig{req.GenerationConfig, req.GenConfigSnake} {
		if gc == nil {
			continue
		}
		for _, m := range []*int{gc.MaxOutputTokens, gc.MaxOutputSnake} {
			if m != nil {
				c.maxTokens = *m
			}
		}
		if gc.MimeType == "application/json" || gc.MimeTypeSnake == "application/json" {
			c.jsonMode = true
			for _, sc := range []json.RawMessage{gc.JSONSchema, gc.JSONSchemaSnake, gc.Schema, gc.SchemaSnake} {
				if len(sc) > 0 && string(sc) != "null" {
					c.jsonSchema = sc
					c.raw(len(sc))
					break
				}
			}
		}
	}
	for _, si := range []*gemContent{req.SystemInstruction, req.SystemSnake} {
		if si != nil {
			for _, p := range si.Parts {
				c.addSystem(p.Text)
			}
		}
	}
	for i, m := range req.Contents {
		role := m.Role
		if role == "" {
			role = "user"
		}
		if len(m.Parts) == 0 {
			return nil, badRequest("* GenerateContentRequest.contents[%d].parts: contents.parts must not be empty.\n", i)
		}
		c.message(role)
		for _, p := range m.Parts {
			if p.Text != "" {
				c.text(p.Text)
			}
			for _, fc := range []*gemCall{p.FunctionCall, p.CallSnake} {
				if fc != nil {
					c.raw(len(fc.Name) + len(fc.Args))
				}
			}
			for _, fr := range []*gemResponse{p.FunctionResp, p.FuncRespSnake} {
				if fr != nil {
					c.toolResult(string(fr.Response), false)
				}
			}
		}
	}
	return c, nil
}

type gemUsage struct {
	PromptTokenCount     int `json:"promptTokenCount"`
	CandidatesTokenCount int `json:"candidatesTokenCount,omitempty"`
	TotalTokenCount      int `json:"totalTokenCount"`
}

type gemCandidate struct {
	Content      gemContent `json:"content"`
	FinishReason string     `json:"finishReason,omitempty"`
	Index        int        `json:"index"`
}

type gemOut struct {
	Candidates    []gemCandidate `json:"candidates"`
	UsageMetadata gemUsage       `json:"usageMetadata"`
	ModelVersion  string         `json:"modelVersion"`
	ResponseID    string         `json:"responseId"`
}

func gemFinish(s stopReason) string {
	if s == stopMax {
		return "MAX_TOKENS"
	}
	return "STOP"
}

func (x *exchange) writeGemini(p *plan) {
	rep := x.rep
	rep.id = x.s.ids.nextN("", 22)
	var calls []gemPart
	for _, tc := range rep.calls {
		calls = append(calls, gemPart{FunctionCall: &gemCall{Name: tc.name, Args: tc.args}})
	}
	out := func(parts []gemPart, candTokens int, finish string) []byte {
		b, _ := json.Marshal(gemOut{
			Candidates:    []gemCandidate{{Content: gemContent{Role: "model", Parts: parts}, FinishReason: finish}},
			UsageMetadata: gemUsage{PromptTokenCount: rep.in, CandidatesTokenCount: candTokens, TotalTokenCount: rep.in + candTokens},
			ModelVersion:  x.c.model, ResponseID: rep.id,
		})
		return b
	}
	if !x.c.stream {
		parts := calls
		if rep.text != "" || len(calls) == 0 {
			parts = append([]gemPart{{Text: rep.text}}, calls...)
		}
		x.sendBody(ctJSON+"; charset=UTF-8", out(parts, rep.out, gemFinish(rep.stop)), p)
		return
	}
	var evs []event
	pieces := chunks(rep.text, x.chunkBytes())
	sent := 0
	for i, piece := range pieces {
		sent += len(piece)
		last := i == len(pieces)-1 && len(calls) == 0
		if last {
			evs = append(evs, event{data: out([]gemPart{{Text: piece}}, rep.out, gemFinish(rep.stop))})
		} else {
			evs = append(evs, event{data: out([]gemPart{{Text: piece}}, min(tokensOf(sent), rep.out), "")})
		}
	}
	if len(calls) > 0 || len(pieces) == 0 {
		parts := calls
		if len(parts) == 0 {
			parts = []gemPart{{}} // an empty reply still has one part
		}
		evs = append(evs, event{data: out(parts, rep.out, gemFinish(rep.stop))})
	}
	errEv := event{data: []byte(`{"error":{"code":503,"message":"The model is overloaded. Please try again later.","status":"UNAVAILABLE"}}`)}
	if x.r.URL.Query().Get("alt") == "sse" {
		x.sendStream(ctSSE, frameData, evs, errEv, p)
		return
	}
	x.sendStream(ctJSON+"; charset=UTF-8", frameArray, evs, errEv, p)
}
