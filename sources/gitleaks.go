package sources

import (
	_ "embed"
	"fmt"
	"math"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// The secret formats of a maintained scanner, used as data: gitleaks'
// default rule file, copied unchanged from the module
// github.com/zricethezav/gitleaks/v8 at GitleaksVersion (config/gitleaks.toml,
// MIT licence: rules/LICENSE.gitleaks). To update it, copy the new file over
// rules/gitleaks.toml and change GitleaksVersion and gitleaksSHA256; the
// tests say which rules the new file adds, drops or cannot compile.
//
//go:embed rules/gitleaks.toml
var gitleaksTOML []byte

// GitleaksVersion is the gitleaks release whose rule file is embedded.
const GitleaksVersion = "v8.30.1"

// gitleaksSHA256 is the SHA-256 of the embedded rule file, checked by a
// test so that the copy stays the upstream file.
const gitleaksSHA256 = "e163e53b9e7e8a8511e77271e2b323ed057759542a6d988258afe3a1fa329caf"

// gitleaksFile is the part of gitleaks' configuration format the rule
// file uses.
type gitleaksFile struct {
	Allowlist gitleaksAllowlist `toml:"allowlist"`
	Rules     []struct {
		ID          string              `toml:"id"`
		Regex       string              `toml:"regex"`
		Path        string              `toml:"path"`
		SecretGroup int                 `toml:"secretGroup"`
		Entropy     float64             `toml:"entropy"`
		Keywords    []string            `toml:"keywords"`
		Allowlists  []gitleaksAllowlist `toml:"allowlists"`
	} `toml:"rules"`
}

type gitleaksAllowlist struct {
	Condition   string   `toml:"condition"`
	RegexTarget string   `toml:"regexTarget"`
	Paths       []string `toml:"paths"`
	Regexes     []string `toml:"regexes"`
	StopWords   []string `toml:"stopwords"`
	Commits     []string `toml:"commits"`
}

// skippedRule is a rule of the file that the scanner does not run, and why.
type skippedRule struct{ id, reason string }

// gitleaksKinds names the formats loci named before it took gitleaks'
// rules, so that the markers already in palaces keep their kind; every
// other rule's kind is its id in snake case (npm-access-token is
// npm_access_token).
var gitleaksKinds = map[string]string{
	"aws-access-token":        "aws_access_key_id",
	"github-pat":              "github_token",
	"github-oauth":            "github_token",
	"github-app-token":        "github_token",
	"github-refresh-token":    "github_token",
	"github-fine-grained-pat": "github_token",
	"gitlab-pat":              "gitlab_token",
	"slack-bot-token":         "slack_token",
	"slack-user-token":        "slack_token",
	"slack-app-token":         "slack_token",
	"slack-legacy-token":      "slack_token",
	"slack-legacy-bot-token":  "slack_token",
	"slack-webhook-url":       "slack_webhook",
	"stripe-access-token":     "stripe_key",
	"gcp-api-key":             "google_api_key",
	"anthropic-api-key":       "anthropic_key",
	"openai-api-key":          "openai_key",
	"private-key":             "private_key",
}

// gitleaksKind is the finding kind of a gitleaks rule.
func gitleaksKind(id string) string {
	if k, ok := gitleaksKinds[id]; ok {
		return k
	}
	return strings.ReplaceAll(id, "-", "_")
}

// loadGitleaks compiles the embedded rule file into rules of this scanner:
// the keywords become the literal prefilter, the entropy threshold and
// secretGroup carry over, and the allowlists that describe values (regexes
// and stop words) are kept. A rule's allowlists that exempt a file by its
// name alone are not: a token of a known format is a secret wherever it
// is. Rules the scanner cannot run are listed as skipped, with the reason.
func loadGitleaks(data []byte) (*gitleaksRules, error) {
	var f gitleaksFile
	if err := toml.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("gitleaks rule file: %w", err)
	}
	g := &gitleaksRules{}
	if a, ok, err := compileAllowlist(f.Allowlist); err != nil {
		return nil, fmt.Errorf("gitleaks global allowlist: %w", err)
	} else if ok {
		g.global = append(g.global, a)
	}
	if len(f.Allowlist.Paths) > 0 {
		var err error
		if g.globalPaths, err = regexp.Compile(joinAlternatives(f.Allowlist.Paths)); err != nil {
			return nil, fmt.Errorf("gitleaks global allowlist: %w", err)
		}
	}
	skip := func(id, reason string) { g.skipped = append(g.skipped, skippedRule{id, reason}) }
	for _, fr := range f.Rules {
		if fr.Regex == "" {
			skip(fr.ID, "no regex: it matches a file name, not text")
			continue
		}
		re, err := regexp.Compile(fr.Regex)
		if err != nil {
			skip(fr.ID, "regex does not compile: "+err.Error())
			continue
		}
		if len(fr.Keywords) == 0 {
			skip(fr.ID, "no keywords: it would run on every line")
			continue
		}
		r := secretRule{kind: gitleaksKind(fr.ID), id: fr.ID, re: re, group: fr.SecretGroup}
		if r.group == 0 && re.NumSubexp() > 0 {
			r.group = firstGroup
		}
		if r.group > re.NumSubexp() {
			skip(fr.ID, fmt.Sprintf("secretGroup %d but %d groups", r.group, re.NumSubexp()))
			continue
		}
		if fr.Entropy > 0 {
			// gitleaks drops a secret whose entropy is at most the threshold.
			r.entropy = math.Nextafter(fr.Entropy, math.Inf(1))
		}
		for _, k := range fr.Keywords {
			r.lits = append(r.lits, strings.ToLower(k))
		}
		r.after = linesAfter(fr.Regex)
		if r.gate = keywordGate(fr.Regex, r.lits); r.gate == nil {
			// A keyword need not be in a match (airtable's token is
			// "pat...", its keyword "airtable"): as gitleaks does, the
			// rule runs on the whole document holding one.
			r.whole = true
		}
		if fr.Path != "" {
			if r.path, err = regexp.Compile(fr.Path); err != nil {
				skip(fr.ID, "path does not compile: "+err.Error())
				continue
			}
		}
		bad := false
		for _, fa := range fr.Allowlists {
			a, ok, err := compileAllowlist(fa)
			if err != nil {
				skip(fr.ID, "allowlist does not compile: "+err.Error())
				bad = true
				break
			}
			if ok {
				r.allow = append(r.allow, a)
			}
		}
		if !bad {
			g.rules = append(g.rules, r)
		}
	}
	return g, nil
}

// gitleaksRules are the compiled rules of gitleaks' file.
type gitleaksRules struct {
	rules []secretRule
	// global is the file's global allowlist of values (placeholders,
	// variables, templates, one character repeated).
	global []allowlist
	// globalPaths are the files the global allowlist names: lock files,
	// checksums, vendored and minified code, images. They exempt the
	// generic rule only (see rules).
	globalPaths *regexp.Regexp
	skipped     []skippedRule
}

// allowlist says which findings of a rule are not secrets.
type allowlist struct {
	// target is what regexes test: the secret (""), the whole match
	// ("match") or the match's lines ("line").
	target    string
	regexes   *regexp.Regexp
	stopWords []string
	// paths, with and, must also match the document's name; an allowlist
	// of paths alone is not kept.
	paths *regexp.Regexp
	and   bool
}

// compileAllowlist compiles a gitleaks allowlist; ok is false for one that
// exempts by file name or commit alone.
func compileAllowlist(fa gitleaksAllowlist) (a allowlist, ok bool, err error) {
	a.target = fa.RegexTarget
	a.and = strings.EqualFold(fa.Condition, "AND")
	for _, w := range fa.StopWords {
		a.stopWords = append(a.stopWords, strings.ToLower(w))
	}
	if len(fa.Regexes) > 0 {
		if a.regexes, err = regexp.Compile(joinAlternatives(fa.Regexes)); err != nil {
			return a, false, err
		}
	}
	if len(fa.Paths) > 0 {
		if a.paths, err = regexp.Compile(joinAlternatives(fa.Paths)); err != nil {
			return a, false, err
		}
	}
	valued := a.regexes != nil || len(a.stopWords) > 0
	switch {
	case !valued:
		return a, false, nil
	case a.and && len(fa.Commits) > 0:
		// Only a scan of git history has commits: never all true here.
		return a, false, nil
	case !a.and:
		// Either condition allows: the name alone must not.
		a.paths = nil
	}
	return a, true, nil
}

// joinAlternatives joins regular expressions into one that matches where
// any of them does.
func joinAlternatives(res []string) string {
	parts := make([]string, len(res))
	for i, r := range res {
		parts[i] = "(?:" + r + ")"
	}
	return strings.Join(parts, "|")
}

// allows reports a finding an allowlist exempts: secret is the secret,
// match the whole match, line the lines holding it, name the document's.
func (a allowlist) allows(secret, match, line, name string) bool {
	target := secret
	switch a.target {
	case "match":
		target = match
	case "line":
		target = line
	}
	regexOK := a.regexes != nil && a.regexes.MatchString(target)
	stopOK := false
	if len(a.stopWords) > 0 {
		l := strings.ToLower(secret)
		for _, w := range a.stopWords {
			if strings.Contains(l, w) {
				stopOK = true
				break
			}
		}
	}
	if !a.and {
		return regexOK || stopOK
	}
	if a.paths != nil && (name == "" || !a.paths.MatchString(name)) {
		return false
	}
	if a.regexes != nil && !regexOK {
		return false
	}
	if len(a.stopWords) > 0 && !stopOK {
		return false
	}
	return true
}

// maxFollowing bounds the lines after a keyword's line that a rule's span
// reaches.
const maxFollowing = 20

// linesAfter is how many lines after a keyword's line a match of expr can
// reach: 0 for an expression that matches no newline, or one only as the
// delimiter after the secret; else the most newlines a match can hold,
// capped at maxFollowing; toEnd (to the document's end) when that has no
// bound, as a private key's body has not.
func linesAfter(expr string) int {
	p, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return 0
	}
	p = p.Simplify()
	n := newlines(p)
	switch {
	case n <= 1:
		// A newline only as the delimiter after the secret: the line's
		// end stands for it.
		return 0
	case n >= unbounded:
		return toEnd
	}
	return min(n, maxFollowing)
}

const unbounded = 1 << 30

// newlines is the most newlines a match of re can hold (unbounded if
// any).
func newlines(re *syntax.Regexp) int {
	switch re.Op {
	case syntax.OpLiteral:
		return strings.Count(string(re.Rune), "\n")
	case syntax.OpCharClass:
		for i := 0; i+1 < len(re.Rune); i += 2 {
			if re.Rune[i] <= '\n' && '\n' <= re.Rune[i+1] {
				return 1
			}
		}
		return 0
	case syntax.OpAnyChar:
		return 1
	case syntax.OpCapture, syntax.OpQuest:
		return newlines(re.Sub[0])
	case syntax.OpStar, syntax.OpPlus:
		if newlines(re.Sub[0]) > 0 {
			return unbounded
		}
		return 0
	case syntax.OpRepeat:
		n := newlines(re.Sub[0])
		if n == 0 {
			return 0
		}
		if re.Max < 0 {
			return unbounded
		}
		return min(unbounded, n*re.Max)
	case syntax.OpConcat:
		s := 0
		for _, sub := range re.Sub {
			s = min(unbounded, s+newlines(sub))
		}
		return s
	case syntax.OpAlternate:
		m := 0
		for _, sub := range re.Sub {
			m = max(m, newlines(sub))
		}
		return m
	}
	return 0
}

// keywordGate is expr anchored at its start and without its leading parts
// (the "[\w.-]{0,50}?" gitleaks' generic rules open with, a "\b"), when
// every match of what remains begins with one of the keywords lits; nil
// otherwise. Running it at each keyword tells the lines where
// expr can match, and Go's regexp runs it much faster than expr on the
// whole line: expr's leading part keeps up to fifty threads alive at every
// position.
func keywordGate(expr string, lits []string) *regexp.Regexp {
	p, err := syntax.Parse(expr, syntax.Perl)
	if err != nil || len(lits) == 0 {
		return nil
	}
	// Dropping leading parts only widens what matches: a match of expr
	// holds a match of what remains. Drop them until what remains opens
	// with keywords.
	subs := []*syntax.Regexp{p}
	if p.Op == syntax.OpConcat {
		subs = p.Sub
	}
	for i := range subs {
		rest := &syntax.Regexp{Op: syntax.OpConcat, Flags: p.Flags, Sub: subs[i:]}
		if !opensWith(rest, lits) {
			continue
		}
		re, err := regexp.Compile(`^(?:` + rest.String() + `)`)
		if err != nil {
			return nil
		}
		return re
	}
	return nil
}

// opensWith reports whether every match of re begins with one of lits.
func opensWith(re *syntax.Regexp, lits []string) bool {
	starts, ok := literalStarts(re)
	if !ok || len(starts) == 0 {
		return false
	}
	for _, s := range starts {
		if !slices.ContainsFunc(lits, func(l string) bool { return strings.HasPrefix(s, l) }) {
			return false
		}
	}
	return true
}

// maxStarts bounds the strings literalStarts spells out, maxClass the
// characters of a class it spells each of.
const (
	maxStarts = 256
	maxClass  = 16
)

// literalStarts are lower-case strings one of which begins every match of
// re (ok false when re does not open with literals; "" is among them when
// a match may begin otherwise).
func literalStarts(re *syntax.Regexp) (starts []string, ok bool) {
	switch re.Op {
	case syntax.OpLiteral:
		return []string{strings.ToLower(string(re.Rune))}, true
	case syntax.OpCharClass:
		// A small class ([Aa], [pousr]): each of its characters.
		n := 0
		for i := 0; i+1 < len(re.Rune); i += 2 {
			n += int(re.Rune[i+1]-re.Rune[i]) + 1
		}
		if n > maxClass {
			return nil, false
		}
		set := map[string]bool{}
		for i := 0; i+1 < len(re.Rune); i += 2 {
			for r := re.Rune[i]; r <= re.Rune[i+1]; r++ {
				if l := strings.ToLower(string(r)); !set[l] {
					set[l] = true
					starts = append(starts, l)
				}
			}
		}
		return starts, true
	case syntax.OpCapture:
		return literalStarts(re.Sub[0])
	case syntax.OpQuest:
		s, ok := literalStarts(re.Sub[0])
		return append(s, ""), ok
	case syntax.OpAlternate:
		for _, sub := range re.Sub {
			s, ok := literalStarts(sub)
			if !ok {
				return nil, false
			}
			starts = append(starts, s...)
		}
		return starts, len(starts) <= maxStarts
	case syntax.OpConcat:
		starts = []string{""}
		for _, sub := range re.Sub {
			s, ok := literalStarts(sub)
			if !ok {
				// The literals end here: what was spelled so far begins
				// every match.
				return starts, true
			}
			var next []string
			for _, a := range starts {
				for _, b := range s {
					next = append(next, a+b)
				}
			}
			if len(next) > maxStarts {
				return starts, true
			}
			starts = next
		}
		return starts, true
	}
	return nil, false
}
