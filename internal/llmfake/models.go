package llmfake

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// Model lists and token counting: answered at once, outside the limiter.

type modelIDs struct{ anthropic, openai, gemini, ollama string }

// modelList is the model ids every format lists.
func modelList() []modelIDs {
	return []modelIDs{
		{"claude-sonnet-4-5-20250929", "gpt-4o", "gemini-2.5-flash", "llama3.2:latest"},
		{"claude-haiku-4-5-20251001", "gpt-4o-mini", "gemini-2.5-pro", "qwen2.5-coder:7b"},
		{"claude-opus-4-1-20250805", "text-embedding-3-small", "gemini-2.0-flash", "mistral:latest"},
	}
}

const fakeCreated = 1735689600 // 2025-01-01T00:00:00Z

func (x *exchange) listModels() {
	var v any
	one := x.model
	fakeModels := modelList()
	switch x.ep {
	case epAnthropicModels:
		entry := func(id string) map[string]any {
			return map[string]any{"type": "model", "id": id, "display_name": id, "created_at": "2025-01-01T00:00:00Z"}
		}
		if one != "" {
			v = entry(one)
			break
		}
		var data []any
		for _, m := range fakeModels {
			data = append(data, entry(m.anthropic))
		}
		v = map[string]any{"data": data, "has_more": false, "first_id": fakeModels[0].anthropic, "last_id": fakeModels[len(fakeModels)-1].anthropic}
	case epOpenAIModels:
		entry := func(id string) map[string]any {
			return map[string]any{"id": id, "object": "model", "created": fakeCreated, "owned_by": "llmfake"}
		}
		if one != "" {
			v = entry(one)
			break
		}
		var data []any
		for _, m := range fakeModels {
			data = append(data, entry(m.openai))
		}
		v = map[string]any{"object": "list", "data": data}
	case epGeminiModels:
		entry := func(id string) map[string]any {
			return map[string]any{"name": "models/" + id, "version": "001", "displayName": id, "inputTokenLimit": 1048576,
				"outputTokenLimit": 65536, "supportedGenerationMethods": []string{"generateContent", "countTokens"}}
		}
		if one != "" {
			v = entry(one)
			break
		}
		var models []any
		for _, m := range fakeModels {
			models = append(models, entry(m.gemini))
		}
		v = map[string]any{"models": models}
	case epOllamaTags:
		var models []any
		for _, m := range fakeModels {
			models = append(models, map[string]any{"name": m.ollama, "model": m.ollama, "modified_at": "2025-01-01T00:00:00Z",
				"size": 2019393189, "digest": "0000000000000000000000000000000000000000000000000000000000000000",
				"details": map[string]any{"format": "gguf", "family": "llama", "parameter_size": "3.2B", "quantization_level": "Q4_K_M"}})
		}
		v = map[string]any{"models": models}
	case epOllamaVersion:
		v = map[string]string{"version": "0.12.0"}
	}
	x.ok(v)
}

func (x *exchange) countTokens() {
	n := x.c.inputTokens()
	if x.ep == epGeminiCount {
		x.ok(map[string]int{"totalTokens": n})
		return
	}
	x.ok(map[string]int{"input_tokens": n})
}

// ok writes a 200 JSON answer that is not a generation.
func (x *exchange) ok(v any) {
	body, _ := json.Marshal(v)
	x.s.peekHeaders(x)
	x.setHeaders()
	h := x.w.Header()
	h.Set("Content-Type", ctJSON)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	x.status = http.StatusOK
	x.w.WriteHeader(http.StatusOK)
	x.w.Write(body)
	x.finish()
}
