package strictyaml

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

// duration decodes from text, as config.Duration does.
type duration time.Duration

func (d *duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("not a duration: %q", b)
	}
	*d = duration(v)
	return nil
}

type base struct {
	Kind string `yaml:"kind"`
	Name string `yaml:"name"`
}

type extra struct {
	Note string `yaml:"note"`
}

type sample struct {
	base                      // promoted: kind, name (name is shadowed below)
	Name     string           `yaml:"name"`
	Extra    extra            `yaml:",inline"`
	Count    int              `yaml:"count"`
	Small    int8             `yaml:"small"`
	Size     uint             `yaml:"size"`
	Ratio    float64          `yaml:"ratio"`
	On       bool             `yaml:"on"`
	Wait     duration         `yaml:"wait"`
	Opt      *bool            `yaml:"opt"`
	Tags     []string         `yaml:"tags"`
	Env      map[string]int   `yaml:"env"`
	Any      any              `yaml:"any"`
	Sub      *sample          `yaml:"sub"`
	JSONName string           `json:"json_name"`
	Skipped  string           `yaml:"-"`
	Untagged string           // never decoded
	Kinds    map[string]*base `yaml:"kinds"`
}

func TestDecode(t *testing.T) {
	t.Parallel()
	src := `kind: command
name: outer
note: inlined
count: 0x10
small: -128
size: 1.0
ratio: 1e-3
on: true
wait: 250ms
opt: false
tags: [a, 1, true, 0x10, 2001-01-01]
env: {A: 1, B: 2}
any: {x: [1, "y", null]}
sub: {count: 2, tags: []}
json_name: j
kinds: {k: {kind: z}, n: ~}
`
	var s sample
	if err := mustParse(t, src).Decode(&s); err != nil {
		t.Fatal(err)
	}
	if s.Kind != "command" || s.base.Name != "" || s.Name != "outer" || s.Extra.Note != "inlined" {
		t.Errorf("promotion: %+v", s)
	}
	if s.Count != 16 || s.Small != -128 || s.Size != 1 || s.Ratio != 0.001 || !s.On || s.Wait != duration(250*time.Millisecond) {
		t.Errorf("scalars: %+v", s)
	}
	if s.Opt == nil || *s.Opt || !reflect.DeepEqual(s.Tags, []string{"a", "1", "true", "0x10", "2001-01-01"}) {
		t.Errorf("opt %v tags %q", s.Opt, s.Tags)
	}
	if !reflect.DeepEqual(s.Env, map[string]int{"A": 1, "B": 2}) || s.JSONName != "j" {
		t.Errorf("env %v json %q", s.Env, s.JSONName)
	}
	if got := toJSON(t, s.Any); got != `{"x":[1,"y",null]}` {
		t.Errorf("any %s", got)
	}
	if s.Sub == nil || s.Sub.Count != 2 || s.Sub.Tags == nil || len(s.Sub.Tags) != 0 {
		t.Errorf("sub %+v", s.Sub)
	}
	if s.Kinds["k"].Kind != "z" || s.Kinds["n"] != nil || len(s.Kinds) != 2 {
		t.Errorf("kinds %+v", s.Kinds)
	}
}

// TestDecodeErrors: every problem is reported in one pass, each at its
// place, and what fits is still decoded.
func TestDecodeErrors(t *testing.T) {
	t.Parallel()
	src := `kind: [x]
count: lots
small: 300
size: -1
ratio: fast
on: yes
wait: soon
tags: a
env: {A: x}
sub: {cont: 1, count: 3}
untagged: 1
Untagged: 1
name: ok
`
	var s sample
	err := mustParse(t, src).Decode(&s)
	want := []string{
		"t.yaml:1:7: kind: must be a string, not a list",
		"t.yaml:2:8: count: cannot unmarshal !!str `lots` into int",
		"t.yaml:3:8: small: cannot unmarshal !!int `300` into int8",
		"t.yaml:4:7: size: cannot unmarshal !!int `-1` into uint",
		"t.yaml:5:8: ratio: cannot unmarshal !!str `fast` into float64",
		"t.yaml:6:5: on: must be true or false",
		`t.yaml:7:7: wait: not a duration: "soon"`,
		"t.yaml:8:7: tags: must be a list, not a string",
		"t.yaml:9:10: env.A: cannot unmarshal !!str `x` into int",
		"t.yaml:10:7: sub.cont: unknown field (want one of name, count, small, size, ratio, on, wait, opt, tags, env, any, sub, json_name, kinds, kind, note)",
		"t.yaml:11:1: untagged: unknown field (want one of name, count, small, size, ratio, on, wait, opt, tags, env, any, sub, json_name, kinds, kind, note)",
		"t.yaml:12:1: Untagged: unknown field (want one of name, count, small, size, ratio, on, wait, opt, tags, env, any, sub, json_name, kinds, kind, note)",
	}
	if err == nil {
		t.Fatal("no error")
	}
	if got := strings.Split(err.Error(), "\n"); !reflect.DeepEqual(got, want) {
		t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	var es Errors
	if !errors.As(err, &es) || !errors.Is(es[1], ErrType) || !errors.Is(es[9], ErrUnknownField) {
		t.Errorf("classes: %v", err)
	}
	if s.Name != "ok" || s.Sub == nil || s.Sub.Count != 3 {
		t.Errorf("the fields that fit were not decoded: %+v", s)
	}
}

// TestDecodeMerges: keys left out keep the target's values; a null
// resets one.
func TestDecodeMerges(t *testing.T) {
	t.Parallel()
	on := true
	s := sample{Name: "keep", Count: 1, Tags: []string{"x"}, Opt: &on, Env: map[string]int{"A": 1}}
	if err := mustParse(t, "count: 2\ntags: ~\nopt: null\nenv: {B: 2}\n").Decode(&s); err != nil {
		t.Fatal(err)
	}
	if s.Name != "keep" || s.Count != 2 || s.Tags != nil || s.Opt != nil || !reflect.DeepEqual(s.Env, map[string]int{"A": 1, "B": 2}) {
		t.Errorf("merged %+v", s)
	}
}

// TestDecodeAt: a part decodes on its own, into a type chosen after the
// rest, with errors located in the whole document.
func TestDecodeAt(t *testing.T) {
	t.Parallel()
	d := mustParse(t, "plugins:\n  - name: a\n    with: {count: 2, bogus: 1}\n")
	var top struct {
		Plugins []struct {
			Name string `yaml:"name"`
			With any    `yaml:"with"`
		} `yaml:"plugins"`
	}
	if err := d.Decode(&top); err != nil {
		t.Fatal(err)
	}
	var opts struct {
		Count int `yaml:"count"`
	}
	err := d.DecodeAt(Path{"plugins", 0, "with"}, &opts)
	if err == nil || err.Error() != "t.yaml:3:22: plugins[0].with.bogus: unknown field (want one of count)" || opts.Count != 2 {
		t.Errorf("err = %v, opts %+v", err, opts)
	}
	if err := d.DecodeAt(Path{"plugins", 1, "with"}, &opts); err != nil {
		t.Errorf("a missing part: %v", err)
	}
}

func TestDecodeRejectsBadTargets(t *testing.T) {
	t.Parallel()
	d := mustParse(t, "a: 1\n")
	var s struct{ A int }
	if err := d.Decode(s); err == nil {
		t.Error("decoding into a non-pointer succeeded")
	}
	var m map[int]int
	if err := d.Decode(&m); !errors.Is(err, ErrType) {
		t.Errorf("map with int keys: %v", err)
	}
	var c chan int
	if err := mustParse(t, "1\n").Decode(&c); !errors.Is(err, ErrType) {
		t.Errorf("chan: %v", err)
	}
	var st fmt.Stringer
	if err := mustParse(t, "1\n").Decode(&st); !errors.Is(err, ErrType) {
		t.Errorf("non-empty interface: %v", err)
	}
}

// TestDecodeJSON: a JSON document decodes like the same YAML.
func TestDecodeJSON(t *testing.T) {
	t.Parallel()
	d, err := ParseJSON("t.json", []byte(`{"count": 3, "tags": ["a", 2], "sub": {"ratio": 2.5, "bogus": true}}`), Options{})
	if err != nil {
		t.Fatal(err)
	}
	var s sample
	err = d.Decode(&s)
	if err == nil || !strings.HasPrefix(err.Error(), "t.json:1:54: sub.bogus: unknown field") {
		t.Errorf("err = %v", err)
	}
	if s.Count != 3 || !reflect.DeepEqual(s.Tags, []string{"a", "2"}) || s.Sub.Ratio != 2.5 {
		t.Errorf("decoded %+v", s)
	}
}
