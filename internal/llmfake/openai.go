package llmfake

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
)

// OpenAI Chat Completions (POST /v1/chat/completions, also on Azure and
// Gemini's OpenAI-compatible paths) and Embeddings.

type chatRequest struct {
	Model               *string           `json:"model"`
	Messages            []chatMessage     `json:"messages"`
	Tools               []json.RawMessage `json:"tools"`
	Functions           []json.RawMessage `json:"functions"`
	Stream              bool              `json:"stream"`
	StreamOptions       *streamOptions    `json:"stream_options"`
	MaxTokens           *int              `json:"max_tokens"`
	MaxCompletionTokens *int              `json:"max_completion_tokens"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type chatMessage struct {
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	ToolCalls []struct {
		Function chatFunction `json:"function"`
	} `json:"tool_calls"`
}

type chatPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// parseChat reads a Chat Completions request; deployment is the Azure
// deployment from the path, which stands in for a missing model.
func parseChat(body []byte, deployment string) (*convo, error) {
	var req chatRequest
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
		return nil, badRequest("you must provide a model parameter")
	}
	if req.Messages == nil {
		return nil, badRequest("Missing required parameter: 'messages'.")
	}
	if len(req.Messages) == 0 {
		return nil, badRequest("[] is too short - 'messages'")
	}
	c.stream = req.Stream
	c.includeUsage = req.StreamOptions != nil && req.StreamOptions.IncludeUsage
	c.hasTools = len(req.Tools)+len(req.Functions) > 0
	for _, t := range req.Tools {
		c.raw(len(t))
	}
	for _, t := range req.Functions {
		c.raw(len(t))
	}
	switch {
	case req.MaxCompletionTokens != nil:
		c.maxTokens = *req.MaxCompletionTokens
	case req.MaxTokens != nil:
		c.maxTokens = *req.MaxTokens
	}
	for i, m := range req.Messages {
		text, err := chatText(m.Content)
		if err != nil {
			return nil, badRequest("Invalid value for 'messages[%d].content': %v", i, err)
		}
		switch m.Role {
		case "":
			return nil, badRequest("Missing required parameter: 'messages[%d].role'.", i)
		case "system", "developer":
			c.addSystem(text)
			continue
		}
		c.message(m.Role)
		if m.Role == "tool" || m.Role == "function" {
			c.toolResult(text, false)
			continue
		}
		c.text(text)
		for _, tc := range m.ToolCalls {
			c.raw(len(tc.Function.Name) + len(tc.Function.Arguments))
		}
	}
	return c, nil
}

// chatText flattens message content: a string, null, or parts.
func chatText(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	if raw[0] == '"' {
		var s string
		err := json.Unmarshal(raw, &s)
		return s, err
	}
	var parts []chatPart
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", badRequest("expected a string or an array of content parts")
	}
	var s string
	for _, p := range parts {
		s += p.Text
	}
	return s, nil
}

func openAIBadJSON(err error) error {
	return badRequest("We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON. If you have trouble figuring out how to fix this, please contact us through our help center at help.openai.com.) (%v)", err)
}

type chatUsage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
		AudioTokens  int `json:"audio_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails struct {
		ReasoningTokens          int `json:"reasoning_tokens"`
		AudioTokens              int `json:"audio_tokens"`
		AcceptedPredictionTokens int `json:"accepted_prediction_tokens"`
		RejectedPredictionTokens int `json:"rejected_prediction_tokens"`
	} `json:"completion_tokens_details"`
}

type chatFunction struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

type chatToolCall struct {
	Index    *int         `json:"index,omitempty"`
	ID       string       `json:"id,omitempty"`
	Type     string       `json:"type,omitempty"`
	Function chatFunction `json:"function"`
}

type chatOutMessage struct {
	Role        string         `json:"role"`
	Content     *string        `json:"content"`
	Refusal     *string        `json:"refusal"`
	ToolCalls   []chatToolCall `json:"tool_calls,omitempty"`
	Annotations []any          `json:"annotations"`
}

type chatChoice struct {
	Index        int            `json:"index"`
	Message      chatOutMessage `json:"message"`
	Logprobs     *struct{}      `json:"logprobs"`
	FinishReason string         `json:"finish_reason"`
}

type chatCompletion struct {
	ID                string       `json:"id"`
	Object            string       `json:"object"`
	Created           int64        `json:"created"`
	Model             string       `json:"model"`
	Choices           []chatChoice `json:"choices"`
	Usage             *chatUsage   `json:"usage,omitempty"`
	ServiceTier       string       `json:"service_tier"`
	SystemFingerprint string       `json:"system_fingerprint"`
}

type chatDelta struct {
	Role      string         `json:"role,omitempty"`
	Content   *string        `json:"content,omitempty"`
	ToolCalls []chatToolCall `json:"tool_calls,omitempty"`
}

type chatChunkChoice struct {
	Index        int       `json:"index"`
	Delta        chatDelta `json:"delta"`
	Logprobs     *struct{} `json:"logprobs"`
	FinishReason *string   `json:"finish_reason"`
}

type chatChunk struct {
	ID                string            `json:"id"`
	Object            string            `json:"object"`
	Created           int64             `json:"created"`
	Model             string            `json:"model"`
	ServiceTier       string            `json:"service_tier"`
	SystemFingerprint string            `json:"system_fingerprint"`
	Choices           []chatChunkChoice `json:"choices"`
	Usage             json.RawMessage   `json:"usage,omitempty"`
}

func chatFinish(s stopReason) string {
	switch s {
	case stopTool:
		return "tool_calls"
	case stopMax:
		return "length"
	default:
		return "stop"
	}
}

func (rep *reply) chatUsage() *chatUsage {
	return &chatUsage{PromptTokens: rep.in, CompletionTokens: rep.out, TotalTokens: rep.in + rep.out}
}

const systemFingerprint = "fp_11fake0000"

func (x *exchange) writeChat(p *plan) {
	rep := x.rep
	rep.id = x.s.ids.nextN("chatcmpl-", 29)
	created := x.start.Unix()
	if !x.c.stream {
		msg := chatOutMessage{Role: "assistant", Annotations: []any{}}
		if rep.text != "" || len(rep.calls) == 0 {
			t := rep.text
			msg.Content = &t
		}
		for _, tc := range rep.calls {
			msg.ToolCalls = append(msg.ToolCalls, chatToolCall{ID: tc.id, Type: "function", Function: chatFunction{Name: tc.name, Arguments: string(tc.args)}})
		}
		body, _ := json.Marshal(chatCompletion{
			ID: rep.id, Object: "chat.completion", Created: created, Model: x.c.model,
			Choices: []chatChoice{{Message: msg, FinishReason: chatFinish(rep.stop)}}, Usage: rep.chatUsage(),
			ServiceTier: "default", SystemFingerprint: systemFingerprint,
		})
		x.sendBody(ctJSON, body, p)
		return
	}
	var evs []event
	null := json.RawMessage(nil)
	if x.c.includeUsage {
		null = json.RawMessage("null")
	}
	add := func(d chatDelta, finish *string) {
		b, _ := json.Marshal(chatChunk{ID: rep.id, Object: "chat.completion.chunk", Created: created, Model: x.c.model,
			ServiceTier: "default", SystemFingerprint: systemFingerprint,
			Choices: []chatChunkChoice{{Delta: d, FinishReason: finish}}, Usage: null})
		evs = append(evs, event{data: b})
	}
	empty := ""
	add(chatDelta{Role: "assistant", Content: &empty}, nil)
	for _, piece := range chunks(rep.text, x.chunkBytes()) {
		add(chatDelta{Content: &piece}, nil)
	}
	for i, tc := range rep.calls {
		add(chatDelta{ToolCalls: []chatToolCall{{Index: &i, ID: tc.id, Type: "function", Function: chatFunction{Name: tc.name}}}}, nil)
		for _, piece := range jsonPieces(tc.args) {
			add(chatDelta{ToolCalls: []chatToolCall{{Index: &i, Function: chatFunction{Arguments: piece}}}}, nil)
		}
	}
	finish := chatFinish(rep.stop)
	add(chatDelta{}, &finish)
	if x.c.includeUsage {
		u, _ := json.Marshal(rep.chatUsage())
		b, _ := json.Marshal(chatChunk{ID: rep.id, Object: "chat.completion.chunk", Created: created, Model: x.c.model,
			ServiceTier: "default", SystemFingerprint: systemFingerprint, Choices: []chatChunkChoice{}, Usage: u})
		evs = append(evs, event{data: b})
	}
	evs = append(evs, event{data: []byte("[DONE]")})
	errEv := event{data: []byte(`{"error":{"message":"The server had an error while processing your request. Sorry about that!","type":"server_error","param":null,"code":null}}`)}
	x.sendStream(ctSSE, frameData, evs, errEv, p)
}

// Embeddings.

type embedRequest struct {
	Model          *string         `json:"model"`
	Input          json.RawMessage `json:"input"`
	Dimensions     int             `json:"dimensions"`
	EncodingFormat string          `json:"encoding_format"`
}

func parseEmbeddings(body []byte, deployment string) (*convo, error) {
	var req embedRequest
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
		return nil, badRequest("you must provide a model parameter")
	}
	if len(req.Input) == 0 || string(req.Input) == "null" {
		return nil, badRequest("Missing required parameter: 'input'.")
	}
	if req.Dimensions < 0 || req.Dimensions > 4096 {
		return nil, badRequest("Invalid value for 'dimensions': must be between 1 and 4096.")
	}
	switch req.EncodingFormat {
	case "", "float", "base64":
	default:
		return nil, badRequest("Invalid value for 'encoding_format': %q is not one of float, base64.", req.EncodingFormat)
	}
	var inputs []string
	var one string
	var tokens []int
	var tokenLists [][]int
	switch {
	case json.Unmarshal(req.Input, &one) == nil:
		inputs = []string{one}
	case json.Unmarshal(req.Input, &inputs) == nil:
	case json.Unmarshal(req.Input, &tokens) == nil:
		inputs = []string{fmt.Sprint(tokens)}
		c.raw(4*len(tokens) - len(inputs[0]))
	case json.Unmarshal(req.Input, &tokenLists) == nil:
		for _, tl := range tokenLists {
			inputs = append(inputs, fmt.Sprint(tl))
			c.raw(4*len(tl) - len(inputs[len(inputs)-1]))
		}
	default:
		return nil, badRequest("Invalid value for 'input': expected a string, an array of strings or token arrays.")
	}
	if len(inputs) == 0 {
		return nil, badRequest("'$.input' is invalid: the array is empty.")
	}
	if len(inputs) > 2048 {
		return nil, badRequest("Invalid 'input': maximum 2048 inputs per request, got %d.", len(inputs))
	}
	c.texts = inputs
	for _, s := range inputs {
		c.chars += len(s)
	}
	c.embed = &embedSpec{dims: req.Dimensions, base64: req.EncodingFormat == "base64"}
	return c, nil
}

// embedSpec is what an embeddings request asked for.
type embedSpec struct {
	dims   int
	base64 bool
}

func (x *exchange) writeEmbeddings(p *plan) {
	spec := x.c.embed
	dims := spec.dims
	if dims == 0 {
		dims = 1536
	}
	data := make([]map[string]any, len(x.c.texts))
	for i, s := range x.c.texts {
		vec := embedding(s, dims)
		var v any = vec
		if spec.base64 {
			buf := make([]byte, 4*len(vec))
			for j, f := range vec {
				binary.LittleEndian.PutUint32(buf[4*j:], math.Float32bits(f))
			}
			v = base64.StdEncoding.EncodeToString(buf)
		}
		data[i] = map[string]any{"object": "embedding", "index": i, "embedding": v}
	}
	in := x.rep.in
	body, _ := json.Marshal(map[string]any{"object": "list", "data": data, "model": x.c.model,
		"usage": map[string]int{"prompt_tokens": in, "total_tokens": in}})
	x.sendBody(ctJSON, body, p)
}

// embedding is a deterministic unit vector derived from s.
func embedding(s string, dims int) []float32 {
	h := fnv.New64a()
	h.Write([]byte(s))
	seed := h.Sum64()
	vec := make([]float32, dims)
	var norm float64
	for i := range vec {
		seed = splitmix(seed)
		f := float64(int64(seed>>11))/float64(1<<52) - 1
		vec[i] = float32(f)
		norm += f * f
	}
	norm = math.Sqrt(norm)
	if norm > 0 {
		for i := range vec {
			vec[i] = float32(float64(vec[i]) / norm)
		}
	}
	return vec
}
