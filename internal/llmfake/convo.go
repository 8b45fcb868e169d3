package llmfake

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// WorkingDirPattern finds the working directory that agent CLIs state in
// their prompt, in each client's own way: Claude Code and opencode write
// "Working directory: /path" (Claude Code: " - Primary working directory:
// /path"), Codex an <environment_context> holding <cwd>/path</cwd>, and
// Gemini CLI a "Workspace Directories:" list whose first item is the
// directory. The first match in the system prompt or the messages replaces
// {{cwd}} in scripts; the path is the first non-empty submatch.
const WorkingDirPattern = `(?m)^[ \t]*-?[ \t]*(?:Primary )?[Ww]orking directory:[ \t]*(\S[^\r\n]*?)[ \t]*$` +
	`|<cwd>[ \t]*([^<\r\n]*?\S)[ \t]*</cwd>` +
	`|Workspace Directories:\**[ \t]*\r?\n[ \t]*-[ \t]*(\S[^\r\n]*?)[ \t]*$`

var workingDirRe = regexp.MustCompile(WorkingDirPattern)

// toolResult is the last tool result of one step of a conversation.
type toolResult struct {
	present bool
	content string
	isError bool
}

// convo is a request in provider-neutral form: what scripts match on, what
// the reply needs, and the text the input tokens are estimated from.
type convo struct {
	model        string
	stream       bool
	maxTokens    int // 0: the request set none
	includeUsage bool
	hasTools     bool
	jsonMode     bool // the reply must be JSON (valid for jsonSchema, if any)
	jsonSchema   json.RawMessage
	flatTools    map[string]bool // Responses API: declared tools outside a namespace
	nsTools      [][2]string     // Responses API: (namespace, tool) declared

	system    string
	firstUser string
	users     []string // the text of every user message, in order
	texts     []string // system and message text, for the working directory
	chars     int      // bytes the input tokens are estimated from

	// steps counts assistant turns in the history; results[j] is the last
	// tool result after assistant turn j-1 (results[steps] is the one the
	// current request carries).
	steps   int
	results []toolResult

	embed *embedSpec // embeddings requests only

	inAssistant bool
	inUser      bool // the current message is the user's
	userSeen    int  // 0 none, 1 inside the first user message, 2 after it
}

func newConvo() *convo {
	return &convo{results: make([]toolResult, 1, 4)}
}

func (c *convo) addSystem(text string) {
	if text == "" {
		return
	}
	if c.system != "" {
		c.system += "\n"
	}
	c.system += text
	c.chars += len(text)
	c.texts = append(c.texts, text)
}

// message starts a message with the given role.
func (c *convo) message(role string) {
	assistant := role == "assistant" || role == "model"
	if assistant && !c.inAssistant {
		c.steps++
		c.results = append(c.results, toolResult{})
	}
	c.inAssistant = assistant
	c.inUser = role == "user"
	if c.inUser {
		c.users = append(c.users, "")
	}
	switch {
	case role == "user" && c.userSeen == 0:
		c.userSeen = 1
	case c.userSeen == 1:
		c.userSeen = 2
	}
}

// text adds message text.
func (c *convo) text(s string) {
	c.chars += len(s)
	c.texts = append(c.texts, s)
	if c.inUser {
		u := &c.users[len(c.users)-1]
		if *u != "" {
			*u += "\n"
		}
		*u += s
	}
	if c.userSeen == 1 {
		if c.firstUser != "" {
			c.firstUser += "\n"
		}
		c.firstUser += s
	}
}

// raw counts bytes that cost input tokens but are not prose: tool
// definitions, tool call arguments.
func (c *convo) raw(n int) { c.chars += n }

func (c *convo) toolResult(content string, isError bool) {
	c.chars += len(content)
	c.results[len(c.results)-1] = toolResult{present: true, content: content, isError: isError}
}

func (c *convo) inputTokens() int { return max(tokensOf(c.chars), 1) }

// workingDir is the first working directory stated in the prompt, or ".".
func (c *convo) workingDir() string {
	for _, t := range c.texts {
		if !strings.Contains(t, "orking directory:") && !strings.Contains(t, "<cwd>") && !strings.Contains(t, "Workspace Directories:") {
			continue
		}
		if m := workingDirRe.FindStringSubmatch(t); m != nil {
			for _, g := range m[1:] {
				if g != "" {
					return g
				}
			}
		}
	}
	return "."
}

// tokensOf estimates the tokens of n bytes of text: ceil(n/4).
func tokensOf(n int) int { return (n + 3) / 4 }

// requestError is a mistake in a request. Its message goes verbatim into
// the provider's 400 body, so it follows the provider's wording (capitals,
// punctuation), not Go's error style.
type requestError struct{ msg string }

func (e *requestError) Error() string { return e.msg }

func badRequest(format string, args ...any) error {
	return &requestError{msg: fmt.Sprintf(format, args...)}
}
