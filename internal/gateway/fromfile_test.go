package gateway

import (
	"testing"
	"time"

	"github.com/apiary-dev/apiary/internal/config"
	"github.com/apiary-dev/apiary/internal/llmapi"
)

// TestFromFile: what apiary.yaml says of the gateway arrives in its
// Config, and the key variables it names come back by upstream; what it
// leaves out stays zero.
func TestFromFile(t *testing.T) {
	t.Parallel()
	doc := `
gateway:
  retry: {max_attempts: 7, max_wait: 9s}
  breaker: {fail_fast: true}
  queue: {max_waiting: 12}
  agents:
    a: {priority: 2, budget_usd: 1.5}
  upstreams:
    - {name: main, url: "http://127.0.0.1:1", provider: openai, api_key_env: MY_KEY, limits: {rpm: 60}}
`
	file, err := config.Parse("apiary.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	cfg, keyEnv, err := FromFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.MaxAttempts != 7 || cfg.MaxRetryWait != 9*time.Second || !cfg.BreakerFailFast || cfg.NoBreaker || cfg.MaxQueue != 12 {
		t.Errorf("config %+v", cfg)
	}
	if a := cfg.Agents["a"]; a.Priority != 2 || a.BudgetMicroUSD != 1_500_000 {
		t.Errorf("agent a %+v", a)
	}
	if len(cfg.Upstreams) != 1 || cfg.Upstreams[0].Provider != llmapi.OpenAI || cfg.Upstreams[0].RPM != 60 || cfg.Upstreams[0].APIKey != "" {
		t.Errorf("upstreams %+v", cfg.Upstreams)
	}
	if keyEnv["main"] != "MY_KEY" {
		t.Errorf("key variables %v", keyEnv)
	}
	empty, _ := config.Parse("", nil)
	if cfg, keyEnv, err := FromFile(empty); err != nil || cfg.MaxAttempts != 0 || len(cfg.Upstreams) != 0 || len(keyEnv) != 0 || cfg.NoIncludeUsage {
		t.Errorf("an empty file: %+v %v %v", cfg, keyEnv, err)
	}
}
