package envelope

import (
	"bytes"
	"testing"
)

// FuzzDecodeEnvelope: no input panics, and any accepted envelope re-encodes
// canonically to a document that decodes to the same bytes again.
func FuzzDecodeEnvelope(f *testing.F) {
	good, err := EncodeEnvelope(validEnvelope(f))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"task_id":"019aa96b-0680-7000-8000-000000000000","objective":"x","inputs":{"workspace":"git:0123456789abcdef0123456789abcdef01234567"},"authority":{"write_scope":["."]},"budget":{},"completion":{},"deps":[],"agent":{"profile":"sh"}}`))
	f.Add([]byte(`{"a":1,"a":2}`))
	f.Add([]byte(`[[[[[[]]]]]]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := DecodeEnvelope(data)
		if err != nil {
			return
		}
		b1, err := EncodeEnvelope(e)
		if err != nil {
			t.Fatalf("accepted envelope does not re-encode: %v\n%s", err, data)
		}
		e2, err := DecodeEnvelope(b1)
		if err != nil {
			t.Fatalf("canonical envelope rejected: %v\n%s", err, b1)
		}
		b2, err := EncodeEnvelope(e2)
		if err != nil || !bytes.Equal(b1, b2) {
			t.Fatalf("canonical encoding not stable: %v\n%s\n%s", err, b1, b2)
		}
	})
}

// FuzzCanonical: canonical encoding is idempotent over anything ParseJSON
// accepts.
func FuzzCanonical(f *testing.F) {
	for _, s := range []string{`{"b":[1,2.5e-7,"x"],"a":null}`, `"\u0000é"`, `1e400`, `-0.0`, `{"":{}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := ParseJSON(data)
		if err != nil {
			return
		}
		c1, err := Canonical(v)
		if err != nil {
			return // numbers out of float64 range have no canonical form
		}
		v2, err := ParseJSON(c1)
		if err != nil {
			t.Fatalf("canonical output does not parse: %v\n%s", err, c1)
		}
		c2, err := Canonical(v2)
		if err != nil || !bytes.Equal(c1, c2) {
			t.Fatalf("not idempotent: %v\n%s\n%s", err, c1, c2)
		}
	})
}
