package review

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/apiary-dev/apiary/internal/durable"
)

// DurableScanner is a SecretScanner over the durable server's risk score:
// beside the review's own credential detectors, the review reports what
// the agents' write surface would flag (personal data, say). It is safe
// for concurrent use; Close releases it.
type DurableScanner struct {
	ws  *durable.Workspace
	dir string
}

var _ SecretScanner = (*DurableScanner)(nil)

// OpenDurableScanner opens a durable workspace in a temporary directory
// (its startup sweep must not walk the repository) with the durable
// server's default policy: a repository's policy override would be the
// working tree's, which may be the change's.
func OpenDurableScanner(ctx context.Context) (*DurableScanner, error) {
	dir, err := os.MkdirTemp("", "apiary-review-scan-")
	if err != nil {
		return nil, err
	}
	ws, err := durable.Open(ctx, durable.Config{Roots: []string{dir}, PolicyFile: filepath.Join(dir, "no-policy.yaml")})
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("secret scanner: %w", err)
	}
	return &DurableScanner{ws: ws, dir: dir}, nil
}

// Close closes the workspace and removes its directory.
func (d *DurableScanner) Close() error {
	err := d.ws.Close()
	if rerr := os.RemoveAll(d.dir); err == nil {
		err = rerr
	}
	return err
}

// ScanSecrets reports the risk score's line-located patterns, except those
// for credential formats the built-in detectors cover.
func (d *DurableScanner) ScanSecrets(ctx context.Context, content string) ([]SecretHit, error) {
	res, err := d.ws.RiskScore(ctx, durable.RiskScoreParams{Content: content})
	if err != nil {
		return nil, err
	}
	det, _ := res["detected_patterns"].([]map[string]any)
	var out []SecretHit
	for _, m := range det {
		line, ok := m["line"].(int)
		if !ok {
			continue // size rules: about the whole text, not a secret
		}
		h := SecretHit{Line: line}
		h.Family, _ = m["kind"].(string)
		h.Pattern, _ = m["pattern"].(string)
		h.Match, _ = m["match"].(string)
		if coveredByBuiltins(h.Pattern) {
			continue
		}
		out = append(out, h)
	}
	return out, nil
}

// coveredByBuiltins says whether pattern is a durable detector for a
// credential format the review's own detectors (package secret) know
// better — they tell a real key from a placeholder or a documentation
// example — so only theirs count.
func coveredByBuiltins(pattern string) bool {
	switch pattern {
	case "anthropic_oat", "anthropic_api", "openai_project_key", "openai_key",
		"aws_access_key_id", "aws_secret_access_key", "gho", "ghp", "ghu",
		"ghs", "ghr", "jwt_triplet", "pem_private_key":
		return true
	}
	return false
}
