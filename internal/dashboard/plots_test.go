package dashboard

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestPlotDirs(t *testing.T) {
	t.Parallel()
	a, b, outside := t.TempDir(), t.TempDir(), t.TempDir()
	write(t, filepath.Join(a, "makespan.svg"), "<svg/>")
	write(t, filepath.Join(a, "makespan.png"), "\x89PNG") // the same chart: listed once, as its SVG
	write(t, filepath.Join(a, "sim", "messages.png"), "\x89PNG")
	write(t, filepath.Join(a, "sim", "deep", "deeper", "x.svg"), "<svg/>") // too deep
	write(t, filepath.Join(a, ".hidden", "x.svg"), "<svg/>")
	write(t, filepath.Join(a, "notes.txt"), "no")
	write(t, filepath.Join(b, "eval.SVG"), "<svg id='b'/>")
	write(t, filepath.Join(outside, "secret.svg"), "<svg>secret</svg>")
	if err := os.Symlink(filepath.Join(outside, "secret.svg"), filepath.Join(b, "link.svg")); err != nil {
		t.Fatal(err)
	}
	d := PlotDirs{a, filepath.Join(t.TempDir(), "missing"), b}
	ps, err := d.Plots(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range ps {
		names = append(names, p.Name+"|"+p.Title+"|"+p.Type)
	}
	want := []string{"0/makespan.svg|makespan|svg", "0/sim/messages.png|sim/messages|png", "2/eval.SVG|eval|svg"}
	if !slices.Equal(names, want) {
		t.Errorf("plots %q, want %q", names, want)
	}
	for _, tc := range []struct {
		name, ctype, body string
	}{
		{"0/makespan.svg", "image/svg+xml", "<svg/>"},
		{"0/sim/messages.png", "image/png", "\x89PNG"},
		{"2/eval.SVG", "image/svg+xml", "<svg id='b'/>"},
	} {
		body, ctype, err := d.Plot(t.Context(), tc.name)
		if err != nil || ctype != tc.ctype || string(body) != tc.body {
			t.Errorf("Plot(%q) = %q, %q, %v", tc.name, body, ctype, err)
		}
	}
	for _, name := range []string{
		"2/link.svg", // a symlink out of its directory
		"0/../x.svg", "0/notes.txt", "0/.hidden/x.svg", "0/sim/deep/deeper/x.svg",
		"1/x.svg", // a missing directory
		"3/x.svg", "-1/x.svg", "00/makespan.svg", "makespan.svg", "0//makespan.svg", "0/", "",
	} {
		if _, _, err := d.Plot(t.Context(), name); !errors.Is(err, ErrNotFound) {
			t.Errorf("Plot(%q): err = %v, want ErrNotFound", name, err)
		}
	}
}
