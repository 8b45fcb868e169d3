package durable

import (
	"regexp"
	"strings"
)

// The scanners below return exactly what the corresponding default regexp's
// FindAllStringIndex returns (leftmost-first, non-overlapping), but find
// their candidates with a byte scan (strings.IndexByte on a rare byte of
// the pattern's literal) and confirm each with the pattern anchored at the
// candidate, instead of running every regexp over the whole text.
// FuzzScanners checks the equivalence.

var (
	bearerAt    = regexp.MustCompile(`^(?i)bearer\s+[A-Za-z0-9\-_\.=]{20,}`)
	awsSecretAt = regexp.MustCompile(`^(?i)aws_secret_access_key["'\s:=]+[A-Za-z0-9/+=]{40}`)
	domainAt    = regexp.MustCompile(`^[A-Za-z0-9.\-]+\.[A-Za-z]{2,}`)
)

// literalScan returns a scanner for a pattern whose matches all start with
// the case-sensitive literal lit: candidates are found by the byte at
// offset trig of lit, checked for the literal, and confirmed by at (the
// pattern anchored with ^).
func literalScan(lit string, trig int, at *regexp.Regexp) func(string) [][2]int {
	c := lit[trig]
	return func(s string) [][2]int {
		var out [][2]int
		last := 0
		for i := trig; i < len(s); {
			j := strings.IndexByte(s[i:], c)
			if j < 0 {
				break
			}
			p := i + j
			i = p + 1
			start := p - trig
			if start < last || !strings.HasPrefix(s[start:], lit) {
				continue
			}
			if m := at.FindStringIndex(s[start:]); m != nil {
				out = append(out, [2]int{start, start + m[1]})
				last = start + m[1]
				i = max(i, last+trig)
			}
		}
		return out
	}
}

// foldPrefix reports whether s starts with lit under the simple case folding
// RE2's (?i) applies to ASCII letters, including s↔ſ (U+017F) and k↔K
// (U+212A).
func foldPrefix(s, lit string) bool {
	for i := 0; i < len(lit); i++ {
		c := lit[i]
		if len(s) == 0 {
			return false
		}
		b := s[0]
		switch {
		case b == c || (c >= 'a' && c <= 'z' && b == c-32):
			s = s[1:]
		case c == 's' && strings.HasPrefix(s, "\u017f"):
			s = s[len("\u017f"):]
		case c == 'k' && strings.HasPrefix(s, "\u212a"):
			s = s[len("\u212a"):]
		default:
			return false
		}
	}
	return true
}

// foldScan finds case-insensitive occurrences of lit (whose first letter has
// no non-ASCII fold) and confirms each with the anchored at.
func foldScan(s, lit string, at *regexp.Regexp) [][2]int {
	var out [][2]int
	lo, up := lit[0], lit[0]-32
	nextLo, nextUp := -1, -1
	for i := 0; i < len(s); {
		if nextLo < i {
			if nextLo = strings.IndexByte(s[i:], lo); nextLo >= 0 {
				nextLo += i
			} else {
				nextLo = len(s)
			}
		}
		if nextUp < i {
			if nextUp = strings.IndexByte(s[i:], up); nextUp >= 0 {
				nextUp += i
			} else {
				nextUp = len(s)
			}
		}
		p := min(nextLo, nextUp)
		if p >= len(s) {
			break
		}
		i = p + 1
		if !foldPrefix(s[p:], lit) {
			continue
		}
		if m := at.FindStringIndex(s[p:]); m != nil {
			out = append(out, [2]int{p, p + m[1]})
			i = p + m[1]
		}
	}
	return out
}

func scanBearer(s string) [][2]int { return foldScan(s, "bearer", bearerAt) }

func scanAWSSecret(s string) [][2]int { return foldScan(s, "aws_secret_access_key", awsSecretAt) }

func isLocalPart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '.' || c == '_' || c == '%' || c == '+' || c == '-'
}

// scanEmail matches [A-Za-z0-9._%+\-]+@[A-Za-z0-9.\-]+\.[A-Za-z]{2,}: every
// match holds exactly one "@", its local part is the class run before it
// (not reaching into the previous match) and its domain the anchored rest.
func scanEmail(s string) [][2]int {
	var out [][2]int
	prevEnd := 0
	for i := 0; i < len(s); i++ {
		j := strings.IndexByte(s[i:], '@')
		if j < 0 {
			break
		}
		a := i + j
		i = a
		start := a
		for start > prevEnd && isLocalPart(s[start-1]) {
			start--
		}
		if start == a {
			continue
		}
		m := domainAt.FindStringIndex(s[a+1:])
		if m == nil {
			continue
		}
		end := a + 1 + m[1]
		out = append(out, [2]int{start, end})
		prevEnd = end
		i = end - 1
	}
	return out
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// scanSSN matches \b\d{3}-\d{2}-\d{4}\b with RE2's ASCII word boundaries.
// Every match has its first dash at offset 3, so the dashes enumerate the
// candidate starts in order.
func scanSSN(s string) [][2]int {
	var out [][2]int
	lastEnd := 0
	for d := 0; d < len(s); d++ {
		j := strings.IndexByte(s[d:], '-')
		if j < 0 {
			break
		}
		d += j
		start := d - 3
		if start < lastEnd || !ssnAt(s, start) {
			continue
		}
		out = append(out, [2]int{start, start + 11})
		lastEnd = start + 11
	}
	return out
}

// ssnAt reports whether an SSN-shaped match starts exactly at i.
func ssnAt(s string, i int) bool {
	if i+11 > len(s) {
		return false
	}
	if i > 0 && isWordByte(s[i-1]) {
		return false
	}
	if i+11 < len(s) && isWordByte(s[i+11]) {
		return false
	}
	for k, c := range []byte(s[i : i+11]) {
		switch k {
		case 3, 6:
			if c != '-' {
				return false
			}
		default:
			if !isDigit(c) {
				return false
			}
		}
	}
	return true
}

// b64Class is the byte set [A-Za-z0-9+/=].
var b64Class = func() (t [256]bool) {
	for c := 0; c < 256; c++ {
		b := byte(c)
		t[c] = b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '+' || b == '/' || b == '='
	}
	return t
}()

// scanBase64 matches [A-Za-z0-9+/=]{200,}: every maximal run of 200 or more.
func scanBase64(s string) [][2]int {
	var out [][2]int
	for i := 0; i < len(s); {
		if !b64Class[s[i]] {
			i++
			continue
		}
		j := i
		for j < len(s) && b64Class[s[j]] {
			j++
		}
		if j-i >= 200 {
			out = append(out, [2]int{i, j})
		}
		i = j
	}
	return out
}
