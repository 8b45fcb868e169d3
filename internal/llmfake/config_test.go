package llmfake

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestConfigUnmarshalJSON: a patch merges into the current config, is
// strict, and reports every problem with its place.
func TestConfigUnmarshalJSON(t *testing.T) {
	t.Parallel()
	cfg := Config{MaxConcurrent: 3, Limits: Limits{RPM: 5, WindowLength: time.Minute}, Faults: Faults{Latency: time.Second, ErrorStatuses: []int{502}}}
	if err := json.Unmarshal([]byte(`{"limits": {"tpm": 7, "window_length": 1500}, "faults": {"jitter": "5ms", "error_statuses": null}}`), &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.MaxConcurrent != 3 || cfg.Limits.RPM != 5 || cfg.Limits.TPM != 7 || cfg.Limits.WindowLength != 1500*time.Millisecond ||
		cfg.Faults.Latency != time.Second || cfg.Faults.Jitter != 5*time.Millisecond || cfg.Faults.ErrorStatuses != nil {
		t.Errorf("merged %+v", cfg)
	}
	err := json.Unmarshal([]byte("{\"limits\": {\"rpm\": \"x\", \"rpmx\": 1},\n \"faults\": {\"latency\": \"soon\"}, \"format\": \"openai\", \"format\": \"gemini\"}"), &cfg)
	want := []string{
		`config:2:53: format: key "format" given twice (first at line 2)`,
	}
	if err == nil || !errors.Is(err, ErrConfig) || err.Error() != "llmfake: invalid config: "+strings.Join(want, "\n") {
		t.Errorf("duplicate key: %v", err)
	}
	err = json.Unmarshal([]byte("{\"limits\": {\"rpm\": \"x\", \"rpmx\": 1},\n \"faults\": {\"latency\": \"soon\"}}"), &cfg)
	want = []string{
		"config:1:20: limits.rpm: cannot unmarshal !!str `x` into int64",
		"config:1:25: limits.rpmx: unknown field (want one of window_length, rpm, tpm, itpm, otpm, window)",
		`config:2:24: faults.latency: "soon" is not a duration: want a string like "80ms" or a number of milliseconds`,
	}
	if err == nil || err.Error() != "llmfake: invalid config: "+strings.Join(want, "\n") {
		t.Errorf("err\n got %v\nwant %s", err, strings.Join(want, "\n"))
	}
	if cfg.Limits.RPM != 5 || cfg.Faults.Latency != time.Second {
		t.Errorf("a rejected patch changed the config: %+v", cfg)
	}
}
