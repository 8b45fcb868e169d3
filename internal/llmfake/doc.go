// Package llmfake is a scripted, fault-injecting model server that speaks the
// wire formats of Anthropic (Messages), OpenAI (Chat Completions, Responses,
// Embeddings, also on Azure paths), Gemini (generateContent,
// streamGenerateContent) and Ollama (/api/chat, /api/generate). Real clients —
// the official SDKs, the Claude Code CLI — talk to it as to the real API. It is
// the only fake in apiary: the gateway, the runtime demo, the swarm and all
// benchmarks run against it, and `apiary mockllm` ships it to users.
//
// A Server is an http.Handler built from a Config, whose zero value is an
// unlimited, fault-free, fast server. Every request to a model endpoint goes
// through the same pipeline, in this order:
//
//  1. The body is read and parsed; malformed JSON or a missing required field
//     is answered with the provider's 400 body and counts toward no limit.
//  2. Concurrency cap (Config.MaxConcurrent, across all keys): over the cap,
//     Anthropic answers 529 overloaded_error, the others 503.
//  3. Rate limits, per API key (x-api-key, api-key, x-goog-api-key,
//     Authorization: Bearer, or ?key=): requests per window, input tokens per
//     window, output tokens per window and total tokens per window. A request
//     is admitted only if one request, its estimated input tokens (also
//     against the total limit) fit and the output budget is not exhausted;
//     otherwise it gets a 429 before any work. On admission the request and
//     its input tokens are charged at once; the output tokens are charged when
//     the reply is generated (after the latency), to the window current then,
//     so — as at the real providers — a window's output count may exceed the
//     output limit by the replies that were already admitted. A request that
//     later fails by an injected fault (5xx, reset, cut) still counts toward
//     the request and input limits, as unsuccessful requests do at OpenAI.
//     Windows are "fixed" (counters reset at boundaries aligned to the time
//     the server was created or last Reset) or "bucket" (continuous refill of
//     limit per window length, capacity = limit, like Anthropic).
//  4. Faults, drawn from one seeded RNG in a fixed order per request, so a
//     sequential run is reproducible from the seed: a TCP reset before any
//     response, a 5xx with the provider's body, a 502 with an empty body, a
//     cut after K stream events (or a truncated non-streaming body), an
//     in-stream error event, latency (base + uniform jitter, spikes times a
//     multiplier) before the response, and a slow first body byte after the
//     headers.
//  5. The reply: a script turn when a script matches the request, otherwise a
//     short deterministic text. Usage always matches what was returned; input
//     tokens are ceil(bytes/4) of the request's text, tool definitions and
//     tool calls and results.
//
// Time: Config.TimeScale multiplies every configured duration (window length,
// latency, jitter, slow first byte, event delay) so a scenario defined in
// minutes runs in seconds. Reset headers and retry-after report the scaled,
// real times; when the scale is not 1, 429s also carry retry-after-ms.
//
// Agent CLIs' transports and shapes: the Responses API is also served over
// a WebSocket (GET /v1/responses with Upgrade, as Codex opens it; see
// websocket.go); tools may come in an additional_tools input item and in
// namespaces; a scripted call with a string input is a freeform
// custom_tool_call; and a Gemini request in JSON mode (responseMimeType
// application/json, with a schema) that no script answers gets JSON valid
// for the schema (jsonmode.go).
//
// Control endpoints, on every format: GET /_health, GET /_stats (Stats as
// JSON), POST /_reset, GET /_config, POST /_config (a JSON merge patch of
// Config, applied live). Serve runs a Server on a listener; Load is a
// closed-loop load generator for benchmarks.
package llmfake
