package review

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/apiary-dev/apiary/internal/gate"
	"github.com/apiary-dev/apiary/internal/rundir"
)

// Decision statuses.
const (
	StatusProposed   = "proposed"
	StatusAccepted   = "accepted"
	StatusRejected   = "rejected"
	StatusDeprecated = "deprecated"
	StatusSuperseded = "superseded"
)

// Decision is one decision record: a Markdown file under the decisions
// directory (docs/decisions by default) whose first heading is
// "# D-<n>: Title" and which has a "Status:" line — proposed, accepted,
// rejected, deprecated, or "superseded by D-<m>". See docs/decisions.
type Decision struct {
	ID           string `json:"id"` // "D-12", normalized (no leading zeros)
	Title        string `json:"title"`
	Status       string `json:"status"`
	SupersededBy string `json:"superseded_by,omitempty"`
	File         string `json:"file"` // repository-relative
	// AppliesTo are the paths (globs, as in when: rules) the decision
	// constrains, from "Applies to: `a/*.go`, `b/`" lines; none means the
	// files that refer to it ("decision: D-<n>").
	AppliesTo []string `json:"applies_to,omitempty"`
	// Forbids are regular expressions (RE2) for what the decision rules
	// out, from "Forbids: `math/rand`" lines: a line the change adds to a
	// path the decision applies to that matches one contradicts it.
	Forbids []string `json:"forbids,omitempty"`
}

// ErrDecisionFormat: a decision record does not follow the format.
var ErrDecisionFormat = errors.New("malformed decision record")

var (
	decisionHeading = regexp.MustCompile(`^#\s+D-0*([0-9]{1,6})\s*(?::|—|–|-)\s*(\S.*?)\s*$`)
	decisionStatus  = regexp.MustCompile(`(?i)^(?:[-*]\s+)?(?:\*\*)?status(?:\*\*)?\s*:\s*(?:\*\*\s*)?(.*?)\s*$`)
	supersededBy    = regexp.MustCompile(`(?i)^superseded\s+by\s+D-0*([0-9]{1,6})\.?$`)
	// decisionRefAt matches a reference in code and plans at the start of
	// its input: "decision: D-3" or "decisions: D-3, D-7", in any comment
	// syntax.
	decisionRefAt = regexp.MustCompile(`^(?i)decisions?[ \t]*:[ \t]*(D-[0-9]{1,6}(?:[ \t]*,[ \t]*D-[0-9]{1,6})*)`)
	// constraintLine matches "Applies to: ..." and "Forbids: ...", as a
	// list item or bold like the Status line.
	constraintLine = regexp.MustCompile(`(?i)^(?:[-*]\s+)?(?:\*\*)?(applies to|forbids)(?:\*\*)?\s*:\s*(?:\*\*\s*)?(.*?)\s*$`)
	backticked     = regexp.MustCompile("`([^`]+)`")
	refID          = regexp.MustCompile(`(?i)D-0*([0-9]{1,6})`)
)

// ParseDecision reads one decision record: its heading, its first Status
// line and any "Applies to:" and "Forbids:" lines (each listing
// backquoted globs or regular expressions). Errors wrap ErrDecisionFormat
// and name the line.
func ParseDecision(file string, src []byte) (Decision, error) {
	d := Decision{File: file}
	sc := bufio.NewScanner(bytes.NewReader(src))
	sc.Buffer(make([]byte, 4096), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(strings.TrimPrefix(sc.Text(), "\ufeff"))
		if d.ID == "" {
			if line == "" {
				continue
			}
			m := decisionHeading.FindStringSubmatch(line)
			if m == nil {
				return d, fmt.Errorf("%w: %s:%d: the first line must be a heading \"# D-<n>: Title\", got %q", ErrDecisionFormat, file, n, clipLine(line))
			}
			d.ID, d.Title = "D-"+m[1], m[2]
			continue
		}
		if m := constraintLine.FindStringSubmatch(line); m != nil {
			var items []string
			for _, b := range backticked.FindAllStringSubmatch(m[2], -1) {
				items = append(items, b[1])
			}
			if len(items) == 0 {
				return d, fmt.Errorf("%w: %s:%d: %s: list its items in backquotes, got %q", ErrDecisionFormat, file, n, m[1], clipLine(m[2]))
			}
			if strings.EqualFold(m[1], "forbids") {
				for _, it := range items {
					if _, err := regexp.Compile(it); err != nil {
						return d, fmt.Errorf("%w: %s:%d: Forbids: %q is not a regular expression: %v", ErrDecisionFormat, file, n, it, err)
					}
				}
				d.Forbids = append(d.Forbids, items...)
			} else {
				d.AppliesTo = append(d.AppliesTo, items...)
			}
			continue
		}
		if d.Status != "" {
			continue
		}
		m := decisionStatus.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		st := strings.ToLower(strings.TrimRight(strings.TrimSpace(strings.TrimSuffix(m[1], "**")), "."))
		switch st {
		case StatusProposed, StatusAccepted, StatusRejected, StatusDeprecated:
			d.Status = st
		default:
			sm := supersededBy.FindStringSubmatch(st)
			if sm == nil {
				return d, fmt.Errorf("%w: %s:%d: status %q (want proposed, accepted, rejected, deprecated or \"superseded by D-<n>\")", ErrDecisionFormat, file, n, clipLine(m[1]))
			}
			d.Status, d.SupersededBy = StatusSuperseded, "D-"+sm[1]
		}
	}
	if err := sc.Err(); err != nil {
		return d, fmt.Errorf("%w: %s: %v", ErrDecisionFormat, file, err)
	}
	if d.ID == "" {
		return d, fmt.Errorf("%w: %s: no \"# D-<n>: Title\" heading", ErrDecisionFormat, file)
	}
	if d.Status == "" {
		return d, fmt.Errorf("%w: %s: no \"Status:\" line", ErrDecisionFormat, file)
	}
	return d, nil
}

// DecisionRef is one reference to a decision found in a file.
type DecisionRef struct {
	ID   string
	File string
	Line int
}

// FindDecisionRefs returns the decision references in src, in order. A
// reference stays on one line. Candidates are found by a byte search for
// "decision" (ASCII case folded) and confirmed by the anchored pattern, so
// the scan runs at memory speed on files without references.
func FindDecisionRefs(file string, src []byte) []DecisionRef {
	low := make([]byte, len(src))
	for i, c := range src {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		low[i] = c
	}
	var out []DecisionRef
	line, pos := 1, 0
	for i := 0; ; {
		j := bytes.Index(low[i:], []byte("decision"))
		if j < 0 {
			break
		}
		at := i + j
		i = at + len("decision")
		if at > 0 && isWordByte(src[at-1]) {
			continue
		}
		m := decisionRefAt.FindSubmatchIndex(src[at:])
		if m == nil {
			continue
		}
		line += bytes.Count(src[pos:at], []byte("\n"))
		pos = at
		for _, id := range refID.FindAllSubmatch(src[at+m[2]:at+m[3]], -1) {
			out = append(out, DecisionRef{ID: "D-" + string(id[1]), File: file, Line: line})
		}
		i = at + m[1]
	}
	return out
}

func isWordByte(c byte) bool {
	return c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

// Decisions is the decisions gate: a reference to a decision that does not
// exist or is superseded fails it (high) when the change adds the
// reference or makes it stale (by removing or superseding the decision),
// and so does a reference the change adds to a rejected or deprecated
// decision; stale references the change did not touch are reported low.
// Malformed records the change touches are high. A line the change adds
// that an accepted decision forbids, in a path it applies to, is a
// decision-contradiction (high); the constraints are the base's records,
// so a change cannot lift the rule it breaks. Every decision the change
// touches — referenced in a changed file, its record changed, or one of
// the paths it applies to changed — is reported as a decision finding
// (info) naming it, so the report can list them.
type Decisions struct {
	Dir string // decisions directory; default docs/decisions
	// MaxFileBytes bounds the files searched for references; default 1 MiB.
	MaxFileBytes int
}

// NeedsBase implements NeedsBase.
func (Decisions) NeedsBase() bool { return true }

// Analyse implements Analyser.
func (a Decisions) Analyse(ctx context.Context, c *Change) ([]Finding, error) {
	dir := a.Dir
	if dir == "" {
		dir = "docs/decisions"
	}
	dir = strings.Trim(path.Clean(dir), "/")
	changed := map[string]byte{}
	for _, ch := range c.Changes {
		changed[ch.Path] = ch.Status
	}
	added, err := addedLines(ctx, c)
	if err != nil {
		return nil, err
	}
	var out []Finding
	head, fs := loadDecisions(c.HeadDir, dir, changed)
	out = append(out, fs...)
	base := map[string]Decision{}
	if c.BaseDir != "" {
		base, _ = loadDecisions(c.BaseDir, dir, nil)
	}
	limit := a.MaxFileBytes
	if limit <= 0 {
		limit = 1 << 20
	}
	refs, err := scanRefs(ctx, c.HeadDir, dir, limit)
	if err != nil {
		return nil, err
	}
	touched := map[string][]string{} // id → where it is referenced in changed files
	for _, r := range refs {
		isAdded := added[r.File][r.Line]
		if _, ok := changed[r.File]; ok {
			touched[r.ID] = append(touched[r.ID], r.File+":"+strconv.Itoa(r.Line))
		}
		if f, bad := refFinding(r, head, base, isAdded); bad {
			out = append(out, f)
		}
	}
	contra, applied := contradictions(c, base, refs, added, dir)
	out = append(out, contra...)
	for id, where := range applied {
		touched[id] = append(touched[id], where...)
	}
	for p, st := range changed {
		if inDir(p, dir) && strings.HasSuffix(p, ".md") {
			for id, d := range head {
				if d.File == p {
					touched[id] = append(touched[id], "record "+gate.ChangeVerb(st))
				}
			}
			if st == 'D' {
				for id, d := range base {
					if d.File == p {
						touched[id] = append(touched[id], "record deleted")
					}
				}
			}
		}
	}
	ids := make([]string, 0, len(touched))
	for id := range touched {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return idNum(ids[i]) < idNum(ids[j]) })
	for _, id := range ids {
		d, ok := head[id]
		desc := "missing"
		if ok {
			desc = d.Status + `, "` + d.Title + `"`
		} else if bd, ok := base[id]; ok {
			d, desc = bd, "removed by this change"
		}
		where := touched[id]
		if len(where) > 10 {
			where = append(where[:10], fmt.Sprintf("and %d more", len(touched[id])-10))
		}
		out = append(out, Finding{Kind: KindDecision, Severity: SevInfo, File: d.File, Decisions: []string{id},
			Evidence: fmt.Sprintf("%s (%s): %s", id, desc, strings.Join(where, ", "))})
	}
	return out, nil
}

// refFinding judges one reference; bad is false when it is fine.
func refFinding(r DecisionRef, head, base map[string]Decision, isAdded bool) (Finding, bool) {
	f := Finding{File: r.File, Line: r.Line, Decisions: []string{r.ID}}
	d, ok := head[r.ID]
	bd, inBase := base[r.ID]
	switch {
	case !ok:
		f.Kind, f.Severity = KindDecisionMissing, SevLow
		f.Evidence = fmt.Sprintf("reference to %s, which does not exist (a pre-existing reference)", r.ID)
		if isAdded {
			f.Severity, f.Evidence = SevHigh, fmt.Sprintf("the change adds a reference to %s, which does not exist", r.ID)
		} else if inBase {
			f.Severity, f.Evidence = SevHigh, fmt.Sprintf("the change removes %s (%s) but this reference to it remains", r.ID, bd.File)
		}
	case d.Status == StatusSuperseded:
		f.Kind, f.Severity = KindDecisionSuperseded, SevLow
		f.Evidence = fmt.Sprintf("reference to %s, superseded by %s (a pre-existing reference)", r.ID, d.SupersededBy)
		if isAdded {
			f.Severity, f.Evidence = SevHigh, fmt.Sprintf("the change adds a reference to %s, which is superseded by %s", r.ID, d.SupersededBy)
		} else if !inBase || bd.Status != StatusSuperseded {
			f.Severity, f.Evidence = SevHigh, fmt.Sprintf("the change supersedes %s by %s but this reference to it remains", r.ID, d.SupersededBy)
		}
	case d.Status == StatusRejected || d.Status == StatusDeprecated:
		f.Kind, f.Severity = KindDecisionStatus, SevLow
		f.Evidence = fmt.Sprintf("reference to %s, which is %s (a pre-existing reference)", r.ID, d.Status)
		switch {
		case isAdded:
			f.Severity, f.Evidence = SevHigh, fmt.Sprintf("the change adds a reference to %s (%q), which is %s: it builds on a decision the project turned down", r.ID, d.Title, d.Status)
		case !inBase || bd.Status != d.Status:
			f.Severity, f.Evidence = SevHigh, fmt.Sprintf("the change makes %s %s but this reference to it remains", r.ID, d.Status)
		}
	default:
		return f, false
	}
	return f, true
}

// loadDecisions parses the records under root/dir. changed (nil: report
// nothing) selects which malformed records are the change's doing.
func loadDecisions(root, dir string, changed map[string]byte) (map[string]Decision, []Finding) {
	out := map[string]Decision{}
	var fs []Finding
	entries, err := os.ReadDir(filepath.Join(root, filepath.FromSlash(dir)))
	if err != nil {
		return out, nil
	}
	sev := func(p string) Severity {
		if _, ok := changed[p]; ok {
			return SevHigh
		}
		return SevLow
	}
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".md") || strings.EqualFold(n, "README.md") || strings.HasPrefix(n, "_") {
			continue
		}
		p := dir + "/" + n
		src, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(p)))
		if err != nil {
			continue
		}
		d, err := ParseDecision(p, src)
		if err != nil {
			if changed != nil {
				fs = append(fs, Finding{Kind: KindDecisionFormat, Severity: sev(p), File: p, Evidence: err.Error()})
			}
			continue
		}
		if prev, dup := out[d.ID]; dup {
			if changed != nil {
				s := sev(p)
				if s != SevHigh {
					s = sev(prev.File)
				}
				fs = append(fs, Finding{Kind: KindDecisionFormat, Severity: s, File: p, Decisions: []string{d.ID},
					Evidence: fmt.Sprintf("%s is declared twice: %s and %s", d.ID, prev.File, p)})
			}
			continue
		}
		out[d.ID] = d
	}
	if changed != nil {
		for _, d := range out {
			if d.SupersededBy != "" && out[d.SupersededBy].ID == "" {
				fs = append(fs, Finding{Kind: KindDecisionFormat, Severity: SevMedium, File: d.File, Decisions: []string{d.ID},
					Evidence: fmt.Sprintf("%s is superseded by %s, which does not exist", d.ID, d.SupersededBy)})
			}
		}
	}
	return out, fs
}

// scanRefs finds the decision references in the text files of root
// outside the decisions directory (and outside .git, .apiary, vendor,
// node_modules and testdata).
func scanRefs(ctx context.Context, root, dir string, limit int) ([]DecisionRef, error) {
	var out []DecisionRef
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // unreadable: skip
		}
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			switch d.Name() {
			case ".git", ".apiary", "vendor", "node_modules", "testdata":
				if rel != "." {
					return filepath.SkipDir
				}
			}
			if rel == dir {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil || info.Size() > int64(limit) {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil || bytes.IndexByte(b[:min(len(b), 8000)], 0) >= 0 {
			return nil
		}
		out = append(out, FindDecisionRefs(rel, b)...)
		return nil
	})
	return out, err
}

func inDir(p, dir string) bool { return strings.HasPrefix(p, dir+"/") }

func idNum(id string) int {
	n, _ := strconv.Atoi(strings.TrimPrefix(id, "D-"))
	return n
}

// contradictions checks the lines the change adds against the accepted
// base decisions that forbid something: in the paths a decision applies
// to (its Applies to: globs, else the files that refer to it at the head),
// an added line matching one of its Forbids expressions contradicts it.
// It also returns, per decision, the changed paths it applies to.
func contradictions(c *Change, base map[string]Decision, refs []DecisionRef, added map[string]map[int]bool, dir string) ([]Finding, map[string][]string) {
	referring := map[string]map[string]bool{} // id → files that refer to it
	for _, r := range refs {
		if referring[r.ID] == nil {
			referring[r.ID] = map[string]bool{}
		}
		referring[r.ID][r.File] = true
	}
	ids := make([]string, 0, len(base))
	for id := range base {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return idNum(ids[i]) < idNum(ids[j]) })
	var out []Finding
	applied := map[string][]string{}
	for _, id := range ids {
		d := base[id]
		if d.Status != StatusAccepted {
			continue
		}
		var res []*regexp.Regexp
		for _, f := range d.Forbids {
			if re, err := regexp.Compile(f); err == nil {
				res = append(res, re)
			}
		}
		for _, ch := range c.Changes {
			if ch.Status == 'D' || inDir(ch.Path, dir) || !appliesTo(d, ch.Path, referring[id]) {
				continue
			}
			applied[id] = append(applied[id], ch.Path+" (it applies to)")
			if len(res) == 0 || len(added[ch.Path]) == 0 {
				continue
			}
			lines, err := readLines(c.HeadDir, ch.Path)
			if err != nil {
				continue
			}
			for n, text := range lines {
				if !added[ch.Path][n+1] {
					continue
				}
				for _, re := range res {
					if re.MatchString(text) {
						out = append(out, Finding{Kind: KindDecisionContradiction, Severity: SevHigh, File: ch.Path, Line: n + 1, Decisions: []string{id},
							Evidence: fmt.Sprintf("the change adds %q, which %s (%q, accepted) forbids: it matches `%s`", clipLine(text), id, d.Title, re)})
						break
					}
				}
			}
		}
	}
	return out, applied
}

// appliesTo reports whether decision d constrains path p.
func appliesTo(d Decision, p string, referring map[string]bool) bool {
	if len(d.AppliesTo) == 0 {
		return referring[p]
	}
	for _, g := range d.AppliesTo {
		if MatchGlob(g, p) {
			return true
		}
	}
	return false
}

// readLines reads a text file's lines (at most 16 MiB of it).
func readLines(root, p string) ([]string, error) {
	b, err := rundir.ReadLimited(filepath.Join(root, filepath.FromSlash(p)), 16<<20)
	if err != nil {
		return nil, err
	}
	if bytes.IndexByte(b[:min(len(b), 8000)], 0) >= 0 {
		return nil, errors.New("binary")
	}
	return strings.Split(string(b), "\n"), nil
}
