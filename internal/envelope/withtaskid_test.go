package envelope

import (
	"crypto/rand"
	"encoding/json"
	"testing"
	"time"
)

// TestWithTaskID: an envelope without a task_id (or with an empty one)
// gets a fresh UUIDv7; one with a task_id is passed on untouched.
func TestWithTaskID(t *testing.T) {
	t.Parallel()
	for _, in := range []string{`{"objective":"x"}`, `{"objective":"x","task_id":""}`, `{"objective":"x","task_id":null}`} {
		out, err := WithTaskID([]byte(in), time.Now(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		var e struct {
			TaskID    string `json:"task_id"`
			Objective string `json:"objective"`
		}
		if err := json.Unmarshal(out, &e); err != nil || !validID(e.TaskID) || e.Objective != "x" {
			t.Errorf("%s → %s (%v)", in, out, err)
		}
	}
	keep := `{"task_id":"not-mine-to-judge"}`
	if out, err := WithTaskID([]byte(keep), time.Now(), rand.Reader); err != nil || string(out) != keep {
		t.Errorf("%s → %s, %v", keep, out, err)
	}
	if _, err := WithTaskID([]byte(`[1]`), time.Now(), rand.Reader); err == nil {
		t.Error("a JSON array accepted as an envelope")
	}
}

func validID(s string) bool {
	_, err := ParseTaskID(s)
	return err == nil
}
