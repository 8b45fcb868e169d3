package llmfake_test

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"

	"github.com/apiary-dev/apiary/internal/llmfake"
)

// A script makes an agent call its Write tool with a path under the
// working directory its prompt states.
func ExampleParseScripts() {
	scripts, err := llmfake.ParseScripts("agent.yaml", []byte(`
turns:
  - text: "Creating the file."
    tool_calls:
      - name: Write
        input: {file_path: "{{cwd}}/hello.txt", content: "hello\n"}
final: "Done."
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	srv, _ := llmfake.New(llmfake.Config{Scripts: scripts}, llmfake.Options{Seed: 1})
	req := httptest.NewRequest("POST", "/v1/messages", strings.NewReader(`{"model":"claude-sonnet-4-5","max_tokens":1024,
		"system":"Working directory: /home/dev/project","tools":[{"name":"Write","input_schema":{"type":"object"}}],
		"messages":[{"role":"user","content":"write hello.txt"}]}`))
	w := httptest.NewRecorder()
	srv.ServeHTTP(w, req)

	var msg struct {
		Content []struct {
			Type  string          `json:"type"`
			Text  string          `json:"text"`
			Name  string          `json:"name"`
			Input json.RawMessage `json:"input"`
		} `json:"content"`
		StopReason string `json:"stop_reason"`
	}
	json.Unmarshal(w.Body.Bytes(), &msg)
	for _, b := range msg.Content {
		if b.Type == "text" {
			fmt.Printf("text: %s\n", b.Text)
		} else {
			fmt.Printf("%s: %s %s\n", b.Type, b.Name, b.Input)
		}
	}
	fmt.Println("stop_reason:", msg.StopReason)
	// Output:
	// text: Creating the file.
	// tool_use: Write {"content":"hello\n","file_path":"/home/dev/project/hello.txt"}
	// stop_reason: tool_use
}

// A bad script names the file, the line and the field.
func ExampleParseScripts_error() {
	_, err := llmfake.ParseScripts("agent.yaml", []byte("turns:\n  - tool_calls:\n      - input: {command: ls}\n"))
	fmt.Println(err)
	// Output:
	// agent.yaml:3:9: turns[0].tool_calls[0].name: required
}
