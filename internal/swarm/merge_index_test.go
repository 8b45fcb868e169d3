package swarm

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apiary-dev/apiary/internal/board/connect"
	"github.com/apiary-dev/apiary/internal/review"
	"github.com/apiary-dev/apiary/internal/swarm/layout"
)

// synthFuncs are n functions as the duplicate index holds them: F<i> at
// line i+1 of pkg<i%7>/f.go (f<i>, unexported, for every fifth), listed
// from the last to the first, so the index's order is not theirs. sig pads
// each signature to about that many bytes.
func synthFuncs(n, sig int) []indexed {
	var out []indexed
	for i := n - 1; i >= 0; i-- {
		name := fmt.Sprintf("F%05d", i)
		if i%5 == 4 {
			name = fmt.Sprintf("f%05d", i)
		}
		s := "func " + name + "(" + strings.Repeat("x", max(0, sig-len(name)-8)) + " int)"
		out = append(out, indexed{f: review.Func{Name: name, File: fmt.Sprintf("pkg%d/f.go", i%7), Line: i + 1, Lang: "go",
			Signature: s, Doc: name + " does its part."}})
	}
	return out
}

// wantUtils is what the utility index of all must hold without bounds,
// worked out apart from utilIndex: the exported functions not in skip,
// each once, by file and line.
func wantUtils(all []indexed, skip map[string]bool) []UtilFunc {
	var out []UtilFunc
	for _, e := range all {
		k := e.f.File + "\x00" + e.f.Name
		if e.f.Name[0] < 'A' || e.f.Name[0] > 'Z' || skip[k] ||
			slices.ContainsFunc(out, func(u UtilFunc) bool { return u.File == e.f.File && u.Name == e.f.Name }) {
			continue
		}
		out = append(out, UtilFunc{Name: e.f.Name, File: e.f.File, Line: e.f.Line, Lang: e.f.Lang, Signature: e.f.Signature, Doc: e.f.Doc})
	}
	slices.SortFunc(out, func(a, b UtilFunc) int {
		if c := strings.Compare(a.File, b.File); c != 0 {
			return c
		}
		return a.Line - b.Line
	})
	return out
}

// checkBounded checks that got, the index of all, is within maxN entries
// and maxBytes of JSON, decodes to itself, and is the longest prefix of
// want that the bounds allow.
func checkBounded(t *testing.T, got, want []UtilFunc, maxN, maxBytes int) {
	t.Helper()
	b, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	var back []UtilFunc
	if !json.Valid(b) || json.Unmarshal(b, &back) != nil || !slices.Equal(back, got) {
		t.Fatalf("the index does not survive JSON: %.200s", b)
	}
	if len(got) > maxN || len(b) > maxBytes {
		t.Errorf("%d entries, %d bytes; the bounds are %d entries, %d bytes", len(got), len(b), maxN, maxBytes)
	}
	if len(got) > len(want) || !slices.Equal(got, want[:len(got)]) {
		t.Fatalf("the index is not a prefix of the functions by file and line:\ngot  %+v\nwant %+v", got[:min(3, len(got))], want[:min(3, len(want))])
	}
	if n := len(got); n < min(maxN, len(want)) && len(layout.MustJSON(want[:n+1])) <= maxBytes {
		t.Errorf("%d entries of %d, %d bytes: one more fits in %d", n, len(want), len(b), maxBytes)
	}
}

// TestUtilIndexBounds: the utility index holds the exported functions
// not found to be duplicates, each once (the first entry of a file and
// name), ordered by file and line, and cut to a prefix of that order
// within the count and the size of JSON given — whichever binds.
func TestUtilIndexBounds(t *testing.T) {
	t.Parallel()
	all := synthFuncs(300, 60)
	// A second entry for F00010 (its file rewritten by a task): the first
	// one stays.
	stale := all[len(all)-11]
	stale.f.Line, stale.task = 9999, "t"
	all = append(all, stale)
	// Duplicates the merge role found (integrated with a warning, or
	// before a takeover) are not offered.
	skip := map[string]bool{"pkg0/f.go\x00F00000": true, "pkg1/f.go\x00F00001": true}
	want := wantUtils(all, skip)
	if len(want) != 238 { // 300, less 60 unexported and 2 duplicates
		t.Fatalf("%d functions to offer, want 238", len(want))
	}
	tests := []struct {
		name           string
		maxN, maxBytes int
	}{
		{"unbounded", 1000, 1 << 20},
		{"count binds", 50, 1 << 20},
		{"size binds", 1000, 8 << 10},
		{"both, size first", 100, 4 << 10},
		{"both, count first", 20, 16 << 10},
		{"one fits", 1000, 200},
		{"nothing fits", 1000, 100},
		{"no entries", 0, 1 << 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := utilIndex(all, skip, tt.maxN, tt.maxBytes)
			checkBounded(t, got, want, tt.maxN, tt.maxBytes)
			if got == nil {
				t.Error("an empty index is published as null; want []")
			}
			for _, u := range got {
				if skip[u.File+"\x00"+u.Name] || u.Line == 9999 {
					t.Errorf("the index offers %+v", u)
				}
			}
		})
	}
	// The bounds of the cases above really bind where their names say.
	if n := len(layout.MustJSON(want)); n > 1<<20 || n <= 8<<10 || len(layout.MustJSON(want[:50])) > 1<<20 ||
		len(layout.MustJSON(want[:100])) <= 4<<10 || len(layout.MustJSON(want[:20])) > 16<<10 {
		t.Fatalf("the synthetic functions do not exercise the bounds: %d bytes in all", n)
	}
}

// TestPublishUtilsBounds: the utility index the merge role publishes on
// the board, over more functions than maxUtils, holds maxUtils of them
// when they are small, and at most maxUtilsBytes when they are not; either
// way the value is valid JSON and ReadUtils reads it back.
func TestPublishUtilsBounds(t *testing.T) {
	t.Parallel()
	st, err := connect.Open(t.Context(), "local:"+filepath.Join(t.TempDir(), "state.db"), connect.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	lead, err := st.Campaign(t.Context(), "swarm/r1/merge", "m", 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lead.Resign(context.WithoutCancel(t.Context())) })
	tests := []struct {
		name string
		sig  int // signature bytes
	}{
		{"count binds", 20}, // 2500 entries of ~100 bytes: 2000 fit in 256 KiB
		{"size binds", 200}, // 2000 entries of ~290 bytes do not
	}
	for _, tt := range tests {
		all := synthFuncs(3125, tt.sig) // 2500 exported
		m := &merger{env: &runEnv{st: st, run: &layout.Record{Run: "r1"}}, lead: lead, index: &dupIndex{all: all}, dupFuncs: map[string]bool{}}
		if err := m.publishUtils(t.Context()); err != nil {
			t.Fatal(err)
		}
		kv, err := st.Get(t.Context(), utilsKey("r1"))
		if err != nil {
			t.Fatal(err)
		}
		if !json.Valid(kv.Value) || len(kv.Value) > maxUtilsBytes {
			t.Fatalf("%s: the published index is %d bytes (valid JSON %v); the bound is %d", tt.name, len(kv.Value), json.Valid(kv.Value), maxUtilsBytes)
		}
		got, err := ReadUtils(t.Context(), st, "r1")
		if err != nil {
			t.Fatal(err)
		}
		want := wantUtils(all, nil)
		if len(want) != 2500 {
			t.Fatalf("%d functions to offer, want 2500", len(want))
		}
		checkBounded(t, got, want, maxUtils, maxUtilsBytes)
		fits := len(layout.MustJSON(want[:maxUtils])) <= maxUtilsBytes
		if fits != (tt.name == "count binds") {
			t.Fatalf("%s: %d entries are %d bytes", tt.name, maxUtils, len(layout.MustJSON(want[:maxUtils])))
		}
	}
}
