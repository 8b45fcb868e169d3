package calc

import (
	"errors"
	"strings"
	"testing"
)

func TestHiddenSessionLines(t *testing.T) {
	s := NewSession()
	steps := []struct{ in, out string }{
		{"", ""},
		{"   ", ""},
		{"r = 2", "r = 2"},
		{"area = pi * r^2", "area = 12.566370614359172"},
		{"r = r + 1", "r = 3"},
		{"max(r, 1) * 2", "6"},
		{"e^0", "1"},
		{"x=.5", "x = 0.5"},
	}
	for _, st := range steps {
		got, err := s.Line(st.in)
		if err != nil || got != st.out {
			t.Fatalf("Line(%q) = %q, %v; want %q", st.in, got, err, st.out)
		}
	}
	if _, err := s.Line("r = nosuch + 1"); !errors.Is(err, ErrUndefined) {
		t.Fatalf("Line(r = nosuch + 1): %v", err)
	}
	if got, _ := s.Line("r"); got != "3" {
		t.Fatalf("a failed assignment changed r: %q", got)
	}
	if _, err := s.Line("r = "); !errors.Is(err, ErrSyntax) {
		t.Fatalf("Line(r = ): %v", err)
	}
}

func TestHiddenRun(t *testing.T) {
	var out strings.Builder
	in := "a = 6\n\nb = a / 4\n1 / 0\nb * 2\n2 $\n"
	if err := Run(strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
	want := []string{"a = 6", "b = 1.5", "error: ", "3", "error: "}
	if len(lines) != len(want) {
		t.Fatalf("Run wrote %q", out.String())
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) || (w != "error: " && lines[i] != w) {
			t.Errorf("line %d = %q, want %q", i+1, lines[i], w)
		}
	}
}
