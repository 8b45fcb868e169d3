package envelope

import (
	"slices"
	"testing"
)

// validator is what both engines offer.
type validator interface{ Validate(v any) []Violation }

func engines(t testing.TB, name string) map[string]validator {
	src, err := SchemaSource(name)
	if err != nil {
		t.Fatal(err)
	}
	hand, err := CompileSchema(name, src)
	if err != nil {
		t.Fatal(err)
	}
	v6, err := compileV6(name, src)
	if err != nil {
		t.Fatal(err)
	}
	return map[string]validator{"hand": hand, "v6": v6}
}

// TestSchemaEngines: on each realistic document, which violations each
// engine reports, against the ones the document holds.
func TestSchemaEngines(t *testing.T) {
	t.Parallel()
	for _, d := range parsedDocs(t) {
		for name, e := range engines(t, d.schema) {
			got := violationKeys(e.Validate(d.tree))
			want := slices.Sorted(slices.Values(d.want))
			if !slices.Equal(got, want) {
				t.Errorf("%s on %s/%s:\n got %q\nwant %q", name, d.schema, d.name, got, want)
			}
		}
	}
}

// BenchmarkSchema validates each realistic document with each engine;
// "parse" is the cost of reading the same document with ParseJSON, for
// scale.
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
		es := engines(b, d.schema)
		for _, name := range []string{"hand", "v6"} {
			e := es[name]
			b.Run(name+"/"+d.schema+"/"+d.name, func(b *testing.B) {
				b.ReportAllocs()
				var n int
				for b.Loop() {
					n = len(e.Validate(d.tree))
				}
				b.ReportMetric(float64(n), "violations/op")
			})
		}
	}
}
