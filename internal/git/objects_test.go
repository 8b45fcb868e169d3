package git

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// encodeTree is parseTree's inverse, for the fuzz test.
func encodeTree(es []treeEntry) []byte {
	var b bytes.Buffer
	for _, e := range es {
		fmt.Fprintf(&b, "%o %s\x00%s", e.mode, e.name, e.oid)
	}
	return b.Bytes()
}

func FuzzParseTree(f *testing.F) {
	oid := strings.Repeat("\x01", 20)
	f.Add(encodeTree([]treeEntry{{name: "a.go", mode: 0o100644, oid: oid}, {name: "dir", mode: 0o40000, oid: oid}}), 20)
	f.Add([]byte("100644 x\x00short"), 20)
	f.Add([]byte("12x 0\x00"+oid), 20)
	f.Add(encodeTree([]treeEntry{{name: "l", mode: 0o120000, oid: strings.Repeat("\x02", 32)}}), 32)
	f.Fuzz(func(t *testing.T, data []byte, hashLen int) {
		if hashLen != 20 && hashLen != 32 {
			return
		}
		es, err := parseTree(data, hashLen)
		if err != nil {
			return
		}
		for _, e := range es {
			if e.name == "" || strings.ContainsRune(e.name, 0) || len(e.oid) != hashLen {
				t.Fatalf("bad entry %+v", e)
			}
		}
		again, err := parseTree(encodeTree(es), hashLen)
		if err != nil || !slices.Equal(again, es) {
			t.Fatalf("re-encoding %+v gives %+v, %v", es, again, err)
		}
	})
}

func TestCone(t *testing.T) {
	t.Parallel()
	c, err := newCone([]string{"b/c/", "/a", "b/d/e", "a/inner", "x y"})
	if err != nil {
		t.Fatal(err)
	}
	want := "/*\n!/*/\n/b/\n!/b/*/\n/b/d/\n!/b/d/*/\n/a/\n/b/c/\n/b/d/e/\n/x y/\n"
	if got := c.patterns(); got != want {
		t.Errorf("patterns:\n%s\nwant\n%s", got, want)
	}
	for path, in := range map[string]bool{
		"top.txt": true, "a/x": true, "a/inner/y": true, "b/file": true, "b/d/file": true,
		"b/d/e/f/g": true, "b/c/z": true, "b/other/z": false, "c/z": false, "b/d/f/z": false, "x y/z": true,
	} {
		if c.includes(path) != in {
			t.Errorf("includes(%q) = %v, want %v", path, !in, in)
		}
	}
	if c, err := newCone([]string{"/"}); c != nil || err != nil {
		t.Errorf("the top directory: %v %v, want no cone", c, err)
	}
}

// TestCompareTreeKeys: the allocation-free comparison orders entries as
// comparing their names with a "/" after each tree's does (git's order).
func TestCompareTreeKeys(t *testing.T) {
	t.Parallel()
	key := func(e treeEntry) string {
		if e.isTree() {
			return e.name + "/"
		}
		return e.name
	}
	names := []string{"a", "a-b", "a.c", "a/", "a0", "ab", "b", "-", ".", "a/b", "aa", "a\xff"}
	for _, x := range names {
		for _, y := range names {
			for _, mx := range []uint32{0o100644, 0o40000} {
				for _, my := range []uint32{0o100644, 0o40000} {
					a, b := treeEntry{name: x, mode: mx}, treeEntry{name: y, mode: my}
					if got, want := compareTreeKeys(a, b), strings.Compare(key(a), key(b)); got != want {
						t.Errorf("compareTreeKeys(%q %o, %q %o) = %d, want %d", x, mx, y, my, got, want)
					}
				}
			}
		}
	}
}
