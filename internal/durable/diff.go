package durable

import (
	"fmt"
	"strings"
)

// Bounds of unifiedDiff.
const (
	diffContext  = 3
	diffMaxEdits = 400      // beyond this many line edits, one hunk replaces the middle
	diffMaxBytes = 64 << 10 // longer diffs are cut
)

type diffOp struct {
	kind byte // ' ', '-', '+'
	line string
}

// unifiedDiff returns a unified diff of a and b (whole texts) labelled
// a/name and b/name, or "" when they are equal. The second result reports
// whether it was cut to diffMaxBytes.
func unifiedDiff(name, a, b string) (string, bool) {
	if a == b {
		return "", false
	}
	al, bl := splitKeep(a), splitKeep(b)
	pre := 0
	for pre < len(al) && pre < len(bl) && al[pre] == bl[pre] {
		pre++
	}
	suf := 0
	for suf < len(al)-pre && suf < len(bl)-pre && al[len(al)-1-suf] == bl[len(bl)-1-suf] {
		suf++
	}
	var ops []diffOp
	for _, l := range al[:pre] {
		ops = append(ops, diffOp{' ', l})
	}
	mid, ok := myers(al[pre:len(al)-suf], bl[pre:len(bl)-suf])
	if !ok {
		mid = nil
		for _, l := range al[pre : len(al)-suf] {
			mid = append(mid, diffOp{'-', l})
		}
		for _, l := range bl[pre : len(bl)-suf] {
			mid = append(mid, diffOp{'+', l})
		}
	}
	ops = append(ops, mid...)
	for _, l := range al[len(al)-suf:] {
		ops = append(ops, diffOp{' ', l})
	}
	var out strings.Builder
	fmt.Fprintf(&out, "--- a/%s\n+++ b/%s\n", name, name)
	writeHunks(&out, ops)
	s := out.String()
	if len(s) > diffMaxBytes {
		return s[:diffMaxBytes], true
	}
	return s, false
}

// splitKeep splits text into lines that keep their "\n".
func splitKeep(s string) []string {
	if s == "" {
		return nil
	}
	l := strings.SplitAfter(s, "\n")
	if l[len(l)-1] == "" {
		l = l[:len(l)-1]
	}
	return l
}

// myers computes a shortest edit script with Myers' O(ND) algorithm, giving
// up (ok=false) beyond diffMaxEdits edits.
func myers(a, b []string) ([]diffOp, bool) {
	n, m := len(a), len(b)
	maxD := min(n+m, diffMaxEdits)
	off := maxD + 1
	v := make([]int, 2*maxD+3)
	var trace [][]int
	found := false
	for d := 0; d <= maxD && !found; d++ {
		trace = append(trace, append([]int(nil), v...))
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				x = v[off+k+1]
			} else {
				x = v[off+k-1] + 1
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x++
				y++
			}
			v[off+k] = x
			if x >= n && y >= m {
				found = true
				break
			}
		}
	}
	if !found {
		return nil, false
	}
	var rev []diffOp
	x, y := n, m
	for d := len(trace) - 1; d >= 0; d-- {
		vd := trace[d]
		k := x - y
		var pk int
		if k == -d || (k != d && vd[off+k-1] < vd[off+k+1]) {
			pk = k + 1
		} else {
			pk = k - 1
		}
		px := vd[off+pk]
		py := px - pk
		for x > px && y > py {
			rev = append(rev, diffOp{' ', a[x-1]})
			x--
			y--
		}
		if d > 0 {
			if x == px {
				rev = append(rev, diffOp{'+', b[y-1]})
			} else {
				rev = append(rev, diffOp{'-', a[x-1]})
			}
		}
		x, y = px, py
	}
	ops := make([]diffOp, len(rev))
	for i, op := range rev {
		ops[len(rev)-1-i] = op
	}
	return ops, true
}

// writeHunks renders ops as unified-diff hunks with diffContext lines of
// context.
func writeHunks(out *strings.Builder, ops []diffOp) {
	for i := 0; i < len(ops); {
		if ops[i].kind == ' ' {
			i++
			continue
		}
		start := max(0, i-diffContext)
		end := i
		for end < len(ops) {
			if ops[end].kind != ' ' {
				end++
				continue
			}
			run := 0
			for end+run < len(ops) && ops[end+run].kind == ' ' {
				run++
			}
			if end+run == len(ops) || run > 2*diffContext {
				end += min(run, diffContext)
				break
			}
			end += run
		}
		aStart, bStart := 1, 1
		for _, op := range ops[:start] {
			if op.kind != '+' {
				aStart++
			}
			if op.kind != '-' {
				bStart++
			}
		}
		aLen, bLen := 0, 0
		for _, op := range ops[start:end] {
			if op.kind != '+' {
				aLen++
			}
			if op.kind != '-' {
				bLen++
			}
		}
		if aLen == 0 {
			aStart--
		}
		if bLen == 0 {
			bStart--
		}
		fmt.Fprintf(out, "@@ -%d,%d +%d,%d @@\n", aStart, aLen, bStart, bLen)
		for _, op := range ops[start:end] {
			out.WriteByte(op.kind)
			out.WriteString(op.line)
			if !strings.HasSuffix(op.line, "\n") {
				out.WriteString("\n\\ No newline at end of file\n")
			}
		}
		i = end
	}
}
