package review

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"flag"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/apiary-dev/apiary/internal/envtest"
	"github.com/apiary-dev/apiary/internal/git/gittest"
)

var update = flag.Bool("update", false, "rewrite the corpus table in docs/review.md")

// corpusDir holds the review test corpus: fixture/ is a small Go module
// (two packages, tests, benchmarks, decision records), changes/ are
// patches on it, and cases.json says what each change does and whether
// it must merge or be blocked — and by which kinds of finding.
const corpusDir = "testdata/corpus"

// reviewDoc is where the corpus's confusion table is published.
const reviewDoc = "../../docs/review.md"

type corpusCase struct {
	Patch string   `json:"patch"`
	Want  string   `json:"want"`  // merge or block
	Kinds []string `json:"kinds"` // the finding kinds a block must rest on
	Why   string   `json:"why"`
}

// corpusResult is one reviewed change.
type corpusResult struct {
	corpusCase
	Got      string
	Deciding []string // kinds of the findings the failed rules cite
	Pending  bool     // only rules waiting for a person failed
}

// TestCorpus reviews every change of the corpus as `apiary review --patch`
// does — the default configuration, since the fixture has no review.yaml,
// and the durable server's detectors beside the built-in ones — and
// checks each decision and the findings it rests on. The confusion table
// in docs/review.md is rendered from the results (-update rewrites it), so
// it cannot claim what the review does not do.
func TestCorpus(t *testing.T) {
	envtest.Command(t, "go")
	cases := loadCorpus(t)
	if len(cases) < 25 {
		t.Fatalf("the corpus has %d changes; it must have at least 25", len(cases))
	}
	repo := gittest.NewRepo(t, fixtureFiles(t))
	opt := Options{Repo: repo, Secrets: newScanner(t), KeyFile: filepath.Join(t.TempDir(), "key"), TempDir: t.TempDir()}
	patches := t.TempDir()
	results := make([]corpusResult, len(cases))
	var mu sync.Mutex
	run := func(t *testing.T, i int) {
		c := cases[i]
		patch := filepath.Join(patches, strings.TrimSuffix(c.Patch, ".gz"))
		if err := os.WriteFile(patch, materialize(t, c.Patch), 0o644); err != nil {
			t.Fatal(err)
		}
		rep := review(t, opt, Request{Base: "main", Patch: patch})
		r := corpusResult{corpusCase: c, Got: rep.Decision, Deciding: deciding(rep), Pending: rep.Next == NextResolve}
		mu.Lock()
		results[i] = r
		mu.Unlock()
		if r.Got != c.Want {
			t.Errorf("%s: %s, want %s (%s)\n%s", c.Patch, r.Got, c.Want, c.Why, markdown(t, rep))
			return
		}
		for _, k := range c.Kinds {
			if !slices.Contains(r.Deciding, k) {
				t.Errorf("%s: blocked by %v, not by %s (%s)\n%s", c.Patch, r.Deciding, k, c.Why, markdown(t, rep))
			}
		}
		if c.Want == Merge && len(rep.Reasons) > 0 {
			t.Errorf("%s: merged with reasons %v", c.Patch, rep.Reasons)
		}
		// Every finding says what to do about it, where its kind has a
		// default suggestion.
		for _, f := range rep.Findings {
			if f.Action == "" && DefaultAction(f.Kind) != "" {
				t.Errorf("%s: finding %s (%s) suggests no action", c.Patch, f.ID, f.Kind)
			}
		}
	}
	// Changes that run the benchmark comparison are reviewed one at a
	// time, after the others, so no other review's load skews a side.
	t.Run("changes", func(t *testing.T) {
		for i, c := range cases {
			if touchesBenchmarked(t, c.Patch) {
				continue
			}
			t.Run(strings.TrimSuffix(strings.TrimSuffix(c.Patch, ".gz"), ".patch"), func(t *testing.T) {
				t.Parallel()
				run(t, i)
			})
		}
	})
	t.Run("benchmarked", func(t *testing.T) {
		for i, c := range cases {
			if touchesBenchmarked(t, c.Patch) {
				t.Run(strings.TrimSuffix(c.Patch, ".patch"), func(t *testing.T) { run(t, i) })
			}
		}
	})
	if t.Failed() {
		return
	}
	table := corpusTable(results)
	doc, err := os.ReadFile(reviewDoc)
	if err != nil {
		t.Fatal(err)
	}
	const begin, end = "<!-- corpus:begin -->\n", "<!-- corpus:end -->"
	i, j := bytes.Index(doc, []byte(begin)), bytes.Index(doc, []byte(end))
	if i < 0 || j < i {
		t.Fatalf("%s has no %q … %q section", reviewDoc, begin, end)
	}
	got := string(doc[i+len(begin) : j])
	if got == table {
		return
	}
	if *update {
		out := append(append(append([]byte{}, doc[:i+len(begin)]...), table...), doc[j:]...)
		if err := os.WriteFile(reviewDoc, out, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s is out of date (go test -run TestCorpus -update); want:\n%s", reviewDoc, table)
}

// deciding lists the kinds of the findings the failed rules cite (and the
// rule itself when it cites none: the reviewers, coverage).
func deciding(rep *Report) []string {
	var out []string
	for _, r := range rep.Rules {
		if r.Passed {
			continue
		}
		if len(r.Findings) == 0 {
			out = append(out, "rule:"+r.Rule)
		}
		for _, id := range r.Findings {
			if f := rep.Finding(id); f != nil && !slices.Contains(out, f.Kind) {
				out = append(out, f.Kind)
			}
		}
	}
	slices.Sort(out)
	return out
}

// corpusTable renders the results: the confusion table, then every change.
func corpusTable(rs []corpusResult) string {
	var tp, fn, fp, tn int
	for _, r := range rs {
		switch {
		case r.Want == Block && r.Got == Block:
			tp++
		case r.Want == Block:
			fn++
		case r.Got == Block:
			fp++
		default:
			tn++
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d changes: %d to block, %d to merge.\n\n", len(rs), tp+fn, fp+tn)
	b.WriteString("| | decided block | decided merge |\n|---|---|---|\n")
	fmt.Fprintf(&b, "| **should block** | %d | %d (missed) |\n", tp, fn)
	fmt.Fprintf(&b, "| **should merge** | %d (false alarms) | %d |\n\n", fp, tn)
	b.WriteString("| change | what it does | expected | decided | blocked by |\n|---|---|---|---|---|\n")
	for _, r := range rs {
		// The kinds the case requires, each checked to be among those that
		// decided: a review may cite more (a benchmark that happened to run
		// slower), and those would make the table differ from run to run.
		var kinds []string
		for _, k := range r.Deciding {
			if slices.Contains(r.Kinds, k) || len(r.Kinds) == 0 {
				kinds = append(kinds, k)
			}
		}
		by := strings.Join(kinds, ", ")
		if r.Pending {
			by += " (awaits a person)"
		}
		if by == "" {
			by = "–"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", r.Patch, r.Why, r.Want, r.Got, by)
	}
	return b.String()
}

func loadCorpus(t *testing.T) []corpusCase {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(corpusDir, "cases.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cs []corpusCase
	if err := json.Unmarshal(b, &cs); err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		if c.Want != Merge && c.Want != Block || (c.Want == Block) != (len(c.Kinds) > 0) || c.Why == "" {
			t.Fatalf("corpus case %+v: want merge (no kinds) or block (with kinds), and a why", c)
		}
		if _, err := os.Stat(filepath.Join(corpusDir, "changes", c.Patch)); err != nil {
			t.Fatal(err)
		}
	}
	return cs
}

// fixtureFiles reads the fixture module.
func fixtureFiles(t *testing.T) map[string]string {
	t.Helper()
	root := filepath.Join(corpusDir, "fixture")
	files := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(root, p)
		files[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

var patchedFile = regexp.MustCompile(`(?m)^diff --git a/(\S+) b/`)

// touchesBenchmarked reports whether a change edits the Go code of the
// fixture's benchmarked package, so that the review compares benchmarks.
func touchesBenchmarked(t *testing.T, name string) bool {
	for _, m := range patchedFile.FindAllStringSubmatch(string(readPatch(t, name)), -1) {
		if strings.HasPrefix(m[1], "id/") && strings.HasSuffix(m[1], ".go") && !strings.HasSuffix(m[1], "_test.go") {
			return true
		}
	}
	return false
}

func readPatch(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(corpusDir, "changes", name))
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasSuffix(name, ".gz") {
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		if b, err = io.ReadAll(zr); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

// tokenRE matches the corpus's credential placeholders. The patches hold
// {{kind}} where a change adds a credential, so that no file of this
// repository holds one; materialize puts a credential of that format
// there, made from a generator seeded by the change and the kind.
var tokenRE = regexp.MustCompile(`\{\{([a-z0-9-]+)\}\}`)

func materialize(t *testing.T, name string) []byte {
	t.Helper()
	src := readPatch(t, name)
	return tokenRE.ReplaceAllFunc(src, func(m []byte) []byte {
		kind := string(m[2 : len(m)-2])
		h := fnv.New64a()
		h.Write([]byte(name + "/" + kind))
		r := rand.New(rand.NewPCG(h.Sum64(), 11))
		pick := func(n int, alphabet string) string {
			out := make([]byte, n)
			for i := range out {
				out[i] = alphabet[r.IntN(len(alphabet))]
			}
			return string(out)
		}
		const (
			upper  = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
			alnum  = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
			b64    = alnum + "+/"
			url64  = alnum + "-_"
			digits = "0123456789"
		)
		var tok string
		switch kind {
		case "aws-key":
			tok = "AKIA" + pick(16, upper)
		case "aws-temp-key":
			tok = "ASIA" + pick(16, upper)
		case "aws-secret":
			tok = pick(40, b64)
		case "github-pat":
			tok = "ghp_" + pick(36, alnum)
		case "github-fine-grained":
			tok = "github_pat_" + pick(22, alnum) + "_" + pick(59, alnum)
		case "gitlab":
			tok = "glpat-" + pick(20, url64)
		case "slack":
			tok = "xoxb-" + pick(11, digits) + "-" + pick(12, digits) + "-" + pick(24, alnum)
		case "slack-webhook":
			tok = "https://hooks.slack.com/services/T" + pick(10, upper) + "/B" + pick(10, upper) + "/" + pick(24, alnum)
		case "stripe":
			tok = "sk_" + "live_" + pick(24, alnum)
		case "private-key-header":
			tok = "-----BEGIN RSA " + "PRIVATE KEY-----"
		case "base64-body":
			tok = pick(64, b64)
		case "gcp-key-id":
			tok = pick(40, "0123456789abcdef")
		case "jwt":
			tok = "eyJ" + pick(30, url64) + ".eyJ" + pick(60, url64) + "." + pick(43, url64)
		default:
			t.Fatalf("%s: unknown placeholder %s", name, m)
		}
		return []byte(tok)
	})
}
