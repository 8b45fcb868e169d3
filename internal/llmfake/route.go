package llmfake

import (
	"net/http"
	"strings"
)

// endpoint is one API operation.
type endpoint int

const (
	epNone endpoint = iota
	epMessages
	epCountTokens
	epAnthropicModels
	epChat
	epResponses
	epEmbeddings
	epOpenAIModels
	epGenerate
	epStreamGenerate
	epGeminiCount
	epGeminiModels
	epOllamaChat
	epOllamaGenerate
	epOllamaTags
	epOllamaVersion
)

func (e endpoint) isPost() bool {
	switch e {
	case epAnthropicModels, epOpenAIModels, epGeminiModels, epOllamaTags, epOllamaVersion:
		return false
	}
	return true
}

// routed is where a request goes: its dialect, the operation, and a model
// named by the path (Gemini's models/{m}:…, Azure's deployments/{dep}, the
// id of GET /v1/models/{id}).
type routed struct {
	d     dialect
	ep    endpoint
	model string
}

// route maps a path to an endpoint. Paths of no provider get epNone and the
// dialect the request most likely expects, for a 404 in its shape.
func route(r *http.Request, f Format) routed {
	p := r.URL.Path
	switch p {
	case "/v1/messages":
		return routed{d: dAnthropic, ep: epMessages}
	case "/v1/messages/count_tokens":
		return routed{d: dAnthropic, ep: epCountTokens}
	case "/v1/chat/completions", "/openai/v1/chat/completions", "/v1beta/openai/chat/completions":
		return routed{d: dOpenAI, ep: epChat}
	case "/v1/responses", "/openai/v1/responses":
		return routed{d: dOpenAI, ep: epResponses}
	case "/v1/embeddings", "/openai/v1/embeddings", "/v1beta/openai/embeddings":
		return routed{d: dOpenAI, ep: epEmbeddings}
	case "/openai/v1/models", "/v1beta/openai/models":
		return routed{d: dOpenAI, ep: epOpenAIModels}
	case "/api/chat":
		return routed{d: dOllama, ep: epOllamaChat}
	case "/api/generate":
		return routed{d: dOllama, ep: epOllamaGenerate}
	case "/api/tags":
		return routed{d: dOllama, ep: epOllamaTags}
	case "/api/version":
		return routed{d: dOllama, ep: epOllamaVersion}
	case "/v1beta/models":
		return routed{d: dGemini, ep: epGeminiModels}
	}
	if rest, ok := strings.CutPrefix(p, "/openai/deployments/"); ok {
		dep, op, _ := strings.Cut(rest, "/")
		switch op {
		case "chat/completions":
			return routed{d: dOpenAI, ep: epChat, model: dep}
		case "responses":
			return routed{d: dOpenAI, ep: epResponses, model: dep}
		case "embeddings":
			return routed{d: dOpenAI, ep: epEmbeddings, model: dep}
		}
		return routed{d: dOpenAI}
	}
	for _, prefix := range []string{"/v1beta/models/", "/v1/models/"} {
		rest, ok := strings.CutPrefix(p, prefix)
		if !ok {
			continue
		}
		if model, method, ok := strings.Cut(rest, ":"); ok {
			switch method {
			case "generateContent":
				return routed{d: dGemini, ep: epGenerate, model: model}
			case "streamGenerateContent":
				return routed{d: dGemini, ep: epStreamGenerate, model: model}
			case "countTokens":
				return routed{d: dGemini, ep: epGeminiCount, model: model}
			}
			return routed{d: dGemini}
		}
		if prefix == "/v1beta/models/" {
			return routed{d: dGemini, ep: epGeminiModels, model: rest}
		}
		if modelsDialect(r, f) == dAnthropic {
			return routed{d: dAnthropic, ep: epAnthropicModels, model: rest}
		}
		return routed{d: dOpenAI, ep: epOpenAIModels, model: rest}
	}
	if p == "/v1/models" {
		if modelsDialect(r, f) == dAnthropic {
			return routed{d: dAnthropic, ep: epAnthropicModels}
		}
		return routed{d: dOpenAI, ep: epOpenAIModels}
	}
	return routed{d: guessDialect(r, f)}
}

// modelsDialect decides who GET /v1/models is for: both Anthropic and
// OpenAI serve it.
func modelsDialect(r *http.Request, f Format) dialect {
	switch f {
	case FormatAnthropic:
		return dAnthropic
	case FormatOpenAI:
		return dOpenAI
	}
	if r.Header.Get("Anthropic-Version") != "" || r.Header.Get("X-Api-Key") != "" {
		return dAnthropic
	}
	return dOpenAI
}

func guessDialect(r *http.Request, f Format) dialect {
	if f != "" && f != FormatAuto {
		return formatDialect(f)
	}
	p, h := r.URL.Path, r.Header
	switch {
	case strings.HasPrefix(p, "/openai/"):
		return dOpenAI
	case strings.HasPrefix(p, "/v1beta"):
		return dGemini
	case strings.HasPrefix(p, "/api/"):
		return dOllama
	case h.Get("Anthropic-Version") != "" || h.Get("X-Api-Key") != "":
		return dAnthropic
	case h.Get("X-Goog-Api-Key") != "":
		return dGemini
	case h.Get("Authorization") != "" || h.Get("Api-Key") != "":
		return dOpenAI
	}
	return dAnthropic
}
