package board

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	"go.uber.org/goleak"
)

func TestParseDSN(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want DSN
		bad  bool
	}{
		{in: "local", want: DSN{Kind: KindLocal, Path: DefaultLocalPath}},
		{in: "local:", want: DSN{Kind: KindLocal, Path: DefaultLocalPath}},
		{in: "local:/tmp/b.db", want: DSN{Kind: KindLocal, Path: "/tmp/b.db"}},
		{in: "local:rel/x.db", want: DSN{Kind: KindLocal, Path: "rel/x.db"}},
		{in: "etcd://127.0.0.1:2379", want: DSN{Kind: KindEtcd, Endpoints: []string{"127.0.0.1:2379"}}},
		{in: "etcd://a:1,b:2,[::1]:3", want: DSN{Kind: KindEtcd, Endpoints: []string{"a:1", "b:2", "[::1]:3"}}},
		{in: "etcd://a:1/apiary/run1", want: DSN{Kind: KindEtcd, Endpoints: []string{"a:1"}, Prefix: "apiary/run1/"}},
		{in: "etcd://a:1/", want: DSN{Kind: KindEtcd, Endpoints: []string{"a:1"}}},
		{in: "", bad: true},
		{in: "sqlite:x.db", bad: true},
		{in: "etcd://", bad: true},
		{in: "etcd://host", bad: true},
		{in: "etcd://host:0", bad: true},
		{in: "etcd://host:65536", bad: true},
		{in: "etcd://host:+80", bad: true},
		{in: "etcd://:2379", bad: true},
		{in: "etcd://a:1,,b:2", bad: true},
		{in: "etcd://a:1/p?x", bad: true},
		{in: "etcd://u@a:1", bad: true},
		{in: "local:a\x00b", bad: true},
	} {
		got, err := ParseDSN(tc.in)
		if tc.bad {
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("ParseDSN(%q) = %+v, %v; want ErrInvalid", tc.in, got, err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParseDSN(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
}

// FuzzParseDSN checks that ParseDSN never panics, rejects with ErrInvalid
// only, and that String round-trips whatever it accepts.
func FuzzParseDSN(f *testing.F) {
	for _, s := range []string{"local", "local:", "local:x.db", "etcd://a:1", "etcd://a:1,b:2/p/q", "etcd://[::1]:2379/", "etcd://a:1//", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDSN(s)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("ParseDSN(%q) error %v does not wrap ErrInvalid", s, err)
			}
			return
		}
		again, err := ParseDSN(d.String())
		if err != nil || !reflect.DeepEqual(again, d) {
			t.Fatalf("ParseDSN(%q) = %+v; String %q parses as %+v, %v", s, d, d.String(), again, err)
		}
	})
}

func ExampleParseDSN() {
	d, _ := ParseDSN("etcd://10.0.0.1:2379,10.0.0.2:2379/apiary")
	fmt.Println(d.Kind, d.Endpoints, d.Prefix)
	d, _ = ParseDSN("local:")
	fmt.Println(d.Kind, d.Path)
	// Output:
	// etcd [10.0.0.1:2379 10.0.0.2:2379] apiary/
	// local .apiary/state.db
}

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
