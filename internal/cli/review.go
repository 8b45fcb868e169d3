package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/apiary-dev/apiary/internal/attempt"
	"github.com/apiary-dev/apiary/internal/board"
	"github.com/apiary-dev/apiary/internal/board/connect"
	"github.com/apiary-dev/apiary/internal/durable"
	"github.com/apiary-dev/apiary/internal/git"
	"github.com/apiary-dev/apiary/internal/review"
	"github.com/apiary-dev/apiary/internal/rundir"
)

func reviewCommand() *command {
	return &command{
		name:    "review",
		summary: "check a change with analysers and decision rules before it merges",
		help: `Reviews one change — the commits from --base to --head (default HEAD), or a
patch file applied to --base — before it merges. The change is diffed from
the merge base of the two. Analysers chosen by what the change touches (the
configuration's when: rules on changed paths and tags; tags come from
--tag and from "Apiary-Tags:" commit trailers) run in parallel, each as a
task with an envelope on a read-only checkout of the head:

  secret-scan         secret-like content on added lines (the durable
                      server's risk detectors)
  forbidden-patterns  deleted tests, removed assertions, skip markers,
                      emptied test files, sealed paths (the runtime's gates)
  go-test             go test at head and base: failing tests, coverage delta
  go-bench            benchmarks of head against base, interleaved runs,
                      compared with benchstat's statistics
  api-diff            the exported Go API, base against head
  decisions           references to missing or superseded decisions
                      (docs/decisions/*.md, "decision: D-<n>" in code)

and any agent profile given an objective, which answers with JSON findings.
Findings ({kind, severity, file, line, evidence, analyser}) are stored on
the board (--board; the local board by default); analysers that subscribe
to findings react to them in one bounded second round. Then rules, not
votes, decide: no finding at or above the blocking severity, the coverage
delta and benchmark regression within their thresholds, no API break
without a version bump. If the rules say merge and reviewers are
configured, two or more reviewer agents in independent contexts may still
block it; a disagreement escalates to a human (blocked, pending) or to a
third reviewer. Reviewers never merge.

The report (Markdown, or JSON with --json) cites every finding by id; it is
also written to .apiary/reviews/REVIEW_ID/. With --apply, a change decided
merge is integrated through the runtime (a one-task run: its gates, its
checks, compare-and-swap on the branch). The exit status is 0 only for
merge.

--config names the configuration (see examples/review.yaml); without it,
review.yaml at the repository root is used if present, else a default that
runs every built-in but go-bench. Agents reach the models at --model-url
(default $ANTHROPIC_BASE_URL) with $APIARY_MODEL_KEY (else
$ANTHROPIC_API_KEY; with a URL and no key, each task gets the key
review-NAME).

A review escalated to a human is settled with 'apiary review resolve'.`,
		subs: []*command{reviewResolveCommand()},
		setup: func(fs *flag.FlagSet) runFunc {
			f := reviewFlags{}
			fs.StringVar(&f.base, "base", "main", "the `REF` the change is judged against")
			fs.StringVar(&f.head, "head", "", "the `REF` under review (default HEAD)")
			fs.StringVar(&f.patch, "patch", "", "review the patch `FILE` (git diff format) applied to --base instead of --head")
			fs.StringVar(&f.config, "config", "", "review configuration `FILE` (default review.yaml at the repository root, if any)")
			fs.BoolVar(&f.json, "json", false, "print the report as JSON")
			fs.BoolVar(&f.apply, "apply", false, "integrate the change through the runtime when the decision is merge")
			fs.StringVar(&f.repo, "repo", ".", "the git repository, `DIR`")
			fs.StringVar(&f.id, "id", "", "name the review `ID` (letters, digits, - and _; default a new id)")
			fs.StringVar(&f.board, "board", "", "the board `DSN` for findings (default local:REPO/.apiary/state.db)")
			fs.Var(&f.tags, "tag", "a `TAG` of the change, for when: rules (repeatable)")
			fs.StringVar(&f.modelURL, "model-url", "", "base `URL` of the model API agents use (default $ANTHROPIC_BASE_URL)")
			fs.IntVar(&f.maxParallel, "max-parallel", 0, "run at most `N` analysers at once (default 4)")
			return func(ctx context.Context, e *env, args []string) error {
				if err := noArgs(args); err != nil {
					return err
				}
				return f.run(ctx, e)
			}
		},
	}
}

type reviewFlags struct {
	base, head, patch, config string
	id                        string
	json, apply               bool
	repo, board, modelURL     string
	tags                      stringList
	maxParallel               int
}

func (f *reviewFlags) run(ctx context.Context, e *env) error {
	switch {
	case f.head != "" && f.patch != "":
		return usagef("--head and --patch exclude each other")
	case f.base == "":
		return usagef("--base must not be empty")
	case f.maxParallel < 0:
		return usagef("--max-parallel must not be negative")
	}
	if f.head == "" && f.patch == "" {
		f.head = "HEAD"
	}
	repo := git.New(f.repo, git.Options{})
	root, err := repo.TopLevel(ctx)
	if err != nil {
		return fmt.Errorf("%s is not in a git repository: %w", f.repo, err)
	}
	if f.head == "HEAD" {
		warnUncommitted(ctx, e, repo.At(root))
	}
	cfg, err := loadReviewConfig(f.config, root)
	if err != nil {
		return err
	}
	if err := rundir.Init(root); err != nil {
		return err
	}
	dsn := f.board
	if dsn == "" {
		dsn = "local:" + filepath.Join(root, board.DefaultLocalPath)
	}
	st, err := connect.Open(ctx, dsn, connect.Options{})
	if err != nil {
		return fmt.Errorf("opening the board %s: %w", dsn, err)
	}
	defer st.Close()
	scanner, closeScanner, err := newSecretScanner(ctx, root)
	if err != nil {
		return err
	}
	defer closeScanner()
	opt := review.Options{Repo: repo.At(root), Board: st, Secrets: scanner, MaxParallel: f.maxParallel,
		OnAnalyser: func(r review.AnalyserRun) {
			msg := fmt.Sprintf("review: %s %s (%s): %s", r.Kind, r.Name, r.Uses, r.Status)
			if r.Status != "skipped" {
				msg += fmt.Sprintf(", %d finding(s), %.1fs", r.Findings, r.WallS)
			}
			fmt.Fprintln(e.stderr, msg)
		}}
	url := f.modelURL
	if url == "" {
		url = e.getenv("ANTHROPIC_BASE_URL")
	}
	key := e.getenv("APIARY_MODEL_KEY")
	if key == "" {
		key = e.getenv("ANTHROPIC_API_KEY")
	}
	switch {
	case url != "" && key == "":
		opt.Models = directAccess{baseURL: url, keyFor: func(r attempt.TaskRef) string { return "review-" + r.Task }}
	case url != "" || key != "":
		opt.Models = directAccess{baseURL: url, key: key}
	}
	req := review.Request{ID: f.id, Base: f.base, Head: f.head, Patch: f.patch, Tags: f.tags, Config: cfg, Apply: f.apply}
	rep, err := review.Run(ctx, opt, req)
	return printReview(e, rep, err, f.json)
}

// warnUncommitted tells the user that the review sees HEAD, not the edits
// in the working tree (untracked files are not counted).
func warnUncommitted(ctx context.Context, e *env, repo *git.Repo) {
	st, err := repo.Status(ctx)
	if err != nil {
		return // the review itself reports a broken repository
	}
	n := 0
	for _, s := range st {
		if !s.Untracked() {
			n++
		}
	}
	if n > 0 {
		fmt.Fprintf(e.stderr, "apiary: warning: %d uncommitted change(s) are not reviewed: the review sees HEAD\n", n)
	}
}

func reviewResolveCommand() *command {
	return &command{
		name:    "resolve",
		args:    "REVIEW_ID approve|block",
		summary: "settle a review whose reviewers disagreed and escalated to a human",
		help: `Records a person's verdict on a review whose reviewers disagreed and
escalated to a human: in the review's report (.apiary/reviews/REVIEW_ID/)
and on the board. Approving settles only the reviewers' disagreement: the
review had passed every rule, so it now merges; blocking keeps it out. A
review is resolved once. With --apply an approved change is integrated
through the runtime, as 'apiary review --apply' does (the apply: section of
--config, default review.yaml at the repository root). Prints the updated
report; the exit status is 0 only for merge.`,
		setup: func(fs *flag.FlagSet) runFunc {
			var repoDir, dsn, by, config string
			var apply, asJSON bool
			fs.StringVar(&repoDir, "repo", ".", "the git repository, `DIR`")
			fs.StringVar(&dsn, "board", "", "the board `DSN` (default local:REPO/.apiary/state.db)")
			fs.StringVar(&by, "by", "", "who decides, recorded in the report (default $USER)")
			fs.StringVar(&config, "config", "", "review configuration `FILE`, for --apply")
			fs.BoolVar(&apply, "apply", false, "integrate the change through the runtime when the decision becomes merge")
			fs.BoolVar(&asJSON, "json", false, "print the report as JSON")
			return func(ctx context.Context, e *env, args []string) error {
				if len(args) != 2 {
					return usagef("want REVIEW_ID and approve or block")
				}
				if v := args[1]; v != review.VerdictApprove && v != review.VerdictBlock {
					return usagef("verdict %q: want approve or block", v)
				}
				if by == "" {
					by = e.getenv("USER")
				}
				if by == "" {
					return usagef("--by is required when $USER is not set")
				}
				repo := git.New(repoDir, git.Options{})
				root, err := repo.TopLevel(ctx)
				if err != nil {
					return fmt.Errorf("%s is not in a git repository: %w", repoDir, err)
				}
				cfg, err := loadReviewConfig(config, root)
				if err != nil {
					return err
				}
				if dsn == "" {
					dsn = "local:" + filepath.Join(root, board.DefaultLocalPath)
				}
				st, err := connect.Open(ctx, dsn, connect.Options{})
				if err != nil {
					return fmt.Errorf("opening the board %s: %w", dsn, err)
				}
				defer st.Close()
				rep, err := review.Resolve(ctx, review.Options{Repo: repo.At(root), Board: st},
					review.ResolveRequest{ID: args[0], Verdict: args[1], By: by, Config: cfg, Apply: apply})
				return printReview(e, rep, err, asJSON)
			}
		},
	}
}

// printReview prints a review's report (if any) and turns its decision into
// the exit status: 0 only for merge.
func printReview(e *env, rep *review.Report, err error, asJSON bool) error {
	if rep == nil {
		return err
	}
	fmt.Fprintf(e.stderr, "review %s: %s\n", rep.ReviewID, rep.Decision)
	if asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		if werr := enc.Encode(rep); werr != nil {
			return werr
		}
	} else if werr := rep.WriteMarkdown(e.stdout); werr != nil {
		return werr
	}
	if err != nil {
		return err
	}
	if rep.Decision != review.Merge {
		return errSilent
	}
	return nil
}

// loadReviewConfig reads the configuration: path, else review.yaml at the
// repository root, else the default.
func loadReviewConfig(path, root string) (*review.Config, error) {
	if path == "" {
		p := filepath.Join(root, "review.yaml")
		if _, err := os.Stat(p); err != nil {
			return review.DefaultConfig(), nil
		}
		path = p
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return review.ParseConfig(path, b)
}

// durableScanner is review.SecretScanner over the durable server's risk
// score: the review and the agents' write surface share its detectors (and
// the repository's policy override, .apiary/durable/policy.yaml).
type durableScanner struct {
	ws *durable.Workspace
}

var _ review.SecretScanner = durableScanner{}

func (d durableScanner) ScanSecrets(ctx context.Context, content string) ([]review.SecretHit, error) {
	res, err := d.ws.RiskScore(ctx, durable.RiskScoreParams{Content: content})
	if err != nil {
		return nil, err
	}
	det, _ := res["detected_patterns"].([]map[string]any)
	var out []review.SecretHit
	for _, m := range det {
		line, ok := m["line"].(int)
		if !ok {
			continue // size rules: about the whole text, not a secret
		}
		h := review.SecretHit{Line: line}
		h.Family, _ = m["kind"].(string)
		h.Pattern, _ = m["pattern"].(string)
		h.Match, _ = m["match"].(string)
		out = append(out, h)
	}
	return out, nil
}

// newSecretScanner opens a durable workspace in a temporary directory (its
// startup sweep must not walk the repository) with the repository's
// policy, if it has one.
func newSecretScanner(ctx context.Context, root string) (review.SecretScanner, func(), error) {
	dir, err := os.MkdirTemp("", "apiary-review-scan-")
	if err != nil {
		return nil, nil, err
	}
	cfg := durable.Config{Roots: []string{dir}}
	if p := filepath.Join(root, durable.DefaultStateDir, "policy.yaml"); fileExists(p) {
		cfg.PolicyFile = p
	}
	ws, err := durable.Open(ctx, cfg)
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, fmt.Errorf("secret scanner: %w", err)
	}
	return durableScanner{ws: ws}, func() {
		ws.Close()
		os.RemoveAll(dir)
	}, nil
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return !errors.Is(err, os.ErrNotExist)
}
