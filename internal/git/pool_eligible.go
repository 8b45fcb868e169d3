package git

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// The pool writes a blob's bytes to its file unchanged. That is what git's
// checkout does on Linux unless an attribute or a setting converts content
// (a smudge filter, $Id$ expansion, an encoding, CRLF line ends), a path is
// one git would refuse or treat specially (a submodule, ".git" lookalikes),
// or symbolic links are off. conversions finds those cases, conservatively,
// so that the pool hands them to git instead of checking them out itself.
type conversions struct {
	repo   *Repo
	common string

	mu     sync.Mutex
	sig    string            // what the watched files looked like when reason was computed
	files  []string          // configuration and attribute files whose change means re-reading
	reason string            // why the configuration rules the pool out; "" when it does not
	blobs  map[string]string // .gitattributes blob id -> reason ("" when harmless)
}

func newConversions(repo *Repo, common string) *conversions {
	return &conversions{repo: repo, common: common, blobs: map[string]string{}}
}

// configReason returns why git's configuration or attribute files (outside
// the tree) could make a checkout differ from the blobs; "" when they
// cannot. It re-reads the configuration only when one of its files changed.
func (c *conversions) configReason(ctx context.Context) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.files != nil && c.signature(c.files) == c.sig {
		return c.reason, nil
	}
	b, _, err := c.repo.run(ctx, call{args: []string{"config", "--list", "--show-origin", "-z"}})
	if err != nil {
		return "", err
	}
	files := c.standardFiles()
	reason := ""
	attrs := []string{filepath.Join(c.common, "info", "attributes"), c.xdg("attributes")}
	fields := bytes.Split(b, []byte{0})
	for i := 0; i+1 < len(fields); i += 2 {
		origin, kv := string(fields[i]), string(fields[i+1])
		if f, ok := strings.CutPrefix(origin, "file:"); ok {
			if !filepath.IsAbs(f) {
				f = filepath.Join(c.repo.Dir(), f)
			}
			if !slices.Contains(files, f) {
				files = append(files, f)
			}
		}
		k, v, _ := strings.Cut(kv, "\n")
		k, v = strings.ToLower(k), strings.ToLower(strings.TrimSpace(v))
		switch {
		case k == "core.autocrlf" && isTrue(v):
			reason = "core.autocrlf is true"
		case k == "core.eol" && v == "crlf":
			reason = "core.eol is crlf"
		case k == "core.symlinks" && !isTrue(v):
			reason = "core.symlinks is false"
		case k == "core.ignorecase" && isTrue(v):
			reason = "core.ignorecase is true"
		case k == "core.sparsecheckout" && isTrue(v):
			reason = "core.sparseCheckout is set for the repository"
		case k == "core.attributesfile":
			attrs = append(attrs, expandHome(strings.TrimSpace(kv[len(k)+1:]), c.repo.getenv("HOME")))
		}
	}
	for _, f := range attrs {
		files = append(files, f)
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if r := attributeReason(data); r != "" && reason == "" {
			reason = f + ": " + r
		}
	}
	c.files, c.sig, c.reason = files, c.signature(files), reason
	return reason, nil
}

// standardFiles are the configuration files git reads, present or not, so
// that creating one is noticed.
func (c *conversions) standardFiles() []string {
	sys := c.repo.getenv("GIT_CONFIG_SYSTEM")
	if sys == "" {
		sys = "/etc/gitconfig"
	}
	files := []string{sys, filepath.Join(c.common, "config"), c.xdg("config")}
	if g := c.repo.getenv("GIT_CONFIG_GLOBAL"); g != "" {
		files = append(files, g)
	} else if h := c.repo.getenv("HOME"); h != "" {
		files = append(files, filepath.Join(h, ".gitconfig"))
	}
	return files
}

func (c *conversions) xdg(name string) string {
	if x := c.repo.getenv("XDG_CONFIG_HOME"); x != "" {
		return filepath.Join(x, "git", name)
	}
	if h := c.repo.getenv("HOME"); h != "" {
		return filepath.Join(h, ".config", "git", name)
	}
	return ""
}

// signature sums up the files' contents: git rewrites the repository's
// configuration for many reasons (deleting a branch does) without changing
// what matters here.
func (c *conversions) signature(files []string) string {
	h := sha256.New()
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			b = []byte("\x00missing")
		}
		fmt.Fprintf(h, "%s\x00%d\x00", f, len(b))
		h.Write(b)
	}
	return string(h.Sum(nil))
}

// blobReason returns why a .gitattributes blob could convert content, from
// a cache by blob id.
func (c *conversions) blobReason(oid string, data []byte) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.blobs[oid]
	if !ok {
		r = attributeReason(data)
		c.blobs[oid] = r
	}
	return r
}

// attributeReason scans an attributes file for any attribute that can
// change a file's content on checkout — filter, ident,
// working-tree-encoding, eol=crlf — wherever it appears (a macro included).
// It over-approximates: a pattern that happens to spell one of them counts.
func attributeReason(data []byte) string {
	for line := range strings.SplitSeq(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		for _, f := range strings.Fields(line) {
			f = strings.TrimLeft(f, "-!")
			name, value, _ := strings.Cut(f, "=")
			switch {
			case name == "filter", name == "ident", name == "working-tree-encoding":
				return "attribute " + name
			case name == "eol" && value == "crlf":
				return "attribute eol=crlf"
			}
		}
	}
	return ""
}

// pathReason returns why the pool must not write a tree entry itself: a
// submodule, or a path git refuses or protects (".git" in any spelling NTFS
// or HFS+ would treat as it, backslashes).
func pathReason(path string, mode uint32) string {
	if mode == 0o160000 {
		return "submodule " + path
	}
	if mode != 0o100644 && mode != 0o100755 && mode != 0o120000 {
		return fmt.Sprintf("mode %o at %s", mode, path)
	}
	if strings.ContainsAny(path, "\\:") {
		return "path " + path
	}
	for c := range strings.SplitSeq(path, "/") {
		l := strings.ToLower(c)
		if c == "" || c == "." || c == ".." || strings.TrimRight(l, ". ") == ".git" || strings.HasPrefix(l, "git~") {
			return "path " + path
		}
	}
	return ""
}

func isTrue(v string) bool {
	switch v {
	case "", "true", "yes", "on", "1":
		return true
	}
	return false
}

func expandHome(p, home string) string {
	if rest, ok := strings.CutPrefix(p, "~/"); ok && home != "" {
		return filepath.Join(home, rest)
	}
	return p
}
