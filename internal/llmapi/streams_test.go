package llmapi

import (
	"fmt"
	"strings"
)

// Real-looking response streams, in the order providers send their events.

// anthropicWebSearchStream has a server tool: several message_delta events
// whose input and cache counts grow past message_start's (cumulative).
const anthropicWebSearchStream = `event: message_start
data: {"type":"message_start","message":{"id":"msg_01XFDUDYJgAACzvnptvVoYEL","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-5-20250929","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":2679,"cache_creation_input_tokens":1200,"cache_read_input_tokens":3000,"cache_creation":{"ephemeral_5m_input_tokens":200,"ephemeral_1h_input_tokens":1000},"output_tokens":3,"service_tier":"standard"}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}

event: ping
data: {"type": "ping"}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Let me search for that."}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: content_block_start
data: {"type":"content_block_start","index":1,"content_block":{"type":"server_tool_use","id":"srvtoolu_014hJH82Qum7Td6UV8gDXThB","name":"web_search","input":{}}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"query\": \"weather NYC today\"}"}}

event: content_block_stop
data: {"type":"content_block_stop","index":1}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":null,"stop_sequence":null},"usage":{"input_tokens":5012,"cache_creation_input_tokens":1200,"cache_read_input_tokens":3000,"output_tokens":120,"server_tool_use":{"web_search_requests":1}}}

event: ping
data: {"type": "ping"}

event: content_block_start
data: {"type":"content_block_start","index":2,"content_block":{"type":"text","text":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":"It is sunny and 22\u00b0C in New York \"today\"."}}

event: content_block_stop
data: {"type":"content_block_stop","index":2}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"input_tokens":9135,"cache_creation_input_tokens":1200,"cache_read_input_tokens":4500,"output_tokens":512,"server_tool_use":{"web_search_requests":2}}}

event: message_stop
data: {"type":"message_stop"}

`

// anthropicThinkingStream is an ordinary stream with a thinking block.
const anthropicThinkingStream = `event: message_start
data: {"type":"message_start","message":{"id":"msg_01","type":"message","role":"assistant","content":[],"model":"claude-opus-4-1-20250805","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":25,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"The user wants a short greeting."}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: content_block_start
data: {"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Hello!"}}

event: content_block_stop
data: {"type":"content_block_stop","index":1}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":15}}

event: message_stop
data: {"type":"message_stop"}

`

const anthropicErrorStream = `event: message_start
data: {"type":"message_start","message":{"id":"msg_02","type":"message","role":"assistant","content":[],"model":"claude-haiku-4-5","usage":{"input_tokens":40,"output_tokens":1}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Once upon a time"}}

event: error
data: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}

`

func openAIChunk(content string, finish string) string {
	fr := "null"
	if finish != "" {
		fr = `"` + finish + `"`
	}
	return fmt.Sprintf(`data: {"id":"chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG","object":"chat.completion.chunk","created":1741570283,"model":"gpt-4o-2024-08-06","service_tier":"default","system_fingerprint":"fp_fc9f1d7035","choices":[{"index":0,"delta":{"content":%q},"logprobs":null,"finish_reason":%s}],"usage":null}`+"\n\n", content, fr)
}

var openAIChatBody = `data: {"id":"chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG","object":"chat.completion.chunk","created":1741570283,"model":"gpt-4o-2024-08-06","service_tier":"default","system_fingerprint":"fp_fc9f1d7035","choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}],"usage":null}

` + openAIChunk("The capital", "") + openAIChunk(" of France is Paris.", "") + openAIChunk("", "stop")

const openAIUsageChunk = `data: {"id":"chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG","object":"chat.completion.chunk","created":1741570283,"model":"gpt-4o-2024-08-06","service_tier":"default","system_fingerprint":"fp_fc9f1d7035","choices":[],"usage":{"prompt_tokens":1117,"completion_tokens":46,"total_tokens":1163,"prompt_tokens_details":{"cached_tokens":1024,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":12,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}}

`

var (
	openAIStreamWithUsage    = openAIChatBody + openAIUsageChunk + "data: [DONE]\n\n"
	openAIStreamWithoutUsage = openAIChatBody + "data: [DONE]\n\n"
	openAIErrorStream        = openAIChunk("partial", "") + `data: {"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}}` + "\n\n"
)

// azureStream starts with Azure's prompt_filter_results chunk: empty
// choices, no usage.
var azureStream = `data: {"choices":[],"created":0,"id":"","model":"","object":"","prompt_filter_results":[{"prompt_index":0,"content_filter_results":{"hate":{"filtered":false,"severity":"safe"},"self_harm":{"filtered":false,"severity":"safe"}}}]}

` + openAIChunk("Hi", "stop") + openAIUsageChunk + "data: [DONE]\n\n"

const responsesStream = `event: response.created
data: {"type":"response.created","sequence_number":0,"response":{"id":"resp_67c9fdcecf488190bdd9a0409de3a1ec07b8b0ad4e5eb654","object":"response","created_at":1741290958,"status":"in_progress","error":null,"incomplete_details":null,"instructions":"You are a helpful assistant.","max_output_tokens":null,"model":"gpt-4.1-2025-04-14","output":[],"parallel_tool_calls":true,"previous_response_id":null,"reasoning":{"effort":null,"summary":null},"store":true,"temperature":1.0,"text":{"format":{"type":"text"}},"tool_choice":"auto","tools":[],"top_p":1.0,"truncation":"disabled","usage":null,"user":null,"metadata":{}}}

event: response.in_progress
data: {"type":"response.in_progress","sequence_number":1,"response":{"id":"resp_67c9fdcecf488190bdd9a0409de3a1ec07b8b0ad4e5eb654","object":"response","created_at":1741290958,"status":"in_progress","error":null,"model":"gpt-4.1-2025-04-14","output":[],"usage":null}}

event: response.output_item.added
data: {"type":"response.output_item.added","sequence_number":2,"output_index":0,"item":{"id":"msg_67c9fdcf37fc8190ba82116e33fb28c507b8b0ad4e5eb654","type":"message","status":"in_progress","role":"assistant","content":[]}}

event: response.content_part.added
data: {"type":"response.content_part.added","sequence_number":3,"item_id":"msg_67c9fdcf37fc8190ba82116e33fb28c507b8b0ad4e5eb654","output_index":0,"content_index":0,"part":{"type":"output_text","text":"","annotations":[]}}

event: response.output_text.delta
data: {"type":"response.output_text.delta","sequence_number":4,"item_id":"msg_67c9fdcf37fc8190ba82116e33fb28c507b8b0ad4e5eb654","output_index":0,"content_index":0,"delta":"Hi there! "}

event: response.output_text.delta
data: {"type":"response.output_text.delta","sequence_number":5,"item_id":"msg_67c9fdcf37fc8190ba82116e33fb28c507b8b0ad4e5eb654","output_index":0,"content_index":0,"delta":"How can I help?"}

event: response.output_text.done
data: {"type":"response.output_text.done","sequence_number":6,"item_id":"msg_67c9fdcf37fc8190ba82116e33fb28c507b8b0ad4e5eb654","output_index":0,"content_index":0,"text":"Hi there! How can I help?"}

event: response.content_part.done
data: {"type":"response.content_part.done","sequence_number":7,"item_id":"msg_67c9fdcf37fc8190ba82116e33fb28c507b8b0ad4e5eb654","output_index":0,"content_index":0,"part":{"type":"output_text","text":"Hi there! How can I help?","annotations":[]}}

event: response.output_item.done
data: {"type":"response.output_item.done","sequence_number":8,"output_index":0,"item":{"id":"msg_67c9fdcf37fc8190ba82116e33fb28c507b8b0ad4e5eb654","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Hi there! How can I help?","annotations":[]}]}}

event: response.completed
data: {"type":"response.completed","sequence_number":9,"response":{"id":"resp_67c9fdcecf488190bdd9a0409de3a1ec07b8b0ad4e5eb654","object":"response","created_at":1741290958,"status":"completed","error":null,"incomplete_details":null,"model":"gpt-4.1-2025-04-14","output":[{"id":"msg_67c9fdcf37fc8190ba82116e33fb28c507b8b0ad4e5eb654","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Hi there! How can I help?","annotations":[]}]}],"usage":{"input_tokens":2037,"input_tokens_details":{"cached_tokens":1920},"output_tokens":311,"output_tokens_details":{"reasoning_tokens":256},"total_tokens":2348},"user":null,"metadata":{}}}

`

const responsesFailedStream = `event: response.created
data: {"type":"response.created","sequence_number":0,"response":{"id":"resp_1","object":"response","status":"in_progress","error":null,"model":"o3","usage":null}}

event: response.output_text.delta
data: {"type":"response.output_text.delta","sequence_number":1,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"Partial"}

event: response.failed
data: {"type":"response.failed","sequence_number":2,"response":{"id":"resp_1","object":"response","status":"failed","error":{"code":"server_error","message":"The model failed to generate a response."},"model":"o3","usage":null}}

`

const responsesErrorEventStream = `event: response.created
data: {"type":"response.created","sequence_number":0,"response":{"id":"resp_2","object":"response","status":"in_progress","error":null,"model":"o3","usage":null}}

event: error
data: {"type":"error","code":"ERR_SOMETHING","message":"Something went wrong","param":null,"sequence_number":1}

`

// Gemini chunks; usageMetadata is a running total. geminiUsageOnly is the
// usage-only chunk Gemini 3 models send after the finishReason chunk.
const (
	gemini1         = `{"candidates": [{"content": {"parts": [{"text": "The quick"}],"role": "model"},"index": 0}],"usageMetadata": {"promptTokenCount": 1520,"totalTokenCount": 1520,"promptTokensDetails": [{"modality": "TEXT","tokenCount": 1520}]},"modelVersion": "gemini-3-pro-preview","responseId": "mcZsaM2dFJqH1dkP4Y3v8Ag"}`
	gemini2         = `{"candidates": [{"content": {"parts": [{"text": " brown fox jumps."}],"role": "model"},"finishReason": "STOP","index": 0}],"usageMetadata": {"promptTokenCount": 1520,"cachedContentTokenCount": 1024,"candidatesTokenCount": 40,"totalTokenCount": 1760,"thoughtsTokenCount": 200},"modelVersion": "gemini-3-pro-preview","responseId": "mcZsaM2dFJqH1dkP4Y3v8Ag"}`
	geminiUsageOnly = `{"usageMetadata": {"promptTokenCount": 1520,"cachedContentTokenCount": 1024,"candidatesTokenCount": 42,"totalTokenCount": 1770,"thoughtsTokenCount": 200,"toolUsePromptTokenCount": 8},"modelVersion": "gemini-3-pro-preview","responseId": "mcZsaM2dFJqH1dkP4Y3v8Ag"}`
)

var (
	geminiSSEStream   = "data: " + gemini1 + "\r\n\r\ndata: " + gemini2 + "\r\n\r\ndata: " + geminiUsageOnly + "\r\n\r\n"
	geminiArrayStream = "[" + indent(gemini1) + "\n,\r\n" + indent(gemini2) + "\n,\r\n" + indent(geminiUsageOnly) + "\n]"
	geminiArrayError  = "[" + gemini1 + ",\r\n" + `{"error": {"code": 503,"message": "The model is overloaded. Please try again later.","status": "UNAVAILABLE"}}` + "]"
)

// indent spreads a chunk over lines, as Gemini's JSON-array form does.
func indent(s string) string { return strings.ReplaceAll(s, `, "`, ",\n  \"") }

const ollamaChatStream = `{"model":"llama3.2","created_at":"2023-08-04T08:52:19.385406455-07:00","message":{"role":"assistant","content":"The"},"done":false}
{"model":"llama3.2","created_at":"2023-08-04T08:52:19.485406455-07:00","message":{"role":"assistant","content":" sky is blue because of Rayleigh scattering."},"done":false}
{"model":"llama3.2","created_at":"2023-08-04T19:22:45.499127Z","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","total_duration":4883583458,"load_duration":1334875,"prompt_eval_count":26,"prompt_eval_duration":342546000,"eval_count":282,"eval_duration":4535599000}
`

const ollamaGenerateStream = `{"model":"qwen2.5-coder:7b","created_at":"2024-08-04T08:52:19Z","response":"func","done":false}
{"model":"qwen2.5-coder:7b","created_at":"2024-08-04T08:52:19Z","response":" main() {}","done":false}
{"model":"qwen2.5-coder:7b","created_at":"2024-08-04T08:52:20Z","response":"","done":true,"done_reason":"stop","context":[1,2,3],"total_duration":10706818083,"prompt_eval_count":13,"eval_count":7}`

const ollamaErrorStream = `{"model":"llama3.2","created_at":"2023-08-04T08:52:19Z","message":{"role":"assistant","content":"The"},"done":false}
{"error":"an error was encountered while running the model: unexpected EOF"}
`
