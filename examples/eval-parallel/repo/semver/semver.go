// Package semver parses and prints versions as Semantic Versioning 2.0.0
// defines them: MAJOR.MINOR.PATCH, an optional pre-release after "-" and
// optional build metadata after "+".
package semver

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrSyntax is returned for a string that is not a semantic version.
var ErrSyntax = errors.New("semver: invalid version")

// Version is a parsed semantic version.
type Version struct {
	Major, Minor, Patch int
	// Pre holds the dot-separated pre-release identifiers ("rc", "1" for
	// -rc.1); nil for a release.
	Pre []string
	// Build is the build metadata without its "+"; "" for none.
	Build string
}

// Parse parses s, with or without a leading "v".
func Parse(s string) (Version, error) {
	bad := func(why string) (Version, error) { return Version{}, fmt.Errorf("%w: %q: %s", ErrSyntax, s, why) }
	rest := strings.TrimPrefix(s, "v")
	var v Version
	if i := strings.IndexByte(rest, '+'); i >= 0 {
		v.Build, rest = rest[i+1:], rest[:i]
		if !validIdents(v.Build, false) {
			return bad("bad build metadata")
		}
	}
	if i := strings.IndexByte(rest, '-'); i >= 0 {
		pre := rest[i+1:]
		rest = rest[:i]
		if !validIdents(pre, true) {
			return bad("bad pre-release")
		}
		v.Pre = strings.Split(pre, ".")
	}
	parts := strings.Split(rest, ".")
	if len(parts) != 3 {
		return bad("want MAJOR.MINOR.PATCH")
	}
	nums := []*int{&v.Major, &v.Minor, &v.Patch}
	for i, p := range parts {
		if !isNumeric(p) || (len(p) > 1 && p[0] == '0') {
			return bad("version numbers are digits without leading zeros")
		}
		n, err := strconv.Atoi(p)
		if err != nil {
			return bad("version number too large")
		}
		*nums[i] = n
	}
	return v, nil
}

// String formats v canonically (without a leading "v").
func (v Version) String() string {
	s := fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch)
	if len(v.Pre) > 0 {
		s += "-" + strings.Join(v.Pre, ".")
	}
	if v.Build != "" {
		s += "+" + v.Build
	}
	return s
}

// validIdents checks dot-separated identifiers of [0-9A-Za-z-]; in a
// pre-release, numeric identifiers must not have leading zeros.
func validIdents(s string, pre bool) bool {
	if s == "" {
		return false
	}
	for _, id := range strings.Split(s, ".") {
		if id == "" {
			return false
		}
		for _, r := range id {
			if !(r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
				return false
			}
		}
		if pre && isNumeric(id) && len(id) > 1 && id[0] == '0' {
			return false
		}
	}
	return true
}

// isNumeric reports whether s is one or more ASCII digits.
func isNumeric(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}
