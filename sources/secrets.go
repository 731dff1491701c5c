package sources

import (
	"math"
	"path"
	"regexp"
	"slices"
	"strings"
)

// Finding is a secret found in a text: its kind and where the secret
// itself lies (byte offsets; the name beside it is not part of it).
type Finding struct {
	Kind       string
	Start, End int
}

// secretRule finds one kind of secret; group, when set, is the
// submatch that is the secret (else the whole match).
type secretRule struct {
	kind  string
	re    *regexp.Regexp
	group int
	// entropy, when set, is the least Shannon entropy (bits a character)
	// the secret must have: a name like password beside a low-entropy
	// value (a placeholder, a variable) is not a finding.
	entropy float64
	// configOnly rules apply to configuration and environment files only
	// (in code, "token = next()" is no secret).
	configOnly bool
	// lits are literals one of which every match contains (lower-case
	// when fold): the rule's expression runs only on the lines holding
	// one, so a large document is scanned at the speed of a substring
	// search. multiline rules run from such a line to the document's end.
	lits      []string
	fold      bool
	multiline bool
}

// secretRules is the rule table: the fixed formats of private keys and of
// cloud, forge, chat and payment tokens, JWTs, and secret-like names
// assigned a value. Each rule is tested with a true and a false case.
var secretRules = []secretRule{
	{kind: "private_key", lits: []string{"-----begin"}, fold: true, multiline: true, re: regexp.MustCompile(`-----BEGIN[A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----[\s\S]*?(-----END[A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----|\z)`)},
	{kind: "aws_access_key_id", lits: []string{"AKIA", "ASIA", "ABIA", "ACCA"}, re: regexp.MustCompile(`\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b`)},
	{kind: "aws_secret_access_key", lits: []string{"aws"}, fold: true, re: regexp.MustCompile(`(?i)aws_?secret_?(?:access_?)?key["']?\s*[:=]\s*["']?([A-Za-z0-9/+=]{40})\b`), group: 1},
	{kind: "github_token", lits: []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"}, re: regexp.MustCompile(`\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b`)},
	{kind: "gitlab_token", lits: []string{"glpat-"}, re: regexp.MustCompile(`\bglpat-[A-Za-z0-9_-]{20,}\b`)},
	{kind: "slack_token", lits: []string{"xox"}, re: regexp.MustCompile(`\bxox[abposr]-[A-Za-z0-9-]{10,}\b`)},
	{kind: "slack_webhook", lits: []string{"hooks.slack.com"}, re: regexp.MustCompile(`https://hooks\.slack\.com/services/[A-Za-z0-9/_-]{20,}`)},
	{kind: "stripe_key", lits: []string{"sk_live_", "sk_test_", "rk_live_", "rk_test_"}, re: regexp.MustCompile(`\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}\b`)},
	{kind: "google_api_key", lits: []string{"AIza"}, re: regexp.MustCompile(`\bAIza[0-9A-Za-z_-]{35}\b`)},
	{kind: "anthropic_key", lits: []string{"sk-ant-"}, re: regexp.MustCompile(`\bsk-ant-[A-Za-z0-9_-]{32,}\b`)},
	{kind: "openai_key", lits: []string{"sk-"}, re: regexp.MustCompile(`\bsk-(?:proj-|svcacct-)?[A-Za-z0-9_-]{32,}\b`)},
	{kind: "loci_token", lits: []string{"loci_"}, re: regexp.MustCompile(`\bloci_[0-9a-f]{64}\b`)},
	{kind: "jwt", lits: []string{"eyJ"}, re: regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}`)},
	{kind: "url_password", lits: []string{"://"}, re: regexp.MustCompile(`\b[a-z][a-z0-9+.-]*://[^\s:/@]+:([^\s@/]{6,})@`), group: 1, entropy: 2.5},
	// A secret-like name assigned a value, in configuration and .env
	// files: password=..., API_KEY: ..., "secret": "...".
	{kind: "assignment", lits: []string{"password", "passwd", "pwd", "secret", "token", "api", "access", "private", "client", "credential"}, fold: true, configOnly: true, entropy: 2.5, group: 1, re: regexp.MustCompile(
		`(?im)^[ \t{,]*(?:export[ \t]+)?["']?[A-Za-z0-9_.-]*(?:password|passwd|pwd|secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key|client[_-]?secret|credentials?)[A-Za-z0-9_.-]*["']?[ \t]*[:=][ \t]*["']?([^\s"'#,;]{6,})`)},
	// Anywhere: a secret-like name beside a quoted, high-entropy string.
	{kind: "high_entropy", lits: []string{"password", "passwd", "secret", "token", "api", "access", "private", "client"}, fold: true, entropy: 3.5, group: 1, re: regexp.MustCompile(
		`(?i)(?:password|passwd|secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key|client[_-]?secret)[A-Za-z0-9_]*["']?\s*(?::=|=>|[:=])\s*["']([A-Za-z0-9+/=_\-.~]{16,})["']`)},
}

// configFile reports a file whose assignments are configuration: .env
// files, and the usual configuration formats.
func configFile(name string) bool {
	base := strings.ToLower(path.Base(name))
	if base == ".env" || strings.HasPrefix(base, ".env.") || strings.HasSuffix(base, ".env") || base == ".npmrc" ||
		base == ".pypirc" || base == ".netrc" || base == "credentials" {
		return true
	}
	switch path.Ext(base) {
	case ".ini", ".cfg", ".conf", ".toml", ".yaml", ".yml", ".json", ".properties", ".env", ".tfvars", ".xml":
		return true
	}
	return false
}

// Scan finds secrets in a text of unknown origin (an option's value): the
// fixed formats and secret-like names beside high-entropy strings.
func Scan(text string) []Finding { return ScanFile("", text) }

// ScanFile finds secrets in a document named name: Scan's rules, and in
// configuration files also secret-like names assigned a value. Findings
// come in order and do not overlap.
func ScanFile(name, text string) []Finding {
	cfg := name != "" && configFile(name)
	var lower string
	var out []Finding
	for _, r := range secretRules {
		if r.configOnly && !cfg {
			continue
		}
		hay := text
		if r.fold {
			if lower == "" {
				lower = asciiLower(text)
			}
			hay = lower
		}
		for _, span := range lineSpans(hay, r.lits, r.multiline) {
			out = append(out, r.find(text, span[0], span[1])...)
		}
	}
	return ordered(out)
}

// find runs the rule on text[from:to], a span of whole lines.
func (r secretRule) find(text string, from, to int) []Finding {
	var out []Finding
	for _, m := range r.re.FindAllStringSubmatchIndex(text[from:to], -1) {
		s, e := m[0], m[1]
		if r.group > 0 {
			if m[2*r.group] < 0 {
				continue
			}
			s, e = m[2*r.group], m[2*r.group+1]
		}
		s, e = s+from, e+from
		if r.entropy > 0 && (entropy(text[s:e]) < r.entropy || placeholder(text[s:e])) {
			continue
		}
		out = append(out, Finding{Kind: r.kind, Start: s, End: e})
	}
	return out
}

// lineSpans are the spans of whole lines of hay holding one of lits (to
// the end of hay when multiline), in order and not overlapping.
func lineSpans(hay string, lits []string, multiline bool) [][2]int {
	var starts []int
	for _, l := range lits {
		for from := 0; ; {
			i := strings.Index(hay[from:], l)
			if i < 0 {
				break
			}
			starts = append(starts, from+i)
			from += i + len(l)
		}
	}
	if len(starts) == 0 {
		return nil
	}
	slices.Sort(starts)
	var spans [][2]int
	for _, p := range starts {
		if len(spans) > 0 && p < spans[len(spans)-1][1] {
			continue
		}
		ls := strings.LastIndexByte(hay[:p], '\n') + 1
		le := len(hay)
		if !multiline {
			if i := strings.IndexByte(hay[p:], '\n'); i >= 0 {
				le = p + i
			}
		}
		if len(spans) > 0 && ls < spans[len(spans)-1][1] {
			spans[len(spans)-1][1] = le
			continue
		}
		spans = append(spans, [2]int{ls, le})
	}
	return spans
}

// asciiLower lower-cases ASCII letters only, so that byte offsets stay.
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// ordered sorts findings and drops overlapping ones.
func ordered(out []Finding) []Finding {
	// Earliest first, then longest; on a tie the rule listed first (the
	// specific formats before the generic ones).
	slices.SortStableFunc(out, func(a, b Finding) int {
		if a.Start != b.Start {
			return a.Start - b.Start
		}
		return b.End - a.End
	})
	// Keep the first of overlapping findings.
	kept := out[:0]
	for _, f := range out {
		if len(kept) > 0 && f.Start < kept[len(kept)-1].End {
			continue
		}
		kept = append(kept, f)
	}
	return kept
}

// placeholder reports a value that stands for a secret without being one:
// a variable reference, a template, a run of one character.
func placeholder(v string) bool {
	l := strings.ToLower(v)
	if strings.HasPrefix(v, "$") || strings.HasPrefix(v, "%") || strings.HasPrefix(v, "<") || strings.Contains(v, "{{") ||
		strings.Contains(l, "changeme") || strings.Contains(l, "example") || strings.Contains(l, "placeholder") ||
		strings.Contains(l, "xxxx") || strings.Contains(l, "your_") || strings.Contains(l, "your-") || strings.Contains(l, "redacted") {
		return true
	}
	switch l {
	case "none", "null", "true", "false", "undefined", "required", "optional", "password", "secret", "string":
		return true
	}
	return false
}

// entropy is the Shannon entropy of s in bits a character.
func entropy(s string) float64 {
	if s == "" {
		return 0
	}
	counts := map[rune]int{}
	n := 0
	for _, r := range s {
		counts[r]++
		n++
	}
	h := 0.0
	for _, c := range counts {
		p := float64(c) / float64(n)
		h -= p * math.Log2(p)
	}
	return h
}

// Redaction is one secret replaced in a document: its kind and line.
type Redaction struct {
	Kind string `json:"kind"`
	Line int    `json:"line"`
}

// Redact replaces each finding with a marker naming its kind,
// [REDACTED:<kind>], and says what it replaced where.
func Redact(text string, findings []Finding) (string, []Redaction) {
	if len(findings) == 0 {
		return text, nil
	}
	var b strings.Builder
	var out []Redaction
	last := 0
	for _, f := range findings {
		b.WriteString(text[last:f.Start])
		b.WriteString("[REDACTED:" + f.Kind + "]")
		out = append(out, Redaction{Kind: f.Kind, Line: 1 + strings.Count(text[:f.Start], "\n")})
		last = f.End
	}
	b.WriteString(text[last:])
	return b.String(), out
}
