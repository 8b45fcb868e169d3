package durable

import (
	"errors"
	"io/fs"
	"path"
	"path/filepath"
	"strings"
	"syscall"
)

// maxSymlinkHops bounds symlink resolution, like the kernel's MAXSYMLINKS.
const maxSymlinkHops = 40

// target is a user path resolved inside one root: rel is canonical (no
// symlinks in existing components, no "." or "..", "/" separated, "." for the
// root itself) and disp is how results and the journal name it.
type target struct {
	root *root
	rel  string
	disp string
	raw  string
}

// resolve turns a user-supplied path into a target, refusing everything that
// could leave the root or reach the server's state:
//   - empty paths, NUL bytes, absolute paths ("/x", "//x"),
//   - ".." that climbs out lexically (compared by component, never by string
//     prefix, so "../ws_evil" is refused for root "ws"),
//   - symlinks (file or directory, relative or absolute) leading outside,
//   - dangling symlinks (whose target does not exist),
//   - the state directory and everything beneath it.
//
// "~" is never expanded. An inside symlink resolves to its target, so
// writing "alias" (alias -> real) replaces "real" and keeps the link.
// Resolution is advisory naming only: every later operation still goes
// through os.Root, which refuses a component swapped for an escaping
// symlink in the meantime.
func (w *Workspace) resolve(raw string) (target, error) {
	ctx := map[string]any{"path": raw}
	if raw == "" {
		return target{}, policyErr(ReasonPermission, "empty_path", ctx)
	}
	if strings.IndexByte(raw, 0) >= 0 {
		return target{}, policyErr(ReasonPermission, "nul_byte_in_path", ctx)
	}
	r := w.ws()
	rest := raw
	if strings.HasPrefix(raw, "@") && len(w.roots) > 1 {
		name, after, _ := strings.Cut(raw[1:], "/")
		r = nil
		for _, cand := range w.roots[1:] {
			if cand.name == name {
				r = cand
			}
		}
		if r == nil {
			names := []string{}
			for _, cand := range w.roots[1:] {
				names = append(names, "@"+cand.name)
			}
			ctx["roots"] = names
			return target{}, policyErr(ReasonPermission, "unknown_root", ctx)
		}
		rest = after
		if rest == "" {
			rest = "."
		}
	}
	if strings.HasPrefix(rest, "/") {
		return target{}, policyErr(ReasonPermission, "absolute_path_rejected", ctx)
	}
	clean := path.Clean(rest)
	if clean == ".." || strings.HasPrefix(clean, "../") {
		return target{}, policyErr(ReasonPermission, "escapes_workspace", ctx)
	}
	if r == w.ws() && w.inState(clean) {
		return target{}, policyErr(ReasonPermission, "state_dir_protected", ctx)
	}
	rel, err := canonical(r, clean)
	if err != nil {
		if e, ok := err.(*Error); ok {
			e.Context["path"] = raw
			return target{}, e
		}
		return target{}, fsError(err, raw)
	}
	if r == w.ws() && w.inState(rel) {
		return target{}, policyErr(ReasonPermission, "state_dir_protected", ctx)
	}
	t := target{root: r, rel: rel, raw: raw, disp: rel}
	if r.name != "" {
		t.disp = "@" + r.name
		if rel != "." {
			t.disp += "/" + rel
		}
	}
	return t, nil
}

// inState reports whether the workspace-relative clean path is the state
// directory or beneath it.
func (w *Workspace) inState(rel string) bool {
	return rel == w.state || strings.HasPrefix(rel, w.state+"/")
}

// canonical resolves symlinks in the existing prefix of rel (already
// lexically clean and inside) and returns the symlink-free relative path.
func canonical(r *root, rel string) (string, error) {
	var comps []string
	var fromLink []bool
	if rel != "." {
		comps = strings.Split(rel, "/")
		fromLink = make([]bool, len(comps))
	}
	var out []string
	hops := 0
	for len(comps) > 0 {
		c, linked := comps[0], fromLink[0]
		comps, fromLink = comps[1:], fromLink[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(out) == 0 {
				return "", policyErr(ReasonPermission, "escapes_workspace", map[string]any{"via": "symlink"})
			}
			out = out[:len(out)-1]
			continue
		}
		cand := strings.Join(append(out[:len(out):len(out)], c), "/")
		fi, err := r.r.Lstat(cand)
		if errors.Is(err, fs.ErrNotExist) {
			if linked {
				return "", policyErr(ReasonPermission, "dangling_symlink", nil)
			}
			out = append(out, c)
			for i, c2 := range comps {
				switch c2 {
				case "", ".":
				case "..":
					if len(out) == 0 {
						return "", policyErr(ReasonPermission, "escapes_workspace", map[string]any{"via": "symlink"})
					}
					out = out[:len(out)-1]
				default:
					if fromLink[i] {
						return "", policyErr(ReasonPermission, "dangling_symlink", nil)
					}
					out = append(out, c2)
				}
			}
			break
		}
		if err != nil {
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			out = append(out, c)
			continue
		}
		hops++
		if hops > maxSymlinkHops {
			return "", policyErr(ReasonPermission, "too_many_symlinks", nil)
		}
		link, err := r.r.Readlink(cand)
		if err != nil {
			return "", err
		}
		var spliced []string
		if filepath.IsAbs(link) {
			inside, ok := within(r.dir, link)
			if !ok {
				return "", policyErr(ReasonPermission, "escapes_workspace", map[string]any{"via": "symlink"})
			}
			out = nil
			if inside != "." {
				spliced = strings.Split(inside, "/")
			}
		} else {
			spliced = strings.Split(filepath.ToSlash(link), "/")
		}
		marks := make([]bool, len(spliced))
		for i := range marks {
			marks[i] = true
		}
		comps = append(spliced, comps...)
		fromLink = append(marks, fromLink...)
	}
	if len(out) == 0 {
		return ".", nil
	}
	return strings.Join(out, "/"), nil
}

// within returns abs relative to dir if abs is dir or beneath it.
func within(dir, abs string) (string, bool) {
	abs = filepath.Clean(abs)
	if abs == dir {
		return ".", true
	}
	if rest, ok := strings.CutPrefix(abs, dir+string(filepath.Separator)); ok {
		return filepath.ToSlash(rest), true
	}
	if dir == "/" {
		return filepath.ToSlash(strings.TrimPrefix(abs, "/")), true
	}
	return "", false
}

// isEscape reports whether err is os.Root's refusal of a path leaving it.
// os does not export the sentinel, so the message is matched.
func isEscape(err error) bool {
	return err != nil && strings.Contains(err.Error(), "path escapes from parent")
}

// errnoOf extracts the errno of err, if any.
func errnoOf(err error) (syscall.Errno, bool) {
	var no syscall.Errno
	if errors.As(err, &no) {
		return no, true
	}
	return 0, false
}

// fsError maps a filesystem error to an envelope, following Resilient
// Write's errno table: EACCES/EPERM → policy_violation/permission, ENOSPC →
// quota_exceeded/size_limit (action split; RW says abort), anything else →
// policy_violation/unknown, each with errno and strerror in the context.
// Escapes and symlink loops are permission refusals.
func fsError(err error, p string) *Error {
	ctx := map[string]any{"path": p}
	if e, ok := err.(*Error); ok {
		return e
	}
	if isEscape(err) {
		ctx["via"] = "symlink"
		return policyErr(ReasonPermission, "escapes_workspace", ctx)
	}
	no, ok := errnoOf(err)
	if !ok {
		ctx["detail"] = err.Error()
		return corruptErr(ReasonUnknown, "io_error", ctx)
	}
	ctx["errno"] = int(no)
	ctx["strerror"] = no.Error()
	switch no {
	case syscall.EACCES, syscall.EPERM:
		return newErr(KindPolicyViolation, ReasonPermission, ActionAbort, ctx)
	case syscall.ENOSPC, syscall.EDQUOT:
		return newErr(KindQuotaExceeded, ReasonSizeLimit, ActionSplit, ctx)
	case syscall.ELOOP:
		ctx["reason"] = "symlink_in_path"
		return newErr(KindPolicyViolation, ReasonPermission, ActionAbort, ctx)
	case syscall.EXDEV:
		ctx["reason"] = "cross_device"
		return newErr(KindPolicyViolation, ReasonUnknown, ActionAbort, ctx)
	}
	return newErr(KindPolicyViolation, ReasonUnknown, ActionAbort, ctx)
}
