package strictyaml

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// benchPlan is a plan-like document of n tasks, in block and flow style.
func benchPlan(n int) []byte {
	var b strings.Builder
	b.WriteString("version: 1\nmax_parallel: 16\nagents:\n  sh: &sh {kind: command, argv: [\"true\"], env: {GOFLAGS: -mod=mod}}\n  lint: {<<: *sh, argv: [make, lint]}\ntasks:\n")
	for i := range n {
		if i%2 == 0 {
			fmt.Fprintf(&b, "  - id: t%d\n    objective: \"do part %d of the work, with its tests\"\n    agent: sh\n    write_scope: [src/p%d/, tests/p%d/]\n    estimate_s: %d\n    budget: {usd: 1.5, input_tokens: 200000}\n", i, i, i, i, 30+i%90)
		} else {
			fmt.Fprintf(&b, "  - {id: t%d, objective: do %d, agent: lint, write_scope: [src/q%d/], deps: [t%d, {task: t%d, kind: control}]}\n", i, i, i, i-1, i/2)
		}
	}
	return []byte(b.String())
}

type benchTask struct {
	ID         string         `yaml:"id"`
	Objective  string         `yaml:"objective"`
	Agent      string         `yaml:"agent"`
	WriteScope []string       `yaml:"write_scope"`
	EstimateS  float64        `yaml:"estimate_s"`
	Budget     map[string]any `yaml:"budget"`
	Deps       []any          `yaml:"deps"`
}

type benchDoc struct {
	Version     int            `yaml:"version"`
	MaxParallel int            `yaml:"max_parallel"`
	Agents      map[string]any `yaml:"agents"`
	Tasks       []benchTask    `yaml:"tasks"`
}

// BenchmarkParse: what strictness costs over the YAML library on a
// 2,000-task plan: the library's own node tree ("yaml.Node") and struct
// decoding with KnownFields ("yaml.Decode"), against Parse alone, Parse
// then Value (the tree schema validation reads), and Parse then Decode.
func BenchmarkParse(b *testing.B) {
	src := benchPlan(2000)
	b.Run("yaml.Node", func(b *testing.B) {
		b.SetBytes(int64(len(src)))
		b.ReportAllocs()
		for b.Loop() {
			var n yaml.Node
			if err := yaml.Unmarshal(src, &n); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("yaml.Decode", func(b *testing.B) {
		b.SetBytes(int64(len(src)))
		b.ReportAllocs()
		for b.Loop() {
			var d benchDoc
			dec := yaml.NewDecoder(bytes.NewReader(src))
			dec.KnownFields(true)
			if err := dec.Decode(&d); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Parse", func(b *testing.B) {
		b.SetBytes(int64(len(src)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Parse("p.yaml", src, Options{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Parse+Value", func(b *testing.B) {
		b.SetBytes(int64(len(src)))
		b.ReportAllocs()
		for b.Loop() {
			d, err := Parse("p.yaml", src, Options{})
			if err != nil {
				b.Fatal(err)
			}
			d.Value()
		}
	})
	b.Run("Parse+Decode", func(b *testing.B) {
		b.SetBytes(int64(len(src)))
		b.ReportAllocs()
		for b.Loop() {
			d, err := Parse("p.yaml", src, Options{})
			if err != nil {
				b.Fatal(err)
			}
			var out benchDoc
			if err := d.Decode(&out); err != nil {
				b.Fatal(err)
			}
		}
	})
}
