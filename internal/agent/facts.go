package agent

// Facts is what a built-in profile relies on about its CLI, and the version
// it was checked against. Each CLI's file holds its table; Table lists them
// and docs/agents.md shows them (a test keeps the two in step).
type Facts struct {
	Kind    string `json:"kind"`
	CLI     string `json:"cli"`
	Package string `json:"package"` // where it installs from
	Bin     string `json:"bin"`     // the executable
	// Checked is the version these facts were checked against by running
	// the CLI against llmfake and the gateway; "" when it could not be run
	// here.
	Checked string `json:"checked"`
	// Headless is how apiary runs it without a terminal.
	Headless string `json:"headless"`
	// Home is the configuration written for each attempt under its HOME.
	Home string `json:"home"`
	// BaseURL and Key say how the model base URL and the key reach it.
	BaseURL string `json:"base_url"`
	Key     string `json:"key"`
	// MCP says how an MCP server is configured, and ToolName how the CLI
	// names the server's tool rw.safe_write of server "apiary".
	MCP      bool   `json:"mcp"`
	MCPHow   string `json:"mcp_how"`
	ToolName string `json:"tool_name,omitempty"`
	// Report is what the result parser reads.
	Report string `json:"report"`
	// NeedsHome: the profile writes configuration files, so Spec.Home is
	// required.
	NeedsHome bool `json:"-"`
}

// cli is one kind of agent: its facts, how to build its invocation and how
// to read its output.
type cli struct {
	facts Facts
	build func(b *builder) error
	// parser returns a fresh parser of its structured output, nil if it
	// prints none.
	parser func() lineParser
}

// lineParser reads a CLI's output lines and makes its report.
type lineParser interface {
	line(ev []byte)
	report() *Report // nil: no report
}

var clis = map[string]*cli{
	KindClaude:   claudeCLI,
	KindCodex:    codexCLI,
	KindGemini:   geminiCLI,
	KindOpenCode: opencodeCLI,
	KindAider:    aiderCLI,
	KindCommand:  commandCLI,
}

func cliOf(kind string) *cli { return clis[kind] }

// Table returns the facts of every kind, in the order of Kinds.
func Table() []Facts {
	out := make([]Facts, 0, len(Kinds))
	for _, k := range Kinds {
		out = append(out, clis[k].facts)
	}
	return out
}

// FactsOf returns the facts of one kind.
func FactsOf(kind string) (Facts, bool) {
	c, ok := clis[kind]
	if !ok {
		return Facts{}, false
	}
	return c.facts, true
}
