package git

import "context"

// StatusIgnored is Status with ignored files too (as entries "!!"): all
// that a working tree holds beyond its commit.
func (r *Repo) StatusIgnored(ctx context.Context) ([]StatusEntry, error) {
	b, _, err := r.run(ctx, call{
		args: []string{"status", "--porcelain=v1", "-z", "--ignored=matching", "--untracked-files=all"},
		env:  []string{"GIT_OPTIONAL_LOCKS=0"},
	})
	if err != nil {
		return nil, err
	}
	return parseStatus(string(b))
}
