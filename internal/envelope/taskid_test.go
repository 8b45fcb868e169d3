package envelope

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"regexp"
	"slices"
	"testing"
	"time"
)

func TestNewTaskID(t *testing.T) {
	t.Parallel()
	re := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	rng := rand.NewChaCha8([32]byte{9})
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var ids []string
	for i := range 200 {
		now := base.Add(time.Duration(i) * time.Millisecond)
		id, err := NewTaskID(now, rng)
		if err != nil {
			t.Fatal(err)
		}
		if !re.MatchString(id) {
			t.Fatalf("%q is not a canonical UUIDv7", id)
		}
		got, err := ParseTaskID(id)
		if err != nil || !got.Equal(now) {
			t.Fatalf("ParseTaskID(%q) = %v, %v; want %v", id, got, err, now)
		}
		ids = append(ids, id)
	}
	if !slices.IsSorted(ids) {
		t.Error("ids made at increasing times do not sort in order")
	}
	// Deterministic given the same inputs.
	a, _ := NewTaskID(base, bytes.NewReader(make([]byte, 10)))
	b, _ := NewTaskID(base, bytes.NewReader(make([]byte, 10)))
	if a != b || a != "019ca945-0a00-7000-8000-000000000000" {
		t.Errorf("ids %q, %q", a, b)
	}
	if _, err := NewTaskID(base, bytes.NewReader(nil)); err == nil {
		t.Error("short randomness accepted")
	}
	if _, err := NewTaskID(time.UnixMilli(-1), rng); !errors.Is(err, ErrInvalid) {
		t.Errorf("negative time: %v", err)
	}
}

func TestParseTaskIDRejects(t *testing.T) {
	t.Parallel()
	for _, s := range []string{
		"", "0f8fad5b-d9cb-469f-a165-70867728950e", // v4
		"019AA96B-0680-7000-8000-000000000000",  // upper case
		"019aa96b-0680-7000-c000-000000000000",  // wrong variant
		"019aa96b06807000800000000000000000000", // no dashes
		"019aa96b-0680-7000-8000-00000000000g",
	} {
		if _, err := ParseTaskID(s); !errors.Is(err, ErrInvalid) {
			t.Errorf("ParseTaskID(%q) = %v, want ErrInvalid", s, err)
		}
	}
}
