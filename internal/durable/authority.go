package durable

import (
	"path"
	"strings"
)

// Authority is the enforcement point for what a caller may do. The durable
// tools call Allow(tool, "") before running any tool and Allow(tool, p) for
// every user path p the tool is about to write (display form: workspace-
// relative with "/", or "@root/…" for an extra root). A non-nil error refuses
// the call; an *Error is returned to the model as is, any other error becomes
// policy_violation/permission. A capability token verifier plugs in here.
type Authority interface {
	Allow(tool, path string) error
}

// WriteScope is an Authority that allows writes only at or beneath one of
// its path prefixes (compared component by component, so "src" does not
// cover "src2"). An empty WriteScope allows everything. Tool names are not
// restricted.
type WriteScope []string

// Allow implements Authority.
func (s WriteScope) Allow(tool, p string) error {
	if p == "" || len(s) == 0 {
		return nil
	}
	for _, prefix := range s {
		if underPrefix(p, prefix) {
			return nil
		}
	}
	return policyErr(ReasonPermission, "outside_write_scope", map[string]any{"path": p, "write_scope": []string(s)})
}

// underPrefix reports whether p equals prefix or lies beneath it, comparing
// whole path components.
func underPrefix(p, prefix string) bool {
	prefix = path.Clean(strings.TrimPrefix(prefix, "./"))
	if prefix == "." || prefix == "" {
		return true
	}
	p = path.Clean(p)
	return p == prefix || strings.HasPrefix(p, prefix+"/")
}

// allow consults the configured Authority and normalizes its error.
func (w *Workspace) allow(tool, p string) error {
	if w.cfg.Authority == nil {
		return nil
	}
	err := w.cfg.Authority.Allow(tool, p)
	if err == nil {
		return nil
	}
	if e, ok := err.(*Error); ok {
		return e
	}
	return policyErr(ReasonPermission, "not_authorized", map[string]any{"path": p, "detail": err.Error()})
}

// AllOf is an Authority that allows what every one of as allows.
func AllOf(as ...Authority) Authority { return allOf(as) }

type allOf []Authority

func (as allOf) Allow(tool, path string) error {
	for _, a := range as {
		if err := a.Allow(tool, path); err != nil {
			return err
		}
	}
	return nil
}
