package secret

import (
	"bytes"
	"regexp"
)

// Rule is one detector: a regular expression for a credential format and
// the literals every match contains, which a line must hold before the
// expression runs (so a scan costs little more than a byte search on
// lines that hold no credential).
type Rule struct {
	// Name identifies the detector ("github-fine-grained-pat").
	Name string
	// Family groups detectors of one kind of credential; a family's
	// severity is the caller's to decide.
	Family string
	// Description says what the rule finds, for reports.
	Description string

	re       *regexp.Regexp
	keywords [][]byte // any one must appear in the line (compared in lower case when fold)
	fold     bool
	group    int                 // the submatch that is the secret (0: all of it)
	valid    func(s []byte) bool // extra checks on the secret; nil: none
}

// Families of credentials.
const (
	FamilyGitHub     = "github_token"
	FamilyGitLab     = "gitlab_token"
	FamilySlack      = "slack_token"
	FamilyAWSKey     = "aws_access_key"
	FamilyAWSTempKey = "aws_temporary_key"
	FamilyAWSSecret  = "aws_secret_key"
	FamilyGCP        = "gcp_service_account"
	FamilyGCPKey     = "gcp_api_key"
	FamilyStripe     = "stripe_key"
	FamilyPrivateKey = "private_key"
	FamilyJWT        = "jwt"
	FamilyModelKey   = "model_api_key"
	FamilyNPM        = "npm_token"
)

func kw(words ...string) [][]byte {
	out := make([][]byte, len(words))
	for i, w := range words {
		out[i] = []byte(w)
	}
	return out
}

// varied rejects placeholders: a token of random characters has many
// distinct ones, "ghp_xxxxxxxx…" or "AKIA0000…" does not.
func varied(n int) func([]byte) bool {
	return func(s []byte) bool {
		var seen [256]bool
		d := 0
		for _, c := range s {
			if !seen[c] {
				seen[c] = true
				d++
			}
		}
		return d >= n
	}
}

// notExample rejects the documentation's example credentials (AWS
// publishes AKIAIOSFODNN7EXAMPLE and its secret), which are everywhere
// in docs and tests and grant nothing.
func notExample(next func([]byte) bool) func([]byte) bool {
	return func(s []byte) bool {
		return !bytes.Contains(s, []byte("EXAMPLE")) && (next == nil || next(s))
	}
}

// Rules returns the detectors, a fresh copy: GitHub (classic and
// fine-grained tokens), GitLab, Slack (tokens and webhooks), AWS (access
// keys, temporary access keys, secret keys), GCP (service-account key
// files, API keys), Stripe, private keys (PEM and OpenSSH), JWTs, model
// API keys (OpenAI, Anthropic) and npm tokens.
func Rules() []Rule {
	return []Rule{
		{Name: "github-pat", Family: FamilyGitHub, Description: "GitHub token (classic personal access, OAuth, user-to-server, server-to-server or refresh)",
			re: regexp.MustCompile(`\bgh[pousr]_[A-Za-z0-9]{36,251}\b`), keywords: kw("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), valid: varied(10)},
		{Name: "github-fine-grained-pat", Family: FamilyGitHub, Description: "GitHub fine-grained personal access token",
			re: regexp.MustCompile(`\bgithub_pat_[A-Za-z0-9]{22}_[A-Za-z0-9]{59}\b`), keywords: kw("github_pat_"), valid: varied(12)},
		{Name: "gitlab-token", Family: FamilyGitLab, Description: "GitLab token (personal, project or group access, deploy, runner, CI build, pipeline trigger)",
			re: regexp.MustCompile(`\b(?:glpat|gldt|glrt|glcbt|glptt|glft|glsoat)-[0-9A-Za-z_\-]{20,}`), keywords: kw("glpat-", "gldt-", "glrt-", "glcbt-", "glptt-", "glft-", "glsoat-"), valid: varied(10)},
		{Name: "slack-token", Family: FamilySlack, Description: "Slack token (bot, user, app, configuration or refresh)",
			re: regexp.MustCompile(`\bxox[abposre]-(?:[0-9]+-)*[0-9A-Za-z\-]{10,}`), keywords: kw("xoxa-", "xoxb-", "xoxp-", "xoxo-", "xoxs-", "xoxr-", "xoxe-"), valid: varied(10)},
		{Name: "slack-webhook", Family: FamilySlack, Description: "Slack incoming webhook URL",
			re: regexp.MustCompile(`https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/_\-]{20,}`), keywords: kw("hooks.slack.com/"), valid: varied(10)},
		{Name: "aws-access-key-id", Family: FamilyAWSKey, Description: "AWS access key id (long-term, AKIA…)",
			re: regexp.MustCompile(`\b(?:AKIA|ABIA|ACCA)[0-9A-Z]{16}\b`), keywords: kw("AKIA", "ABIA", "ACCA"), valid: notExample(varied(8))},
		{Name: "aws-temporary-access-key-id", Family: FamilyAWSTempKey, Description: "AWS temporary access key id (STS, ASIA…)",
			re: regexp.MustCompile(`\bASIA[0-9A-Z]{16}\b`), keywords: kw("ASIA"), valid: notExample(varied(8))},
		{Name: "aws-secret-access-key", Family: FamilyAWSSecret, Description: "AWS secret access key (assigned to aws_secret_access_key or a like-named variable)",
			re:       regexp.MustCompile(`(?i)(?:aws_?secret_?access_?key|aws_?secret|secret_?access_?key)["' \t]*[:=]+[ \t]*["']?([A-Za-z0-9/+=]{40})(?:[^A-Za-z0-9/+=]|$)`),
			keywords: kw("secret_access_key", "aws_secret", "secretaccesskey", "awssecret", "secret-access-key"), fold: true, group: 1, valid: notExample(varied(12))},
		{Name: "aws-session-token", Family: FamilyAWSTempKey, Description: "AWS session token (assigned to aws_session_token or a like-named variable)",
			re:       regexp.MustCompile(`(?i)(?:aws_?session_?token|aws_?security_?token)["' \t]*[:=]+[ \t]*["']?([A-Za-z0-9/+=]{100,})`),
			keywords: kw("session_token", "sessiontoken", "security_token", "securitytoken"), fold: true, group: 1, valid: varied(16)},
		{Name: "gcp-service-account-key", Family: FamilyGCP, Description: "Google Cloud service-account key file (its private_key_id)",
			re: regexp.MustCompile(`"private_key_id"[ \t]*:[ \t]*"([0-9a-f]{40})"`), keywords: kw(`"private_key_id"`), group: 1, valid: varied(8)},
		{Name: "gcp-api-key", Family: FamilyGCPKey, Description: "Google API key",
			re: regexp.MustCompile(`\bAIza[0-9A-Za-z_\-]{35}\b`), keywords: kw("AIza"), valid: varied(10)},
		{Name: "stripe-secret-key", Family: FamilyStripe, Description: "Stripe secret or restricted key (live or test)",
			re: regexp.MustCompile(`\b(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{24,247}\b`), keywords: kw("sk_live_", "sk_test_", "rk_live_", "rk_test_"), valid: varied(10)},
		{Name: "private-key", Family: FamilyPrivateKey, Description: "private key (PEM, OpenSSH, PGP, PuTTY)",
			re: regexp.MustCompile(`-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|PuTTY-User-Key-File-[0-9]+:`), keywords: kw("PRIVATE KEY", "PuTTY-User-Key-File-")},
		{Name: "jwt", Family: FamilyJWT, Description: "JSON Web Token",
			re: regexp.MustCompile(`\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{16,}`), keywords: kw("eyJ"), valid: varied(16)},
		{Name: "anthropic-key", Family: FamilyModelKey, Description: "Anthropic API key",
			re: regexp.MustCompile(`\bsk-ant-(?:api|admin|oat)[0-9]{2}-[A-Za-z0-9_\-]{40,}`), keywords: kw("sk-ant-"), valid: varied(12)},
		{Name: "openai-key", Family: FamilyModelKey, Description: "OpenAI API key",
			re: regexp.MustCompile(`\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{32,}`), keywords: kw("sk-"), valid: varied(12)},
		{Name: "npm-token", Family: FamilyNPM, Description: "npm access token",
			re: regexp.MustCompile(`\bnpm_[A-Za-z0-9]{36}\b`), keywords: kw("npm_"), valid: varied(10)},
	}
}

// candidate reports whether line may hold a match of r.
func (r *Rule) candidate(line, lower []byte) bool {
	hay := line
	if r.fold {
		hay = lower
	}
	for _, k := range r.keywords {
		if bytes.Contains(hay, k) {
			return true
		}
	}
	return len(r.keywords) == 0
}
