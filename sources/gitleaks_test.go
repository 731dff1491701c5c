package sources

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"regexp"
	"regexp/syntax"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"
)

// The embedded rule file is gitleaks' own, unchanged; every rule in it is
// compiled except the ones listed as skipped, each with its reason: today
// one, pkcs12-file, which matches a file name and has no regex. Go's
// regexp (RE2) compiles all the others.
func TestGitleaksRuleFile(t *testing.T) {
	sum := sha256.Sum256(gitleaksTOML)
	if got := hex.EncodeToString(sum[:]); got != gitleaksSHA256 {
		t.Fatalf("rules/gitleaks.toml is not gitleaks %s's file (sha256 %s): update GitleaksVersion and gitleaksSHA256 with it", GitleaksVersion, got)
	}
	var f struct {
		Rules []struct {
			ID string `toml:"id"`
		} `toml:"rules"`
	}
	if err := toml.Unmarshal(gitleaksTOML, &f); err != nil {
		t.Fatal(err)
	}
	g, err := loadGitleaks(gitleaksTOML)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Rules) != 222 || len(g.rules)+len(g.skipped) != len(f.Rules) {
		t.Fatalf("%d rules in the file, %d compiled, %d skipped", len(f.Rules), len(g.rules), len(g.skipped))
	}
	if len(g.skipped) != 1 || g.skipped[0].id != "pkcs12-file" || !strings.Contains(g.skipped[0].reason, "no regex") {
		t.Fatalf("skipped: %+v", g.skipped)
	}
	t.Logf("gitleaks %s: %d rules, %d compiled, skipped %+v", GitleaksVersion, len(f.Rules), len(g.rules), g.skipped)
	// Every rule of the scanner has a kind, a keyword and a regex, and the
	// kinds of gitleaks' rules are distinct but for the aliases.
	kinds := map[string]string{}
	for _, r := range rules().rules {
		if r.kind == "" || len(r.lits) == 0 || r.re == nil {
			t.Errorf("rule %q (%s) is incomplete", r.kind, r.id)
		}
		if r.id == "" {
			continue
		}
		if other, ok := kinds[r.kind]; ok && gitleaksKinds[r.id] == "" {
			t.Errorf("%s and %s share the kind %s", other, r.id, r.kind)
		}
		kinds[r.kind] = r.id
	}
	// A broken file is an error, not a panic.
	if _, err := loadGitleaks([]byte("[[rules]]\nid = 3 = 4\n")); err == nil {
		t.Fatal("a broken rule file loaded")
	}
	g, err = loadGitleaks([]byte("[[rules]]\nid = \"bad\"\nregex = '''(?<=x)y'''\nkeywords = [\"y\"]\n[[rules]]\nid = \"no-keyword\"\nregex = '''z+'''\n"))
	if err != nil || len(g.rules) != 0 || len(g.skipped) != 2 || !strings.Contains(g.skipped[0].reason, "does not compile") ||
		!strings.Contains(g.skipped[1].reason, "no keywords") {
		t.Fatalf("a rule RE2 cannot compile: %v %+v", err, g)
	}
}

// spell appends to b a random string that re matches: printable ASCII
// where a class allows it (a space for \s, often for "."), short
// repetitions.
// It ignores assertions (\b, ^, $): the caller checks what it spelled.
func spell(re *syntax.Regexp, rng *rand.Rand, b *strings.Builder) {
	switch re.Op {
	case syntax.OpLiteral:
		b.WriteString(string(re.Rune))
	case syntax.OpCharClass:
		var printable []rune
		space := false
		for i := 0; i+1 < len(re.Rune); i += 2 {
			for r := max(re.Rune[i], 0x20); r <= min(re.Rune[i+1], 0x7e); r++ {
				if r == ' ' {
					space = true
				} else {
					printable = append(printable, r)
				}
			}
		}
		switch {
		case len(printable) > 0:
			b.WriteRune(printable[rng.IntN(len(printable))])
		case space:
			b.WriteByte(' ')
		default:
			b.WriteRune(re.Rune[0])
		}
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		// A space (filler that keeps the word boundaries around it) or
		// a letter or digit.
		const chars = "          abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
		b.WriteByte(chars[rng.IntN(len(chars))])
	case syntax.OpCapture:
		spell(re.Sub[0], rng, b)
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpRepeat:
		lo, hi := 0, 1
		switch re.Op {
		case syntax.OpStar:
			hi = 3
		case syntax.OpPlus:
			lo, hi = 1, 3
		case syntax.OpRepeat:
			lo, hi = re.Min, re.Max
			if hi < 0 {
				hi = lo + 3
			}
		}
		for range lo + rng.IntN(hi-lo+1) {
			spell(re.Sub[0], rng, b)
		}
	case syntax.OpConcat:
		for _, sub := range re.Sub {
			spell(sub, rng, b)
		}
	case syntax.OpAlternate:
		spell(re.Sub[rng.IntN(len(re.Sub))], rng, b)
	}
}

// gitleaksSecret is the secret gitleaks reports for a match of re in
// text: the secretGroup, or the first non-empty group, or the match.
func gitleaksSecret(re *regexp.Regexp, group int, match string) string {
	g := re.FindStringSubmatch(match)
	if len(g) < 2 {
		return match
	}
	if group > 0 {
		return g[group]
	}
	for _, s := range g[1:] {
		if s != "" {
			return s
		}
	}
	return match
}

// gitleaksSample is a file (name and text) holding a secret the rule
// finds by gitleaks' own terms (its regex matches, the keyword is there,
// the secret passes the entropy threshold and no allowlist exempts it),
// spelled from the rule's own expressions; ok is false when no attempt
// gave one.
func gitleaksSample(s *ruleSet, r *secretRule, seed uint64) (name, text, secret string, ok bool) {
	tree, err := syntax.Parse(r.re.String(), syntax.Perl)
	if err != nil {
		return "", "", "", false
	}
	var path *syntax.Regexp
	if r.path != nil {
		if path, err = syntax.Parse(r.path.String(), syntax.Perl); err != nil {
			return "", "", "", false
		}
	}
	rng := rand.New(rand.NewPCG(seed, 25))
	for range 500 {
		name = "sample.txt"
		if path != nil {
			var b strings.Builder
			b.WriteString("dir/")
			spell(path, rng, &b)
			name = b.String()
			if !r.path.MatchString(name) {
				continue
			}
		}
		var b strings.Builder
		spell(tree, rng, &b)
		// A keyword on the line before: gitleaks asks for one anywhere in
		// the file, and some rules' matches hold none.
		text = "# " + r.lits[0] + ": planted by a test\n" + b.String() + "\n"
		m := r.re.FindStringIndex(text)
		if m == nil {
			continue
		}
		group := r.group
		if group < 0 {
			group = 0
		}
		secret = gitleaksSecret(r.re, group, strings.Trim(text[m[0]:m[1]], "\n"))
		lower := strings.ToLower(text)
		hasKeyword := false
		for _, l := range r.lits {
			hasKeyword = hasKeyword || strings.Contains(lower, l)
		}
		if !hasKeyword || secret == "" || r.entropy > 0 && entropy(secret) < r.entropy || s.allowed(r, name, secret, text, m[0], m[1]) {
			continue
		}
		return name, text, secret, true
	}
	return "", "", "", false
}

// gitleaksDetected spells a sample of every gitleaks rule and says which
// rules' samples kept their secret through redaction.
func gitleaksDetected(t *testing.T, s *ruleSet) (detected, total int, missed []string) {
	t.Helper()
	for i := range s.rules {
		r := &s.rules[i]
		if r.id == "" {
			continue
		}
		total++
		name, text, secret, ok := gitleaksSample(s, r, uint64(i))
		if !ok {
			missed = append(missed, r.id+": no sample could be spelled")
			continue
		}
		red, _ := Redact(text, s.scan(name, text))
		if strings.Contains(red, secret) {
			missed = append(missed, fmt.Sprintf("%s: %q in %s kept %q", r.id, text, name, secret))
			continue
		}
		detected++
	}
	return detected, total, missed
}

// Every format of gitleaks' rule set is detected: for each rule, a file
// spelled from its own regex (and path) holding a secret that gitleaks
// would report is redacted by the scanner. This checks what the scanner
// adds to the rules: the keyword prefilter, the gates, the lines a match
// may span, the secret groups.
func TestGitleaksFormatsDetected(t *testing.T) {
	detected, total, missed := gitleaksDetected(t, rules())
	for _, m := range missed {
		t.Error(m)
	}
	t.Logf("gitleaks formats detected %d/%d", detected, total)
}
