package review

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkFindDecisionRefs measures the decisions gate's scan of one
// 10,000-line file holding 100 references.
func BenchmarkFindDecisionRefs(b *testing.B) {
	var sb strings.Builder
	for i := range 10000 {
		if i%100 == 0 {
			fmt.Fprintf(&sb, "// decision: D-%d\n", i/100)
			continue
		}
		fmt.Fprintf(&sb, "\tx%d := compute(%d) - y // a line of ordinary code\n", i, i)
	}
	src := []byte(sb.String())
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		if n := len(FindDecisionRefs("f.go", src)); n != 100 {
			b.Fatalf("%d refs", n)
		}
	}
}

// BenchmarkParseGoTestJSON measures parsing the go test -json output of
// 1,000 tests.
func BenchmarkParseGoTestJSON(b *testing.B) {
	var sb strings.Builder
	for i := range 1000 {
		fmt.Fprintf(&sb, `{"Action":"run","Package":"ex.com/m/p%d","Test":"Test%d"}`+"\n", i%20, i)
		fmt.Fprintf(&sb, `{"Action":"output","Package":"ex.com/m/p%d","Test":"Test%d","Output":"=== RUN   Test%d\n"}`+"\n", i%20, i, i)
		fmt.Fprintf(&sb, `{"Action":"pass","Package":"ex.com/m/p%d","Test":"Test%d","Elapsed":0}`+"\n", i%20, i)
	}
	data := []byte(sb.String())
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := parseGoTestJSON(data); err != nil {
			b.Fatal(err)
		}
	}
}
