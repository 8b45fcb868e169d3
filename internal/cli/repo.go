package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/apiary-dev/apiary/internal/git"
)

// repoError says, in the user's terms, why dir's git repository could not
// be found: outside a repository that is all there is to say (git's own
// "rev-parse: exit 128: fatal: ..." is noise); any other failure keeps
// git's account.
func repoError(dir string, err error) error {
	var ge *git.Error
	if errors.As(err, &ge) && strings.Contains(ge.Stderr, "not a git repository") {
		return fmt.Errorf("%s is not in a git repository (run apiary inside one, or pass --repo DIR)", dir)
	}
	return fmt.Errorf("finding the git repository of %s: %w", dir, err)
}
