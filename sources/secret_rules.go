package sources

import (
	"regexp"
	"slices"
	"strings"
)

// lociRules are loci's own formats, listed before gitleaks' rules so that
// on a tie they name the finding: those gitleaks' rule file lacks (an AWS
// secret key, Azure connection-string keys, loci's own token, a password
// in a URL) and broader shapes of formats it has, so that a token is
// redacted whole even when it is not exactly gitleaks' length (a private
// key cut off before its end, shorter or older GitHub, GitLab, Slack,
// Anthropic and OpenAI tokens, JWTs with base64url headers). Each rule is
// tested with a true and a false case.
var lociRules = []secretRule{
	{kind: "private_key", lits: []string{"-----begin"}, after: toEnd, re: regexp.MustCompile(`-----BEGIN[A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----[\s\S]*?(-----END[A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----|\z)`)},
	{kind: "aws_secret_access_key", lits: []string{"aws"}, re: regexp.MustCompile(`(?i)aws_?secret_?(?:access_?)?key["']?\s*[:=]\s*["']?([A-Za-z0-9/+=]{40})\b`), group: 1},
	{kind: "github_token", lits: []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"}, re: regexp.MustCompile(`\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b`)},
	{kind: "gitlab_token", lits: []string{"glpat-"}, re: regexp.MustCompile(`\bglpat-[A-Za-z0-9_-]{20,}\b`)},
	{kind: "slack_token", lits: []string{"xox"}, re: regexp.MustCompile(`\bxox[abposr]-[A-Za-z0-9-]{10,}\b`)},
	{kind: "slack_webhook", lits: []string{"hooks.slack.com"}, re: regexp.MustCompile(`https://hooks\.slack\.com/services/[A-Za-z0-9/_-]{20,}`)},
	{kind: "anthropic_key", lits: []string{"sk-ant-"}, re: regexp.MustCompile(`\bsk-ant-[A-Za-z0-9_-]{32,}\b`)},
	{kind: "openai_key", lits: []string{"sk-"}, re: regexp.MustCompile(`\bsk-(?:proj-|svcacct-)?[A-Za-z0-9_-]{32,}\b`)},
	// Azure storage and Service Bus connection strings: AccountKey=...,
	// SharedAccessKey=... (gitleaks has no rule for them).
	{kind: "azure_key", lits: []string{"accountkey", "sharedaccesskey"}, group: 1, entropy: 3, check: notPlaceholder, re: regexp.MustCompile(`(?i)\b(?:AccountKey|SharedAccessKey)[ \t]*=[ \t]*([A-Za-z0-9+/]{40,}={0,2})`)},
	{kind: "loci_token", lits: []string{"loci_"}, re: regexp.MustCompile(`\bloci_[0-9a-f]{64}\b`)},
	{kind: "jwt", lits: []string{"eyj"}, re: regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}`)},
	{kind: "url_password", lits: []string{"://"}, re: regexp.MustCompile(`\b[a-z][a-z0-9+.-]*://[^\s:/@]+:([^\s@/]{6,})@`), group: 1, entropy: 2.5, check: notPlaceholder},
}

// lociGenericRules are loci's rules for secrets known by the name beside
// them rather than by their format, run after every format rule.
var lociGenericRules = []secretRule{
	// A secret-like name assigned a value, in configuration and .env
	// files: password=..., API_KEY: ..., "secret": "...".
	{kind: "assignment", lits: []string{"password", "passwd", "pwd", "secret", "token", "api", "access", "private", "client", "credential"}, configOnly: true, entropy: 2.5, check: notPlaceholder, group: 1, re: regexp.MustCompile(
		`(?im)^[ \t{,]*(?:export[ \t]+)?["']?[A-Za-z0-9_.-]*(?:password|passwd|pwd|secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key|client[_-]?secret|credentials?)[A-Za-z0-9_.-]*["']?[ \t]*[:=][ \t]*["']?([^\s"'#,;]{6,})`)},
	// Anywhere, in prose: "the admin password is: <value>", "passphrase =
	// <value>", the word standing alone (not in a name, a path or an ARN).
	// The value must look like a password (proseSecret).
	{kind: "prose_password", lits: []string{"pass", "secret"}, check: proseSecret, group: 1, re: regexp.MustCompile(
		`(?i)(?:^|[^\w:/.@${])(?:pass(?:word|phrase|wd|code)|secret)s?\b[^\n:=.;!?]{0,40}?(?:\b(?:is|was|are|were|becomes|remains)\b[ \t]*:?|:|=)[ \t]*["'\x60“‘]?([^\s"'\x60”’<>()\[\]{},;]{6,64}?[!#$%&*+=?@^~|]*)[.,;:!?)"'\x60”’]*(?:\s|$)`)},
	// Anywhere: a secret-like name beside a quoted, high-entropy string.
	{kind: "high_entropy", lits: []string{"password", "passwd", "secret", "token", "api", "access", "private", "client"}, entropy: 3.5, check: notWords, group: 1, re: regexp.MustCompile(
		`(?i)(?:password|passwd|secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key|client[_-]?secret)[A-Za-z0-9_]*["']?\s*(?::=|=>|[:=])\s*["']([A-Za-z0-9+/=_\-.~]{16,})["']`)},
}

// proseSecret accepts the value of a password told in prose: mixed
// characters (a letter and a digit or a symbol) as a password has, and not
// a placeholder, a path, a URL, a reference or a version.
func proseSecret(v string) bool {
	// Markdown's emphasis closing on a plain word ("**No secret is
	// written**") is not a password's symbol.
	if w := strings.TrimRight(v, "*_"); len(v)-len(w) <= 2 && w != "" && strings.Trim(w, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") == "" {
		return false
	}
	letter, digit, symbol := false, false, false
	for _, c := range v {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
			letter = true
		case '0' <= c && c <= '9':
			digit = true
		case strings.ContainsRune("!#$%&*+=?@^~|", c):
			symbol = true
		}
	}
	if allDigits(v) {
		// A PIN or a numeric password.
		return len(v) >= 6
	}
	if !letter || !digit && !symbol || placeholder(v) || strings.Contains(v, "://") || strings.HasPrefix(v, "/") ||
		strings.HasPrefix(v, "~/") || strings.HasPrefix(v, "./") || proseNotSecret.MatchString(v) {
		return false
	}
	return entropy(v) >= 2.5
}

// allDigits reports a string of ASCII digits only.
func allDigits(v string) bool {
	for _, c := range v {
		if c < '0' || c > '9' {
			return false
		}
	}
	return v != ""
}

// proseNotSecret are values a sentence about a password names that are not
// one: versions, hash and cipher names, sizes, Go format verbs.
var proseNotSecret = regexp.MustCompile(`^(?:v?\d+(?:\.\d+)+\w*|(?i:sha\d*|md5|bcrypt|scrypt|argon2\w*|pbkdf2\w*|aes\w*|hmac\w*|base64|utf-?8|\d+[kmg]i?b?|x\d+)|%\w|(?:\\[uUx][0-9a-fA-F]+)+)$`)

// genericRule is the id of gitleaks' rule for a secret-like name beside a
// high-entropy value.
const genericRule = "generic-api-key"

// assignmentValue is a value that is itself an assignment: NAME=value.
var assignmentValue = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=(.*)$`)

// identifier is a name in code: letters, digits, underscores, dots.
var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.]*$`)

// nameWords are words a name in code holding a secret has; a random
// secret does not spell them.
var nameWords = []string{"key", "token", "secret", "password", "passwd", "credential", "auth", "access"}

// genericValue accepts a value of gitleaks' generic rule unless it is
// words (see words), a name in code that spells a secret word (encryptionKey1024, the name of
// another variable), or an assignment whose own value is too short or too
// plain to be a secret (in code, "HOOK_SECRET=x", "DELAY=300ms" lists an
// environment: the rule's comma operator takes the second item for the
// first one's value).
func genericValue(v string) bool {
	if !notWords(v) {
		return false
	}
	if identifier.MatchString(v) {
		l := strings.ToLower(v)
		if slices.ContainsFunc(nameWords, func(w string) bool { return strings.Contains(l, w) }) {
			return false
		}
	}
	m := assignmentValue.FindStringSubmatch(v)
	return m == nil || len(m[1]) >= 10 && entropy(m[1]) > 3.5
}

// words is a value spelled in words, as names in code, headers and paths
// are (InvalidSignature, Network.trustTokenOperationDone, X-aws-ec2-token,
// service-accounts/): each capital is followed by two small letters at
// least and a digit only ends a word, which random strings of this length
// are not.
var words = regexp.MustCompile(`^(?:[A-Z][._/-])?[a-z]*(?:[._/-]?[A-Z]?[a-z]{2,}[0-9]?)*[._/-]?$`)

// envName is an environment variable's name (LOCI_DATASTORE_PASSWORD):
// capitals and digits in two or more parts joined by underscores, what a
// program names the variable its secret comes from, not a secret.
var envName = regexp.MustCompile(`^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$`)

// notWords accepts a value that is not a placeholder, words (see words)
// or an environment variable's name.
func notWords(v string) bool {
	return !placeholder(v) && !words.MatchString(v) && !envName.MatchString(v)
}

// notPlaceholder accepts a value that is not a placeholder.
func notPlaceholder(v string) bool { return !placeholder(v) }
