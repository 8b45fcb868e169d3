package git

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"
)

// Trailer keys apiary writes on the commits it makes.
const (
	TrailerTask  = "Apiary-Task"
	TrailerRun   = "Apiary-Run"
	TrailerAgent = "Apiary-Agent"
	TrailerTrace = "Apiary-Trace"
)

// Trailer is one "Key: value" line at the end of a commit message.
type Trailer struct {
	Key, Value string
}

// Signature is an author or committer. A zero Signature leaves the identity
// to git's configuration; a zero When means the current time.
type Signature struct {
	Name, Email string
	When        time.Time
}

func (s Signature) env(role string) []string {
	var env []string
	if s.Name != "" {
		env = append(env, "GIT_"+role+"_NAME="+s.Name)
	}
	if s.Email != "" {
		env = append(env, "GIT_"+role+"_EMAIL="+s.Email)
	}
	if !s.When.IsZero() {
		env = append(env, "GIT_"+role+"_DATE="+s.When.Format(time.RFC3339))
	}
	return env
}

var trailerKey = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9-]*$`)

// Message builds a commit message: subject, optional body, and trailers in
// the last paragraph. ErrBadArgument for an empty subject, a malformed
// trailer key or a value spanning lines.
func Message(subject, body string, trailers []Trailer) (string, error) {
	subject = strings.TrimSpace(subject)
	if subject == "" || strings.Contains(subject, "\n") {
		return "", fmt.Errorf("%w: subject must be one non-empty line", ErrBadArgument)
	}
	var b strings.Builder
	b.WriteString(subject)
	b.WriteString("\n")
	if body = strings.TrimSpace(body); body != "" {
		b.WriteString("\n")
		b.WriteString(body)
		b.WriteString("\n")
	}
	if len(trailers) > 0 {
		b.WriteString("\n")
	}
	for _, t := range trailers {
		if !trailerKey.MatchString(t.Key) {
			return "", fmt.Errorf("%w: trailer key %q", ErrBadArgument, t.Key)
		}
		if strings.ContainsAny(t.Value, "\r\n") || strings.TrimSpace(t.Value) == "" {
			return "", fmt.Errorf("%w: trailer %s value %q must be one non-empty line", ErrBadArgument, t.Key, t.Value)
		}
		fmt.Fprintf(&b, "%s: %s\n", t.Key, strings.TrimSpace(t.Value))
	}
	return b.String(), nil
}

// CommitOptions describe a commit made by CommitAll.
type CommitOptions struct {
	Message    string // full message, see Message
	Author     Signature
	Committer  Signature // zero: same as Author
	AllowEmpty bool      // commit even when nothing changed
	// Exclude lists paths (relative to the worktree root) never staged, such
	// as apiary's own ".apiary" directory inside a task's worktree.
	Exclude []string
	// Sparse: the worktree is a sparse checkout; what its user created
	// outside the cone is staged too (git add --sparse), where git would
	// refuse the whole commit. Tracked files outside the cone stay as they
	// are in the index.
	Sparse bool
}

// CommitAll stages everything in the working tree — modified, deleted and
// untracked files, honouring .gitignore — and commits it on the current
// branch, with hooks disabled. It returns the new commit id, or
// ErrNothingToCommit when there was no change and AllowEmpty is false.
func (r *Repo) CommitAll(ctx context.Context, opt CommitOptions) (string, error) {
	if strings.TrimSpace(opt.Message) == "" {
		return "", fmt.Errorf("%w: empty commit message", ErrBadArgument)
	}
	add := []string{"add", "--all", "--", "."}
	if opt.Sparse {
		add = []string{"add", "--all", "--sparse", "--", "."}
	}
	if _, _, err := r.run(ctx, call{args: add}); err != nil {
		return "", err
	}
	// Then put the excluded paths back as HEAD has them. Naming them in
	// add's pathspec instead would fail when the repository ignores them
	// (git refuses to add a pathspec that names an ignored path, even to
	// exclude it), and many repositories ignore .apiary/.
	for _, x := range opt.Exclude {
		spec := ":(literal)" + x
		_, _, err := r.run(ctx, call{args: []string{"reset", "--quiet", "HEAD", "--", spec}})
		if err != nil { // no HEAD yet: nothing to restore, only unstage
			_, _, err = r.run(ctx, call{args: []string{"rm", "-r", "--cached", "--quiet", "--ignore-unmatch", "--", spec}})
		}
		if err != nil {
			return "", err
		}
	}
	if !opt.AllowEmpty {
		// Exit 1 means the index differs from HEAD. A repository without
		// commits has no HEAD: anything staged is a change.
		_, code, err := r.run(ctx, call{args: []string{"diff", "--cached", "--quiet", "--no-ext-diff"}, okExit: []int{1}})
		if err == nil && code == 0 {
			return "", ErrNothingToCommit
		}
	}
	committer := opt.Committer
	if committer == (Signature{}) {
		committer = opt.Author
	}
	env := append(opt.Author.env("AUTHOR"), committer.env("COMMITTER")...)
	args := []string{"commit", "--quiet", "--no-verify", "--cleanup=verbatim", "--file=-"}
	if opt.AllowEmpty {
		args = append(args, "--allow-empty")
	}
	if _, _, err := r.run(ctx, call{args: args, stdin: []byte(opt.Message), env: env}); err != nil {
		return "", err
	}
	return r.RevParse(ctx, "HEAD")
}

// CommitTree creates a commit object for tree with the given parents and
// message, without touching any ref or worktree, and returns its id.
func (r *Repo) CommitTree(ctx context.Context, tree string, parents []string, message string, author, committer Signature) (string, error) {
	if err := checkRev(tree); err != nil {
		return "", err
	}
	args := []string{"commit-tree", tree}
	for _, p := range parents {
		if err := checkRev(p); err != nil {
			return "", err
		}
		args = append(args, "-p", p)
	}
	args = append(args, "-F", "-")
	if committer == (Signature{}) {
		committer = author
	}
	env := append(author.env("AUTHOR"), committer.env("COMMITTER")...)
	out, _, err := r.run(ctx, call{args: args, stdin: []byte(message), env: env})
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// Trailers returns the trailers of commit rev's message, as git parses them
// (folded continuation lines unfolded), in order.
func (r *Repo) Trailers(ctx context.Context, rev string) ([]Trailer, error) {
	if err := checkRev(rev); err != nil {
		return nil, err
	}
	b, _, err := r.run(ctx, call{args: []string{"log", "-1", "--no-decorate", "--format=%(trailers:only=true,unfold=true)", rev, "--"}})
	if err != nil {
		return nil, err
	}
	var out []Trailer
	for _, line := range bytes.Split(b, []byte("\n")) {
		k, v, ok := strings.Cut(string(line), ":")
		if !ok {
			continue
		}
		out = append(out, Trailer{Key: strings.TrimSpace(k), Value: strings.TrimSpace(v)})
	}
	return out, nil
}

// TrailerValue returns the value of the first trailer with key (compared
// case-insensitively, as git does) and whether there was one.
func TrailerValue(ts []Trailer, key string) (string, bool) {
	for _, t := range ts {
		if strings.EqualFold(t.Key, key) {
			return t.Value, true
		}
	}
	return "", false
}
