package sources

import (
	"math"
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"

	ahocorasick "github.com/BobuSumisu/aho-corasick"
)

// Finding is a secret found in a text: its kind and where the secret
// itself lies (byte offsets; the name beside it is not part of it).
type Finding struct {
	Kind       string
	Start, End int
}

// secretRule finds one kind of secret.
type secretRule struct {
	kind string
	// id is the rule's id in gitleaks' rule file ("" for loci's own); its
	// findings are also judged by the file's global allowlist.
	id string
	re *regexp.Regexp
	// gate, when set, is re without its leading parts, anchored: a match
	// of re holds a match of gate that starts at a keyword, so re runs
	// only on the lines where gate matches at one of the keywords
	// (keywordGate).
	gate *regexp.Regexp
	// group is the submatch that is the secret: 0 is the whole match,
	// firstGroup the first non-empty numbered (unnamed) submatch, or the
	// whole match when none is (gitleaks' rule when secretGroup is unset).
	group int
	// entropy, when set, is the least Shannon entropy (bits a character)
	// the secret must have: a name like password beside a low-entropy
	// value (a placeholder, a variable) is not a finding.
	entropy float64
	// check, when set, must accept the secret (a placeholder test, a
	// test of mixed characters).
	check func(string) bool
	// configOnly rules apply to configuration and environment files only
	// (in code, "token = next()" is no secret).
	configOnly bool
	// path, when set, must match the document's name (a rule for YAML
	// files, for nuget.config); skipName must not.
	path, skipName *regexp.Regexp
	// lits are lower-case literals (gitleaks' keywords) one of which must
	// be in the document: the rule's expression runs only on the lines
	// holding one and the after lines that follow each, so a large
	// document is scanned at the speed of a substring search.
	lits []string
	// after is how many lines after a keyword's line a match can reach
	// (toEnd: to the document's end, a private key's body).
	after int
	// whole rules run on the whole document when it holds a keyword: a
	// match need not hold one.
	whole bool
	// allow are the rule's allowlists (values that are not secrets).
	allow []allowlist
}

const (
	firstGroup = -1
	toEnd      = -1
)

// ruleSet is the compiled scanner: every rule, and one Aho-Corasick
// automaton over every rule's keywords so that a document is read once to
// know which rules to run where.
type ruleSet struct {
	rules  []secretRule
	global []allowlist
	trie   *ahocorasick.Trie
	// litRules are, for each keyword of the automaton, the rules having it.
	litRules [][]int
}

// rules compiles the scanner on first use: loci's own formats, gitleaks'
// formats from the embedded file, then the rules that know a secret by the
// name beside it (loci's, then gitleaks' generic rule), so that on a tie
// the specific format names the finding.
var rules = sync.OnceValue(func() *ruleSet {
	g, err := loadGitleaks(gitleaksTOML)
	if err != nil {
		// The file is embedded and its loading tested: a broken copy is
		// a build defect.
		panic(err)
	}
	s := &ruleSet{global: g.global}
	s.rules = append(s.rules, lociRules...)
	var generic []secretRule
	for _, r := range g.rules {
		if r.id == genericRule {
			// A guess by the name beside a value: not in the files
			// gitleaks' global allowlist names (lock files, go.sum),
			// and not a name in code or an assignment (genericValue).
			r.skipName = g.globalPaths
			r.check = genericValue
			generic = append(generic, r)
			continue
		}
		s.rules = append(s.rules, r)
	}
	s.rules = append(s.rules, lociGenericRules...)
	s.rules = append(s.rules, generic...)
	index := map[string]int{}
	var lits []string
	for i := range s.rules {
		r := &s.rules[i]
		if r.id == "" {
			r.gate = keywordGate(r.re.String(), r.lits)
		}
		for _, l := range r.lits {
			k, ok := index[l]
			if !ok {
				k = len(lits)
				index[l] = k
				lits = append(lits, l)
				s.litRules = append(s.litRules, nil)
			}
			if !slices.Contains(s.litRules[k], i) {
				s.litRules[k] = append(s.litRules[k], i)
			}
		}
	}
	s.trie = ahocorasick.NewTrieBuilder().AddStrings(lits).Build()
	return s
})

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

// ScanFile finds secrets in a document named name: Scan's rules, in
// configuration files also secret-like names assigned a value, and the
// rules for one kind of file (Kubernetes YAML, nuget.config) in files of
// that kind. Findings come in order and do not overlap.
func ScanFile(name, text string) []Finding { return rules().scan(name, text) }

// scan is ScanFile with this rule set.
func (s *ruleSet) scan(name, text string) []Finding {
	cfg := name != "" && configFile(name)
	// Where each rule's keywords are, from one pass over the text.
	hits := make([][]int, len(s.rules))
	s.trie.Walk(asciiLower(text), func(end, n, pattern int64) bool {
		p := int(end - n + 1)
		for _, i := range s.litRules[pattern] {
			hits[i] = append(hits[i], p)
		}
		return true
	})
	var out []Finding
	for i := range s.rules {
		r := &s.rules[i]
		if len(hits[i]) == 0 || r.configOnly && !cfg || r.path != nil && (name == "" || !r.path.MatchString(name)) ||
			r.skipName != nil && name != "" && r.skipName.MatchString(name) {
			continue
		}
		if r.whole {
			out = append(out, s.find(r, name, text, 0, len(text))...)
			continue
		}
		pos := hits[i]
		if r.gate != nil {
			pos = slices.DeleteFunc(pos, func(p int) bool { return !r.gate.MatchString(text[p:reach(text, p, r.after)]) })
		}
		for _, span := range lineSpans(text, pos, r.after) {
			out = append(out, s.find(r, name, text, span[0], span[1])...)
		}
	}
	return ordered(out)
}

// find runs the rule on text[from:to], a span of whole lines.
func (s *ruleSet) find(r *secretRule, name, text string, from, to int) []Finding {
	var out []Finding
	for _, m := range r.re.FindAllStringSubmatchIndex(text[from:to], -1) {
		ms, me := m[0]+from, m[1]+from
		st, en := ms, me
		switch g := r.secretGroup(m); {
		case g < 0:
			continue
		case g > 0:
			st, en = m[2*g]+from, m[2*g+1]+from
		}
		secret := text[st:en]
		if secret == "" || r.entropy > 0 && entropy(secret) < r.entropy || r.check != nil && !r.check(secret) {
			continue
		}
		if r.id != "" && s.allowed(r, name, secret, text, ms, me) {
			continue
		}
		out = append(out, Finding{Kind: r.kind, Start: st, End: en})
	}
	return out
}

// secretGroup is the submatch of m that is the secret (0: the whole
// match; -1: none, the rule's group did not take part).
func (r *secretRule) secretGroup(m []int) int {
	switch {
	case r.group > 0:
		if m[2*r.group] < 0 {
			return -1
		}
		return r.group
	case r.group == firstGroup:
		names := r.re.SubexpNames()
		for g := 1; 2*g+1 < len(m); g++ {
			if names[g] == "" && m[2*g] >= 0 && m[2*g+1] > m[2*g] {
				return g
			}
		}
	}
	return 0
}

// allowed reports a finding of a gitleaks rule that the file's global
// allowlist or the rule's own allows: the match is text[ms:me].
func (s *ruleSet) allowed(r *secretRule, name, secret, text string, ms, me int) bool {
	ls := strings.LastIndexByte(text[:ms], '\n') + 1
	le := len(text)
	if i := strings.IndexByte(text[me:], '\n'); i >= 0 {
		le = me + i
	}
	for _, a := range s.global {
		if a.allows(secret, text[ms:me], text[ls:le], name) {
			return true
		}
	}
	for _, a := range r.allow {
		if a.allows(secret, text[ms:me], text[ls:le], name) {
			return true
		}
	}
	return false
}

// lineSpans are the spans of whole lines of text holding a keyword (at
// the positions pos), each with after lines more (to the end of text when
// toEnd), in order and not overlapping.
func lineSpans(text string, pos []int, after int) [][2]int {
	if !slices.IsSorted(pos) {
		slices.Sort(pos)
	}
	var spans [][2]int
	for _, p := range pos {
		if len(spans) > 0 && p < spans[len(spans)-1][1] {
			continue
		}
		ls := strings.LastIndexByte(text[:p], '\n') + 1
		le := reach(text, p, after)
		if len(spans) > 0 && ls < spans[len(spans)-1][1] {
			spans[len(spans)-1][1] = le
			continue
		}
		spans = append(spans, [2]int{ls, le})
	}
	return spans
}

// reach is the end of the after lines following the line of text holding
// position p (the end of text when toEnd).
func reach(text string, p, after int) int {
	if after == toEnd {
		return len(text)
	}
	for n := 0; ; n++ {
		i := strings.IndexByte(text[p:], '\n')
		if i < 0 {
			return len(text)
		}
		if n == after {
			return p + i
		}
		p += i + 1
	}
}

// asciiLower lower-cases ASCII letters only, so that byte offsets stay.
func asciiLower(s string) []byte {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return b
}

// ordered sorts findings and merges overlapping ones.
func ordered(out []Finding) []Finding {
	// Earliest first, then longest; on a tie the rule listed first (the
	// specific formats before the generic ones).
	slices.SortStableFunc(out, func(a, b Finding) int {
		if a.Start != b.Start {
			return a.Start - b.Start
		}
		return b.End - a.End
	})
	// Overlapping findings become one, named by the first: a later one
	// reaching further extends it, so that no part of a secret is kept.
	kept := out[:0]
	for _, f := range out {
		if n := len(kept); n > 0 && f.Start < kept[n-1].End {
			kept[n-1].End = max(kept[n-1].End, f.End)
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
