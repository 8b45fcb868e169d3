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
	refID         = regexp.MustCompile(`(?i)D-0*([0-9]{1,6})`)
)

// ParseDecision reads one decision record. Errors wrap ErrDecisionFormat
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
		return d, nil
	}
	if err := sc.Err(); err != nil {
		return d, fmt.Errorf("%w: %s: %v", ErrDecisionFormat, file, err)
	}
	if d.ID == "" {
		return d, fmt.Errorf("%w: %s: no \"# D-<n>: Title\" heading", ErrDecisionFormat, file)
	}
	return d, fmt.Errorf("%w: %s: no \"Status:\" line", ErrDecisionFormat, file)
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
// reference or makes it stale (by removing or superseding the decision);
// stale references the change did not touch are reported low. Malformed
// records the change touches are high. Every decision the change touches —
// referenced in a changed file, or its record changed — is reported as a
// decision finding (info) naming it, so the report can list them.
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
		f.Evidence = fmt.Sprintf("reference to %s, which is %s", r.ID, d.Status)
		if isAdded || !inBase || bd.Status != d.Status {
			f.Severity = SevMedium
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
