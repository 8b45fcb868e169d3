package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/apiary-dev/apiary/internal/access"
	"github.com/apiary-dev/apiary/internal/attempt"
	"github.com/apiary-dev/apiary/internal/git"
	"github.com/apiary-dev/apiary/internal/review"
	"github.com/apiary-dev/apiary/internal/rundir"
)

func reviewCommand() *command {
	return &command{
		Name:    "review",
		Summary: "check a change with analysers and decision rules before it merges",
		Help: `Reviews one change — the commits from --base to --head (default HEAD), or a
patch file applied to --base — before it merges. The change is diffed from
the merge base of the two. Analysers chosen by what the change touches (the
configuration's when: rules on changed paths and tags; tags come from
--tag and from "Apiary-Tags:" commit trailers) run in parallel, each as a
task with an envelope on a read-only checkout of the head:

  secret-scan         credentials the change adds (GitHub, GitLab, Slack,
                      AWS, GCP, Stripe, model API keys, private keys,
                      JWTs), in every changed file whatever its size
  forbidden-patterns  deleted tests, removed assertions, skip markers,
                      emptied test files, tests that bypass their own
                      assertions, sealed paths (the runtime's gates)
  go-test             go test at head and base: failing tests and build
                      errors at their file:line, coverage delta
  go-bench            benchmarks of the packages the change edits, head
                      against base, interleaved runs, benchstat's statistics
  api-diff            the exported Go API, base against head
  decisions           references to missing, superseded or rejected
                      decisions, and lines a decision forbids
                      (docs/decisions/*.md, "decision: D-<n>" in code)

and any agent profile given an objective, which answers with JSON findings.
Findings ({kind, severity, file, line, evidence, action, analyser}) are
stored on the board (--board; the local board by default); analysers that
subscribe to findings react to them in one bounded second round. Then
rules, not votes, decide: no finding at or above the blocking severity,
the coverage delta and benchmark regression within their thresholds, no
API break without a version bump, no change to the review's own rules
without a person's approval. If the rules say merge and reviewers are
configured, two or more reviewer agents — each in its own checkout with a
private state directory, none seeing another's work before all have
answered — may still block it; a disagreement escalates to a human
(blocked, pending) or to a third reviewer; when every reviewer fails the
review must be run again. Reviewers never merge.

The rules never come from the change: --config names a file outside the
repository (a path inside it is read as the base commit has it); without
it, review.yaml as the base commit has it is used if present, else a
default that runs every built-in. A change that edits review.yaml or a
decision record waits for a person ('apiary review resolve').

The report (Markdown, or JSON with --json) cites every finding by id and
is authenticated with the repository's review key (.apiary/review.key); it
is also written to .apiary/reviews/REVIEW_ID/. With --apply, a change
decided merge is integrated through the runtime (a one-task run: its
gates, its checks, compare-and-swap on the branch). Agents reach the
models at --model-url (default $ANTHROPIC_BASE_URL) with $APIARY_MODEL_KEY
(else $ANTHROPIC_API_KEY; with a URL and no key, each task gets the key
review-NAME).

Exit status: 0 merge, 1 blocked, 2 usage error (a bad flag, revision or
configuration), 3 the review could not be carried out.`,
		Examples: []string{
			"apiary review",
			"apiary review --base main --head feature --json",
			"apiary review --patch change.patch --base main",
		},
		Subs: []*command{reviewResolveCommand()},
		Setup: func(fs *flag.FlagSet) runFunc {
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
		return usagef("%v", repoError(f.repo, err))
	}
	if f.head == "HEAD" {
		warnUncommitted(ctx, e, repo.At(root))
	}
	// Revisions that do not resolve are usage errors, found before the
	// review writes anything (its state directory, its key, the board).
	for _, r := range []struct{ flag, rev string }{{"--base", f.base}, {"--head", f.head}} {
		if r.rev == "" {
			continue
		}
		if _, err := repo.At(root).RevParse(ctx, r.rev+"^{commit}"); errors.Is(err, git.ErrNotFound) || errors.Is(err, git.ErrBadArgument) {
			return usagef("%s %q: no such commit in %s", r.flag, r.rev, root)
		} else if err != nil {
			return failed(err)
		}
	}
	// A head the base already contains is no change: there is nothing to
	// review, and nothing is recorded.
	if f.patch == "" {
		if in, err := repo.At(root).IsAncestor(ctx, f.head, f.base); err != nil {
			return failed(err)
		} else if in {
			fmt.Fprintf(e.Stderr, "apiary review: nothing to review: %s has no commits that %s lacks\n", f.head, f.base)
			return nil
		}
	}
	cfg, cfgPath, err := reviewConfig(f.config, root)
	if err != nil {
		return err
	}
	if err := rundir.Init(root); err != nil {
		return failed(err)
	}
	st, err := review.OpenBoard(ctx, f.board, root)
	if err != nil {
		return failed(err)
	}
	defer st.Close()
	scanner, err := review.OpenDurableScanner(ctx)
	if err != nil {
		return failed(err)
	}
	defer scanner.Close()
	opt := review.Options{Repo: repo.At(root), Board: st, Secrets: scanner, MaxParallel: f.maxParallel,
		OnAnalyser: func(r review.AnalyserRun) {
			msg := fmt.Sprintf("review: %s %s (%s): %s", r.Kind, r.Name, r.Uses, r.Status)
			if r.Status != "skipped" {
				msg += fmt.Sprintf(", %d finding(s), %.1fs", r.Findings, r.WallS)
			}
			fmt.Fprintln(e.Stderr, msg)
		}}
	url, key := modelEndpoint(e, f.modelURL)
	switch {
	case url != "" && key == "":
		opt.Models = access.Direct{BaseURL: url, KeyFor: func(r attempt.TaskRef) string { return "review-" + r.Task }}
	case url != "" || key != "":
		opt.Models = access.Direct{BaseURL: url, Key: key}
	}
	req := review.Request{ID: f.id, Base: f.base, Head: f.head, Patch: f.patch, Tags: f.tags, Config: cfg, ConfigPath: cfgPath, Apply: f.apply}
	rep, err := review.Run(ctx, opt, req)
	return printReview(e, rep, err, f.json)
}

// warnUncommitted tells the user that the review sees HEAD, not the edits
// in the working tree (untracked files are not counted).
func warnUncommitted(ctx context.Context, e *env, repo *git.Repo) {
	// A broken repository is reported by the review itself.
	if n, err := review.Uncommitted(ctx, repo); err == nil && n > 0 {
		fmt.Fprintf(e.Stderr, "apiary: warning: %d uncommitted change(s) are not reviewed: the review sees HEAD\n", n)
	}
}

func reviewResolveCommand() *command {
	return &command{
		Name:    "resolve",
		Args:    "REVIEW_ID approve|block",
		Summary: "settle a review whose reviewers disagreed and escalated to a human",
		Help: `Records a person's verdict on a review waiting for one — its reviewers
disagreed and escalated to a human, or its change edits the review's
rules — in the review's report (.apiary/reviews/REVIEW_ID/) and on the
board. The report must be authentic (its MAC verifies with the
repository's review key, and its rules follow from its findings): an
edited or forged report is refused. Approving settles only what waits for
a person: a review blocked by any other rule cannot be resolved, nor one
whose reviewers all failed (run it again). A review is resolved once. With
--apply an approved change is integrated through the runtime, as 'apiary
review --apply' does (the apply: section of --config, default review.yaml
as the review's base has it). Prints the updated report.

Exit status: 0 merge, 1 blocked, 2 usage error (including a review not
awaiting a person), 3 the report is not authentic or resolving failed.`,
		Examples: []string{
			"apiary review resolve 20261202-003423-375598 approve",
			"apiary review resolve --by alice 20261202-003423-375598 block",
		},
		Setup: func(fs *flag.FlagSet) runFunc {
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
					by = e.Getenv("USER")
				}
				if by == "" {
					return usagef("--by is required when $USER is not set")
				}
				repo := git.New(repoDir, git.Options{})
				root, err := repo.TopLevel(ctx)
				if err != nil {
					return usagef("%v", repoError(repoDir, err))
				}
				cfg, cfgPath, err := reviewConfig(config, root)
				if err != nil {
					return err
				}
				st, err := review.OpenBoard(ctx, dsn, root)
				if err != nil {
					return failed(err)
				}
				defer st.Close()
				rep, err := review.Resolve(ctx, review.Options{Repo: repo.At(root), Board: st},
					review.ResolveRequest{ID: args[0], Verdict: args[1], By: by, Config: cfg, ConfigPath: cfgPath, Apply: apply})
				return printReview(e, rep, err, asJSON)
			}
		},
	}
}

// Exit statuses of apiary review (see its help).
const (
	reviewExitBlocked = 1
	reviewExitError   = 3
)

// exitStatusError is a failure with its own exit status; Main exits with
// exitCode() when an error it handles wraps one (see reviewExit).
type exitStatusError struct {
	code int
	err  error
}

func (e *exitStatusError) Error() string { return e.err.Error() }
func (e *exitStatusError) Unwrap() error { return e.err }
func (e *exitStatusError) exitCode() int { return e.code }

// failed marks an error that kept a review from being carried out.
func failed(err error) error {
	if err == nil {
		return nil
	}
	return &exitStatusError{code: reviewExitError, err: err}
}

// reviewExit maps what a review command ended with to its exit status: 0
// merge, 1 blocked (reported), 2 usage (a bad flag, revision, request or
// configuration), 3 any other failure.
func reviewExit(err error) int {
	var ue *usageError
	var se *exitStatusError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ue):
		return exitUsage
	case errors.As(err, &se):
		return se.exitCode()
	case errors.Is(err, errSilent):
		return reviewExitBlocked
	}
	return reviewExitError
}

// reviewError sorts a review's error into usage (the request or the
// configuration is wrong) and failure.
func reviewError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, review.ErrForged):
		return failed(err)
	case errors.Is(err, review.ErrRequest), errors.Is(err, review.ErrConfig):
		return usagef("%v", err)
	}
	return failed(err)
}

// printReview prints a review's report (if any) and turns its decision into
// the exit status: 0 merge, 1 blocked (see reviewExit for errors).
func printReview(e *env, rep *review.Report, err error, asJSON bool) error {
	if rep == nil {
		return reviewError(err)
	}
	fmt.Fprintf(e.Stderr, "review %s: %s\n", rep.ReviewID, rep.Decision)
	write := rep.WriteMarkdown
	if asJSON {
		write = func(w io.Writer) error { return writeJSON(w, rep) }
	}
	if werr := write(e.Stdout); werr != nil {
		return failed(werr)
	}
	if err != nil {
		return reviewError(err)
	}
	if rep.Decision != review.Merge {
		return &exitStatusError{code: reviewExitBlocked, err: errSilent}
	}
	return nil
}

// reviewConfig reads the configuration --config names (see
// review.OperatorConfig); its problems are usage errors.
func reviewConfig(file, root string) (*review.Config, string, error) {
	cfg, path, err := review.OperatorConfig(file, root)
	switch {
	case errors.Is(err, review.ErrConfig):
		return nil, "", usagef("%v", err)
	case err != nil:
		return nil, "", usagef("--config: %v", err)
	}
	return cfg, path, nil
}
