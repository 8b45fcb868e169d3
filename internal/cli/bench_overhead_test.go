package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/apiary-dev/apiary/internal/bench"
)

// TestBenchOverhead runs the overhead benchmark briefly: every path is
// measured with no errors and the report's differences are the phases'.
func TestBenchOverhead(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	code := Main(t.Context(), []string{"bench", "overhead", "--rate", "50", "--duration", "1s", "--streams", "20", "--json"},
		strings.NewReader(""), &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var res bench.OverheadResult
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatalf("%v: %s", err, stdout.String())
	}
	if len(res.Phases) != 6 {
		t.Fatalf("phases: %+v", res.Phases)
	}
	by := map[string]bench.OverheadPhase{}
	for _, p := range res.Phases {
		if p.Requests < 25 || p.Errors != 0 || p.P50us <= 0 || p.P99us < p.P50us || p.CPUPerReq <= 0 {
			t.Errorf("phase %+v", p)
		}
		key := p.Path
		if p.Stream {
			key += "+stream"
		}
		by[key] = p
	}
	if got, want := res.AddedP50us, by["gateway"].P50us-by["direct"].P50us; got != want {
		t.Errorf("added p50 %v, want %v", got, want)
	}
	if got, want := res.OverProxyStreamP99, by["gateway+stream"].P99us-by["proxy+stream"].P99us; got != want {
		t.Errorf("over-proxy stream p99 %v, want %v", got, want)
	}
	if res.Streams != 20 || res.StreamErrors != 0 {
		t.Errorf("streams %d, errors %d", res.Streams, res.StreamErrors)
	}
	if !strings.Contains(stderr.String(), "bench overhead: stream=true 1/1 s") {
		t.Errorf("no progress on stderr: %q", stderr.String())
	}
	var out bytes.Buffer
	if code := Main(t.Context(), []string{"bench", "overhead", "--duration", "10ms"}, strings.NewReader(""), &out, &stderr); code != exitUsage {
		t.Errorf("--duration 10ms: exit %d", code)
	}
}
