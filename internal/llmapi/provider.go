package llmapi

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// Provider names an LLM API family. The zero value is no provider.
type Provider uint8

// The providers llmapi knows. OpenAICompatible is any server that speaks the
// OpenAI wire format (vLLM, LM Studio, OpenRouter, ...).
const (
	Anthropic Provider = iota + 1
	OpenAI
	Azure
	Gemini
	Ollama
	OpenAICompatible
)

var providerNames = [...]string{
	Anthropic:        "anthropic",
	OpenAI:           "openai",
	Azure:            "azure",
	Gemini:           "gemini",
	Ollama:           "ollama",
	OpenAICompatible: "openai-compatible",
}

// String returns the provider's configuration name ("anthropic", ...), or
// "" for the zero value.
func (p Provider) String() string {
	if int(p) < len(providerNames) {
		return providerNames[p]
	}
	return fmt.Sprintf("Provider(%d)", p)
}

// ErrUnknownProvider is returned by ParseProvider for a name it does not know.
var ErrUnknownProvider = errors.New("llmapi: unknown provider")

// ParseProvider parses a configuration name, case-insensitively. Besides the
// names String returns it accepts the aliases "azure-openai", "google" and
// "compatible".
func ParseProvider(s string) (Provider, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "anthropic", "claude":
		return Anthropic, nil
	case "openai":
		return OpenAI, nil
	case "azure", "azure-openai", "azure_openai":
		return Azure, nil
	case "gemini", "google":
		return Gemini, nil
	case "ollama":
		return Ollama, nil
	case "openai-compatible", "openai_compatible", "compatible":
		return OpenAICompatible, nil
	}
	return 0, fmt.Errorf("%w %q (want anthropic, openai, azure, gemini, ollama or openai-compatible)", ErrUnknownProvider, s)
}

// Endpoint is the kind of API call a request path names. It decides the wire
// format of the body: EndpointMessages and EndpointCountTokens are Anthropic's;
// chat, responses, embeddings and completions are OpenAI's (whoever serves
// them: Azure, Ollama's /v1, Gemini's /v1beta/openai); generate and
// stream_generate are Gemini's; the ollama_ kinds are Ollama's native API.
type Endpoint uint8

// Endpoint kinds. EndpointOther is every path llmapi does not interpret; it
// is passed through unchanged.
const (
	EndpointOther Endpoint = iota
	EndpointMessages
	EndpointCountTokens
	EndpointChat
	EndpointResponses
	EndpointEmbeddings
	EndpointCompletions
	EndpointGenerate
	EndpointStreamGenerate
	EndpointOllamaChat
	EndpointOllamaGenerate
	EndpointModels
)

var endpointNames = [...]string{
	EndpointOther:          "other",
	EndpointMessages:       "messages",
	EndpointCountTokens:    "count_tokens",
	EndpointChat:           "chat",
	EndpointResponses:      "responses",
	EndpointEmbeddings:     "embeddings",
	EndpointCompletions:    "completions",
	EndpointGenerate:       "generate",
	EndpointStreamGenerate: "stream_generate",
	EndpointOllamaChat:     "ollama_chat",
	EndpointOllamaGenerate: "ollama_generate",
	EndpointModels:         "models",
}

// String returns the endpoint's name as used in logs and metrics ("chat").
func (e Endpoint) String() string {
	if int(e) < len(endpointNames) {
		return endpointNames[e]
	}
	return fmt.Sprintf("Endpoint(%d)", e)
}

// Framing is how a response body is delimited.
type Framing uint8

// Framings: one JSON document; server-sent events; newline-delimited JSON
// (Ollama's native streams); one JSON array delivered incrementally (Gemini
// streamGenerateContent without alt=sse).
const (
	FramingJSON Framing = iota
	FramingSSE
	FramingNDJSON
	FramingJSONArray
)

// String returns "json", "sse", "ndjson" or "json_array".
func (f Framing) String() string {
	switch f {
	case FramingJSON:
		return "json"
	case FramingSSE:
		return "sse"
	case FramingNDJSON:
		return "ndjson"
	case FramingJSONArray:
		return "json_array"
	}
	return fmt.Sprintf("Framing(%d)", f)
}

// EndpointOf classifies a request path. It matches path suffixes, so a
// gateway base path or an Azure deployment prefix does not matter, and it
// never fails: an unknown path is EndpointOther.
func EndpointOf(path string) Endpoint {
	path = strings.TrimRight(path, "/")
	if i := strings.LastIndexByte(path, '/'); i >= 0 {
		if last := path[i+1:]; strings.IndexByte(last, ':') >= 0 && strings.Contains(path[:i+1], "models/") {
			_, method, _ := strings.Cut(last, ":")
			switch method {
			case "generateContent":
				return EndpointGenerate
			case "streamGenerateContent":
				return EndpointStreamGenerate
			case "countTokens":
				return EndpointCountTokens
			case "embedContent", "batchEmbedContents":
				return EndpointEmbeddings
			}
			if !strings.ContainsAny(method, ":-.") {
				return EndpointOther // another Gemini method
			}
			// An OpenAI fine-tuned model id ("/v1/models/ft:gpt-4o:acme::abc").
		}
	}
	switch {
	case strings.HasSuffix(path, "/v1/messages"):
		return EndpointMessages
	case strings.HasSuffix(path, "/v1/messages/count_tokens"):
		return EndpointCountTokens
	case strings.HasSuffix(path, "/chat/completions"):
		return EndpointChat
	case strings.HasSuffix(path, "/completions"):
		return EndpointCompletions
	case strings.HasSuffix(path, "/responses"):
		return EndpointResponses
	case strings.HasSuffix(path, "/embeddings"): // also Ollama's legacy /api/embeddings
		return EndpointEmbeddings
	case strings.HasSuffix(path, "/api/chat"):
		return EndpointOllamaChat
	case strings.HasSuffix(path, "/api/generate"):
		return EndpointOllamaGenerate
	case strings.HasSuffix(path, "/api/embed"):
		return EndpointEmbeddings
	case strings.HasSuffix(path, "/api/tags"), strings.HasSuffix(path, "/models"):
		return EndpointModels
	}
	if i := strings.LastIndex(path, "/models/"); i >= 0 && strings.IndexByte(path[i+len("/models/"):], '/') < 0 {
		return EndpointModels // GET /v1/models/{id}
	}
	return EndpointOther
}

// Detect guesses the provider of a request when the upstream has none
// configured. Headers decide first: anthropic-version or x-api-key mean
// Anthropic; an api-key header or an /openai/ path prefix mean Azure;
// x-goog-api-key, a key query parameter or a models/{m}:method path mean
// Gemini; Ollama's /api/ paths mean Ollama. Then the path: /v1/messages is
// Anthropic, the other OpenAI paths are OpenAI. A request with no signal at
// all is OpenAICompatible, the most widely spoken format. Detect never fails.
func Detect(r *http.Request) Provider {
	h := r.Header
	path := ""
	var hasKey bool
	if r.URL != nil {
		path = r.URL.Path
		hasKey = strings.Contains(r.URL.RawQuery, "key=") && r.URL.Query().Has("key")
	}
	switch {
	case has(h, "Anthropic-Version"), has(h, "X-Api-Key"):
		return Anthropic
	case has(h, "Api-Key"), strings.HasPrefix(path, "/openai/"):
		return Azure
	case has(h, "X-Goog-Api-Key"), hasKey:
		return Gemini
	}
	switch EndpointOf(path) {
	case EndpointGenerate, EndpointStreamGenerate:
		return Gemini
	case EndpointOllamaChat, EndpointOllamaGenerate:
		return Ollama
	case EndpointMessages:
		return Anthropic
	case EndpointCountTokens:
		if strings.Contains(path, "/v1/messages/") {
			return Anthropic
		}
		return Gemini
	case EndpointEmbeddings:
		if strings.Contains(path, "/api/embed") {
			return Ollama
		}
		if strings.Contains(path, "models/") && strings.Contains(path, ":") {
			return Gemini
		}
		return OpenAI
	case EndpointChat, EndpointResponses, EndpointCompletions:
		return OpenAI
	case EndpointModels:
		switch {
		case strings.HasSuffix(path, "/api/tags"):
			return Ollama
		case strings.HasPrefix(path, "/v1beta/"):
			return Gemini
		}
		return OpenAI
	}
	if strings.HasPrefix(path, "/api/") {
		return Ollama // /api/ps, /api/show, /api/version, ...
	}
	return OpenAICompatible
}

func has(h http.Header, canonicalKey string) bool {
	v := h[canonicalKey]
	return len(v) > 0
}

// dialect is the wire format of one request/response pair.
type dialect uint8

const (
	dialectAnthropic  dialect = iota + 1
	dialectChat               // OpenAI chat completions and legacy completions
	dialectResponses          // OpenAI Responses API
	dialectEmbeddings         // OpenAI / Ollama / Gemini embeddings
	dialectGemini
	dialectOllama
)

// dialectOf decides the wire format from the endpoint first (Ollama's /v1
// speaks OpenAI whatever the provider), then from the provider.
func dialectOf(p Provider, e Endpoint) dialect {
	switch e {
	case EndpointMessages:
		return dialectAnthropic
	case EndpointChat, EndpointCompletions:
		return dialectChat
	case EndpointResponses:
		return dialectResponses
	case EndpointEmbeddings:
		return dialectEmbeddings
	case EndpointGenerate, EndpointStreamGenerate:
		return dialectGemini
	case EndpointOllamaChat, EndpointOllamaGenerate:
		return dialectOllama
	}
	switch p {
	case Anthropic:
		return dialectAnthropic
	case Gemini:
		return dialectGemini
	case Ollama:
		return dialectOllama
	}
	return dialectChat
}
