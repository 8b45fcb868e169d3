package runs

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/apiary-dev/apiary/internal/rundir"
)

// FuzzParseEvents: any bytes — torn lines, garbage, huge lines — parse
// without panicking; every event returned re-encodes to a line that parses
// back to itself.
func FuzzParseEvents(f *testing.F) {
	f.Add([]byte(`{"seq":1,"time":"2026-01-02T03:04:05Z","run":"r","kind":"run_started","tasks":3}` + "\n"))
	f.Add([]byte(`{"seq":2,"kind":"attempt_finished","task":"a","usage":{"input_tokens":5,"output_tokens":1,"usd":0.1,"wall_s":1}}` + "\n" + `{"seq":3,"kind":"task_do`))
	f.Add([]byte("\n\n{}\nnot json\n"))
	f.Add([]byte(`{"kind":"integrated","gate":{"gate":"check","detail":"x"},"exit":0,"paths":["a","b"]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		evs, bad, err := rundir.ParseEvents(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		lines := 0
		for _, l := range strings.Split(string(data), "\n") {
			if len(bytes.TrimSpace([]byte(l))) != 0 {
				lines++
			}
		}
		if len(evs)+bad != lines {
			t.Fatalf("%d events + %d bad != %d non-empty lines", len(evs), bad, lines)
		}
		for _, ev := range evs {
			b, err := json.Marshal(ev)
			if err != nil {
				t.Fatal(err)
			}
			again, bad, err := rundir.ParseEvents(bytes.NewReader(b))
			if err != nil || bad != 0 || len(again) != 1 || again[0].Kind != ev.Kind || again[0].Seq != ev.Seq || again[0].Task != ev.Task {
				t.Fatalf("round trip of %s: %+v bad=%d err=%v", b, again, bad, err)
			}
		}
	})
}
