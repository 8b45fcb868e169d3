package envelope

import (
	"slices"
	"testing"
)

func lookup(t testing.TB, name string) *Schema {
	s, err := LookupSchema(name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestSchemaReportsEveryViolation: on each realistic document, one pass
// reports exactly the violations it holds, by JSON pointer and keyword.
func TestSchemaReportsEveryViolation(t *testing.T) {
	t.Parallel()
	for _, d := range parsedDocs(t) {
		got := violationKeys(lookup(t, d.schema).Validate(d.tree))
		want := slices.Sorted(slices.Values(d.want))
		if !slices.Equal(got, want) {
			t.Errorf("%s/%s:\n got %q\nwant %q", d.schema, d.name, got, want)
		}
	}
}

// BenchmarkSchema validates each realistic document; "parse" is the cost
// of reading the same document with ParseJSON, for scale. The numbers and
// the comparison with the validator this replaced are in
// docs/decisions/D-6-json-schema.md.
func BenchmarkSchema(b *testing.B) {
	for _, d := range parsedDocs(b) {
		b.Run("parse/"+d.schema+"/"+d.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ParseJSON([]byte(d.json)); err != nil {
					b.Fatal(err)
				}
			}
		})
		s := lookup(b, d.schema)
		b.Run("v6/"+d.schema+"/"+d.name, func(b *testing.B) {
			b.ReportAllocs()
			var n int
			for b.Loop() {
				n = len(s.Validate(d.tree))
			}
			b.ReportMetric(float64(n), "violations/op")
		})
	}
}
