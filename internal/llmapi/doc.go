// Package llmapi holds the wire facts of the LLM APIs the gateway fronts
// (Anthropic, OpenAI Chat and Responses, Azure OpenAI, Gemini, Ollama and
// OpenAI-compatible servers), as small, allocation-conscious functions:
//
//   - Detect, EndpointOf and ParseProvider name the provider and the kind of
//     call;
//   - InspectRequest reads a request body once (model, streaming and its
//     framing, output limit, an input-token estimate, include_usage,
//     metadata.user_id) and InjectIncludeUsage edits an OpenAI body so its
//     stream reports usage;
//   - UsageFromJSON and StreamMeter account tokens from JSON bodies and from
//     SSE, NDJSON and JSON-array streams fed in arbitrary pieces (or event
//     by event, as a WebSocket carries them), and tell a complete stream
//     from a truncated or errored one;
//   - ErrorBody and StreamErrorFrame answer clients in their provider's own
//     error shapes;
//   - ParseRateLimits, RetryAfter and Classify read rate-limit headers and
//     decide whether a failure is retried;
//   - PriceTable prices usage in integer micro-dollars.
//
// JSON is read by a small validating scanner that picks out the members it
// needs, not by reflection. Every parser is lenient: unknown fields, event
// types and headers are ignored, never errors. Nothing here keeps global
// state; all values are safe to share once built, and the push-style
// parsers (StreamMeter, LineSplitter, ArraySplitter) belong to one stream.
// The provider facts and their sources are collected in the project's
// reference notes (providers.md).
package llmapi
