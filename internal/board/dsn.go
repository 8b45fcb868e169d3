package board

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// DefaultLocalPath is the local board's database when a DSN names no path.
const DefaultLocalPath = ".apiary/state.db"

// DSN kinds.
const (
	KindLocal = "local"
	KindEtcd  = "etcd"
)

// DSN is a parsed board address.
//
//	local:PATH                                  SQLite database at PATH
//	local: (or local)                           .apiary/state.db
//	etcd://HOST:PORT[,HOST:PORT...][/PREFIX]    etcd cluster; keys under PREFIX
type DSN struct {
	Kind      string   // KindLocal or KindEtcd
	Path      string   // local: the database file
	Endpoints []string // etcd: HOST:PORT of each member, as given
	Prefix    string   // etcd: key namespace, "" or "PREFIX/" (no leading slash)
}

// ParseDSN parses s. Errors wrap ErrInvalid.
func ParseDSN(s string) (DSN, error) {
	bad := func(why string) (DSN, error) { return DSN{}, fmt.Errorf("board DSN %q: %s: %w", s, why, ErrInvalid) }
	switch {
	case s == KindLocal:
		return DSN{Kind: KindLocal, Path: DefaultLocalPath}, nil
	case strings.HasPrefix(s, KindLocal+":"):
		p := strings.TrimPrefix(s, KindLocal+":")
		if p == "" {
			p = DefaultLocalPath
		}
		if strings.ContainsRune(p, 0) {
			return bad("path holds a NUL byte")
		}
		return DSN{Kind: KindLocal, Path: p}, nil
	case strings.HasPrefix(s, KindEtcd+"://"):
		rest := strings.TrimPrefix(s, KindEtcd+"://")
		hosts, prefix, hasPrefix := strings.Cut(rest, "/")
		if hosts == "" {
			return bad("no endpoints")
		}
		d := DSN{Kind: KindEtcd}
		for _, hp := range strings.Split(hosts, ",") {
			host, port, err := net.SplitHostPort(hp)
			if err != nil {
				return bad(fmt.Sprintf("endpoint %q is not HOST:PORT", hp))
			}
			if host == "" || strings.ContainsAny(host, "/?#@ ") {
				return bad(fmt.Sprintf("endpoint %q has a bad host", hp))
			}
			if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != port {
				return bad(fmt.Sprintf("endpoint %q has a bad port", hp))
			}
			d.Endpoints = append(d.Endpoints, hp)
		}
		if hasPrefix {
			prefix = strings.Trim(prefix, "/")
			if strings.ContainsAny(prefix, "?#") || strings.ContainsRune(prefix, 0) {
				return bad("bad key prefix")
			}
			if prefix != "" {
				d.Prefix = prefix + "/"
			}
		}
		return d, nil
	}
	return bad(`want "local:PATH" or "etcd://HOST:PORT[,HOST:PORT...]"`)
}

// String formats d so that ParseDSN(d.String()) returns d.
func (d DSN) String() string {
	switch d.Kind {
	case KindLocal:
		return KindLocal + ":" + d.Path
	case KindEtcd:
		s := KindEtcd + "://" + strings.Join(d.Endpoints, ",")
		if d.Prefix != "" {
			s += "/" + strings.TrimSuffix(d.Prefix, "/")
		}
		return s
	}
	return ""
}
