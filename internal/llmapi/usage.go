package llmapi

import "errors"

// Usage is the token accounting of one request, normalised across
// providers so that every token class is counted once.
type Usage struct {
	// InputTokens is uncached input: Anthropic input_tokens; OpenAI
	// prompt_tokens (or Responses input_tokens) minus cached_tokens; Gemini
	// promptTokenCount minus cachedContentTokenCount plus
	// toolUsePromptTokenCount; Ollama prompt_eval_count.
	InputTokens int64
	// OutputTokens includes reasoning tokens (Gemini thoughtsTokenCount is
	// added to candidatesTokenCount).
	OutputTokens int64
	// CacheCreationInputTokens is every cache write; CacheCreation5m and
	// CacheCreation1h are its breakdown by TTL when the provider reports one
	// (Anthropic cache_creation.ephemeral_{5m,1h}_input_tokens).
	CacheCreationInputTokens int64
	CacheCreation5m          int64
	CacheCreation1h          int64
	// CacheReadInputTokens is input served from the cache (Anthropic
	// cache_read_input_tokens, OpenAI cached_tokens, Gemini
	// cachedContentTokenCount).
	CacheReadInputTokens int64
	// ReasoningTokens is the part of OutputTokens spent on reasoning; it is
	// informational and already counted in OutputTokens.
	ReasoningTokens int64
	// Estimated is true when the provider's final usage never arrived and
	// some counts are estimates.
	Estimated bool
}

// TotalInput is every input token: uncached, cache writes and cache reads.
func (u Usage) TotalInput() int64 {
	return u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens
}

// ErrNoUsage is returned by UsageFromJSON when the body has no usage.
var ErrNoUsage = errors.New("llmapi: no usage in body")

// UsageFromJSON extracts the usage of a non-streaming response body:
// Anthropic usage (with cache_creation), OpenAI chat, completions and
// embeddings usage (with prompt_tokens_details), Responses usage (top level
// or under "response"), Gemini usageMetadata (also from a JSON array of
// chunks, keeping the latest values), Ollama prompt_eval_count and
// eval_count. The member names are distinct across providers, so the body
// is recognised by them; p and e name what the caller expects and decide
// nothing today. A malformed body gives an error matching ErrMalformedBody;
// a body without usage gives ErrNoUsage.
func UsageFromJSON(p Provider, e Endpoint, body []byte) (Usage, error) {
	_, _ = p, e
	var r rawUsage
	s := newScanner(body)
	if s.peek() == '[' {
		s.enterArray()
		for i := 0; s.elem(i); i++ {
			r.topLevel(&s)
		}
	} else {
		r.topLevel(&s)
	}
	s.end()
	if s.err != nil {
		return Usage{}, s.err
	}
	if r.set == 0 {
		return Usage{}, ErrNoUsage
	}
	return r.usage(), nil
}

// topLevel reads the usage members of one response object.
func (r *rawUsage) topLevel(s *scanner) {
	if !s.enterObject() {
		return
	}
	for i := 0; s.member(i); i++ {
		switch string(s.key) {
		case "usage":
			r.parseUsage(s)
		case "usageMetadata", "usage_metadata":
			r.parseGemini(s)
		case "prompt_eval_count":
			r.putInt(s, slotOllamaPrompt)
		case "eval_count":
			r.putInt(s, slotOllamaEval)
		case "response":
			if s.enterObject() {
				for j := 0; s.member(j); j++ {
					if string(s.key) == "usage" {
						r.parseUsage(s)
					} else {
						s.skip()
					}
				}
			}
		default:
			s.skip()
		}
	}
}

// slot indexes one raw usage counter as a provider names it.
type slot uint8

const (
	slotInput         slot = iota // input_tokens
	slotOutput                    // output_tokens
	slotCacheCreation             // cache_creation_input_tokens
	slotCacheRead                 // cache_read_input_tokens
	slot5m                        // cache_creation.ephemeral_5m_input_tokens
	slot1h                        // cache_creation.ephemeral_1h_input_tokens
	slotPrompt                    // prompt_tokens
	slotCompletion                // completion_tokens
	slotCached                    // {prompt,input}_tokens_details.cached_tokens
	slotReasoning                 // {completion,output}_tokens_details.reasoning_tokens
	slotGPrompt                   // promptTokenCount
	slotGCached                   // cachedContentTokenCount
	slotGCandidates               // candidatesTokenCount
	slotGThoughts                 // thoughtsTokenCount
	slotGToolUse                  // toolUsePromptTokenCount
	slotOllamaPrompt              // prompt_eval_count
	slotOllamaEval                // eval_count
	numSlots
)

// rawUsage holds the latest value of every usage counter seen, as the
// provider named it. Streams overwrite a counter each time it appears and
// never add, because Anthropic message_delta and Gemini usageMetadata values
// are cumulative.
type rawUsage struct {
	v   [numSlots]int64
	set uint32
}

func (r *rawUsage) has(k slot) bool { return r.set&(1<<k) != 0 }

func (r *rawUsage) putInt(s *scanner, k slot) {
	if n, ok := s.int(); ok {
		r.v[k] = n
		r.set |= 1 << k
	}
}

// parseUsage reads an Anthropic or OpenAI usage object; null is ignored.
func (r *rawUsage) parseUsage(s *scanner) {
	if !s.enterObject() {
		return
	}
	for i := 0; s.member(i); i++ {
		switch string(s.key) {
		case "input_tokens":
			r.putInt(s, slotInput)
		case "output_tokens":
			r.putInt(s, slotOutput)
		case "cache_creation_input_tokens":
			r.putInt(s, slotCacheCreation)
		case "cache_read_input_tokens":
			r.putInt(s, slotCacheRead)
		case "prompt_tokens":
			r.putInt(s, slotPrompt)
		case "completion_tokens":
			r.putInt(s, slotCompletion)
		case "cache_creation":
			r.parseNested(s, "ephemeral_5m_input_tokens", slot5m, "ephemeral_1h_input_tokens", slot1h)
		case "prompt_tokens_details", "input_tokens_details":
			r.parseNested(s, "cached_tokens", slotCached, "", 0)
		case "completion_tokens_details", "output_tokens_details":
			r.parseNested(s, "reasoning_tokens", slotReasoning, "", 0)
		default:
			s.skip()
		}
	}
}

func (r *rawUsage) parseNested(s *scanner, k1 string, s1 slot, k2 string, s2 slot) {
	if !s.enterObject() {
		return
	}
	for i := 0; s.member(i); i++ {
		switch string(s.key) {
		case k1:
			r.putInt(s, s1)
		case k2:
			r.putInt(s, s2)
		default:
			s.skip()
		}
	}
}

// parseGemini reads a usageMetadata object.
func (r *rawUsage) parseGemini(s *scanner) {
	if !s.enterObject() {
		return
	}
	for i := 0; s.member(i); i++ {
		switch string(s.key) {
		case "promptTokenCount":
			r.putInt(s, slotGPrompt)
		case "cachedContentTokenCount":
			r.putInt(s, slotGCached)
		case "candidatesTokenCount":
			r.putInt(s, slotGCandidates)
		case "thoughtsTokenCount":
			r.putInt(s, slotGThoughts)
		case "toolUsePromptTokenCount":
			r.putInt(s, slotGToolUse)
		default:
			s.skip()
		}
	}
}

const geminiSlots = 1<<slotGPrompt | 1<<slotGCached | 1<<slotGCandidates | 1<<slotGThoughts | 1<<slotGToolUse

// hasInput reports whether any input counter was seen.
func (r *rawUsage) hasInput() bool {
	return r.set&(1<<slotInput|1<<slotPrompt|1<<slotGPrompt|1<<slotOllamaPrompt|1<<slotCacheRead|1<<slotCacheCreation) != 0
}

// usage normalises the raw counters; negative counters count as 0.
func (r *rawUsage) usage() Usage {
	v := r.v
	for i := range v {
		v[i] = max(v[i], 0)
	}
	var u Usage
	switch {
	case r.has(slotPrompt) || r.has(slotCompletion): // OpenAI chat, completions, embeddings
		u.InputTokens = max(v[slotPrompt]-v[slotCached], 0)
		u.CacheReadInputTokens = v[slotCached]
		u.OutputTokens = v[slotCompletion]
		u.ReasoningTokens = v[slotReasoning]
	case r.set&geminiSlots != 0:
		u.InputTokens = max(v[slotGPrompt]-v[slotGCached], 0) + v[slotGToolUse]
		u.CacheReadInputTokens = v[slotGCached]
		u.OutputTokens = v[slotGCandidates] + v[slotGThoughts]
		u.ReasoningTokens = v[slotGThoughts]
	case r.has(slotOllamaPrompt) || r.has(slotOllamaEval):
		u.InputTokens = v[slotOllamaPrompt]
		u.OutputTokens = v[slotOllamaEval]
	default: // Anthropic, or Responses (whose input_tokens include cached_tokens)
		u.InputTokens = max(v[slotInput]-v[slotCached], 0)
		u.CacheReadInputTokens = v[slotCacheRead] + v[slotCached]
		u.CacheCreation5m = v[slot5m]
		u.CacheCreation1h = v[slot1h]
		u.CacheCreationInputTokens = max(v[slotCacheCreation], v[slot5m]+v[slot1h])
		u.OutputTokens = v[slotOutput]
		u.ReasoningTokens = v[slotReasoning]
	}
	return u
}
