package durable

import (
	"reflect"
	"strings"
	"testing"
)

// FuzzScanners checks that every hand-written scanner finds exactly what
// its default regular expression finds.
func FuzzScanners(f *testing.F) {
	seeds := []string{
		"", "alice@example.com", "a@b.c.de1", "x@a.com.b@c.com", "..@..", "@@a.bc", "mail: a.b+c@d-e.fg, z@y.xx",
		"123-45-6789", "a123-45-6789", "123-45-67890", "1234-56-7890 123-45-6789_", "--123-45-6789--123-45-6789",
		"Bearer abcdefghijklmnopqrstuvwxyz", "BEARER    " + strings.Repeat("x", 30), "bearer\n" + strings.Repeat("=", 20), "bearerbearer " + strings.Repeat("a", 25),
		"aws_secret_access_key=" + strings.Repeat("A", 40), "AWS_SECRET_ACCESS_KEY: '" + strings.Repeat("/", 41), "aws_ſecret_acceſs_Key=" + strings.Repeat("+", 40),
		"aws_secret_access_key==" + strings.Repeat("=", 40), strings.Repeat("A", 199), strings.Repeat("A", 200) + "!" + strings.Repeat("b", 250),
		"bearer ſſſſſſſſſſſſſſſſſſſſſſ", "Bearer KKKKKKKKKKKKKKKKKKKKKKKK",
		"sk-ant-oat01-" + strings.Repeat("A", 42), "sk-sk-" + strings.Repeat("a", 31), "sk-proj-" + strings.Repeat("Z", 40), "pubpub" + strings.Repeat("a", 32),
		"client-client-" + strings.Repeat("x", 30), "AKIAAKIA" + strings.Repeat("B", 16), "gho_gho_" + strings.Repeat("D", 36),
		"eyJa.eyJb.c eyJ.eyJ.x", "-----BEGIN RSA PRIVATE KEY----- -----BEGIN  PRIVATE KEY-----",
	}
	for _, s := range seeds {
		f.Add(s)
	}
	pats := map[string]pattern{}
	for _, p := range defaultPatterns() {
		if p.fast != nil {
			pats[p.name] = p
		}
	}
	f.Fuzz(func(t *testing.T, s string) {
		for name, p := range pats {
			var want [][2]int
			for _, m := range p.re.FindAllStringIndex(s, -1) {
				want = append(want, [2]int{m[0], m[1]})
			}
			if got := p.fast(s); !reflect.DeepEqual(got, want) {
				t.Fatalf("%s on %q: scanner %v, regexp %v", name, s, got, want)
			}
		}
	})
}

// TestScoreArithmetic: scores add in exact fixed point, so OAT + GHO is
// exactly 0.70 and therefore "high".
func TestScoreArithmetic(t *testing.T) {
	t.Parallel()
	pol := defaultPolicy()
	oat := "sk-ant-oat01-" + strings.Repeat("A", 42)
	gho := "gho_" + strings.Repeat("D", 36)
	for _, tc := range []struct {
		text    string
		score   int
		verdict string
	}{
		{oat + "\n" + gho + "\n", 7000, "high"},
		{"Bearer " + oat + "\n" + gho + "\n", 7875, "high"},
		{strings.Repeat(gho+"\n", 5), 5250, "medium"},
		{strings.Repeat(gho+"\n", 2), 4375, "medium"},
		{strings.Repeat(gho+"\n", 3), 5250, "medium"},
	} {
		if rep := scoreContent(tc.text, pol); rep.score != tc.score || rep.verdict != tc.verdict {
			t.Errorf("%.20q: %d %s, want %d %s", tc.text, rep.score, rep.verdict, tc.score, tc.verdict)
		}
	}
}
