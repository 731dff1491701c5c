package extract

import (
	"context"
	"regexp"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/loci-dev/loci/extract/provider"
	"github.com/loci-dev/loci/store/graph"
)

// Heuristic is the built-in extractor: rules over English text, no model
// and no network. Names are runs of capitalised words (with "of", "de",
// "&" between them, and C++-style tokens); each is classed by gazetteers
// (tools, places, first names), by its words (Inc, University, Street...)
// and by the words around it (in, at, project, Mr...); dates are month
// names, weekdays and ISO dates. A lone word among the 3,000 most
// frequent English words (common.go, generated from the word-vector
// table's vocabulary) or made from a verb (-ing, -tion) is a name only
// when something says so ("Game", "Host", "Hardening" are not). Facts are
// two names with one of the predicates' phrasings between them ("works
// at", "lives in", ...).
type Heuristic struct{}

// Name is the provenance of what it finds.
func (Heuristic) Name() string { return string(provider.Heuristic) }

// Extract reads each text.
func (h Heuristic) Extract(_ context.Context, texts []string) ([]Result, error) {
	out := make([]Result, len(texts))
	for i, t := range texts {
		out[i] = h.one(t)
	}
	return out, nil
}

// span is a name found in a sentence: its words' positions and kind.
type span struct {
	start, end int // word indexes, end exclusive
	name, kind string
	conf       float64
	// weak: one capitalised word opening a sentence with nothing saying
	// what it names ("Keep", "Appreciate", "Simone"); an entity only when a
	// fact names it.
	weak bool
}

// sentenceEnd ends a sentence: its mark, or a blank line (splitCode
// makes one before list items, table cells and code).
var sentenceEnd = regexp.MustCompile(`[.!?]+(\s+|$)|\n\s*\n`)

// numberRE is a standard's number.
var numberRE = regexp.MustCompile(`^\d+$`)

// standards are the bodies and series whose documents are named by
// number (RFC 3339, ISO 8601, PEP 8).
var standards = map[string]bool{"RFC": true, "ISO": true, "IEC": true, "IEEE": true, "PEP": true, "CVE": true, "ECMA": true, "ANSI": true, "FIPS": true}

// romanRE is a Roman numeral (Warrior II, Henry VIII).
var romanRE = regexp.MustCompile(`^[IVXLC]+$`)

// abbrevs are the abbreviations whose dot ends no sentence (Mr. Smith).
var abbrevs = map[string]bool{"Mr": true, "Mrs": true, "Ms": true, "Dr": true, "Prof": true, "St": true, "Jr": true, "Sr": true, "Mt": true, "vs": true, "etc": true}

// dropAbbrevDots removes the dot of an initial or an abbreviation before
// a capital (J. K. Rowling, George R. R. Martin, Mr. Smith), which ends
// no sentence.
func dropAbbrevDots(s string) string {
	var b strings.Builder
	last := 0
	for i := strings.IndexByte(s, '.'); i >= 0; {
		start := i
		for start > 0 {
			r, n := utf8.DecodeLastRuneInString(s[:start])
			if !unicode.IsLetter(r) {
				break
			}
			start -= n
		}
		word := s[start:i]
		before, _ := utf8.DecodeLastRuneInString(s[:start])
		rest := strings.TrimLeftFunc(s[i+1:], unicode.IsSpace)
		next, _ := utf8.DecodeRuneInString(rest)
		initial := utf8.RuneCountInString(word) == 1 && unicode.IsUpper([]rune(word)[0])
		if (initial || abbrevs[word]) && (start == 0 || !unicode.IsLetter(before) && !unicode.IsDigit(before)) && len(rest) < len(s[i+1:]) && unicode.IsUpper(next) {
			b.WriteString(s[last:i])
			last = i + 1
		}
		k := strings.IndexByte(s[i+1:], '.')
		if k < 0 {
			break
		}
		i += 1 + k
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

func (h Heuristic) one(text string) Result {
	var res Result
	seen := map[string]int{}
	prose, idents, program := splitCode(text)
	lower := map[string]bool{}
	for _, w := range strings.FieldsFunc(text, func(r rune) bool { return !unicode.IsLetter(r) && r != '\'' && r != '’' }) {
		if r, _ := utf8.DecodeRuneInString(w); unicode.IsLower(r) {
			lower[w] = true
		}
	}
	prose = dropAbbrevDots(prose)
	for _, sent := range sentenceEnd.Split(prose, -1) {
		words := tokenize(sent)
		spans := names(words, idents, program, lower)
		fs := facts(words, spans)
		// A name a fact names has the kind the fact gives it when nothing
		// else said ("Amelia is the sister of Henry": a person).
		inFacts := map[string]string{}
		for _, f := range fs {
			inFacts[f.Subject], inFacts[f.Object] = f.SubjectKind, f.ObjectKind
		}
		for _, s := range spans {
			k, named := inFacts[s.name]
			if s.weak && !named {
				continue
			}
			if named && s.kind == graph.KindOther {
				s.kind = k
			}
			key := s.kind + "\x00" + graph.Key(s.name)
			if i, ok := seen[key]; ok {
				res.Entities[i].Confidence = max(res.Entities[i].Confidence, s.conf)
				continue
			}
			seen[key] = len(res.Entities)
			res.Entities = append(res.Entities, Entity{Name: s.name, Kind: s.kind, Confidence: s.conf})
		}
		res.Facts = append(res.Facts, fs...)
	}
	return res
}

// word is a token with its text as written and lower-cased.
type word struct{ text, lower string }

// tokenRE matches words (with inner apostrophes, hyphens, dots and
// underscores, and C++ and C# endings) and clause marks, which end a name
// and break a fact.
var tokenRE = regexp.MustCompile(`[\p{L}\p{N}][\p{L}\p{N}_'’\-\.+#]*[\p{L}\p{N}+#]|[\p{L}\p{N}][+#]*|[,;:()"“”]`)

func tokenize(s string) []word {
	var out []word
	for _, t := range tokenRE.FindAllString(s, -1) {
		t = strings.TrimSuffix(strings.TrimSuffix(t, "'s"), "’s")
		out = append(out, word{t, strings.ToLower(t)})
	}
	return out
}

func capitalised(w word) bool {
	r := []rune(w.text)
	return len(r) > 0 && unicode.IsUpper(r[0])
}

// names finds the names of a sentence and classes them; a name with a
// word its text's code uses (idents) is code, not a name. In a program's
// text (program), a lone capitalised word is an identifier unless a
// gazetteer, a title or a kind word says otherwise; lower is the words
// the text writes in lower case.
func names(words []word, idents map[string]bool, program bool, lower map[string]bool) []span {
	var out []span
	first := firstWord(words)
	quotes := 0
	for i := 0; i < len(words); {
		w := words[i]
		// A clause's first word (the sentence's, or the one after a
		// colon, as after a speaker's name, or opening a quotation) is
		// capitalised whatever it is.
		start := i == first || i > 0 && (words[i-1].text == ":" || words[i-1].text == "“" || words[i-1].text == `"` && quotes%2 == 1)
		if w.text == `"` {
			quotes++
		}
		if d, n := dateAt(words, i); n > 0 {
			out = append(out, span{start: i, end: i + n, name: d, kind: graph.KindDate, conf: 0.9})
			i += n
			continue
		}
		if t, ok := tools[w.lower]; ok {
			if toolAt(w, start) {
				out = append(out, span{start: i, end: i + 1, name: t, kind: graph.KindTool, conf: 0.9})
			}
			i++
			continue
		}
		// A title in quotes ("A Dance with Dragons", "Finding Home") is
		// one name, whatever its words; not in a program's text, where
		// quotes hold literals and examples.
		if k := quotedTitle(words, i); k > 0 && !program {
			if name := joinWords(words[i+1 : k]); !codeWords(words[i+1:k], idents) && !(k-i == 2 && lower[words[i+1].lower]) {
				out = append(out, span{start: i + 1, end: k, name: name, kind: graph.KindOther, conf: 0.6})
			}
			i = k + 1
			continue
		}
		// A place of several words may open with a common one (New York).
		place := placeAt(words, i)
		// One ending in -ing ("Finding", "Seeing") names nothing by itself.
		if place == 0 && (!capitalised(w) || junk(words, i) || starter(w.lower) && !firstNames[w.lower] ||
			start && (openers[w.lower] || strings.HasSuffix(w.lower, "ing") && !firstNames[w.lower] && !places[w.lower])) {
			i++
			continue
		}
		j := i + max(place, 1)
		for j < len(words) {
			// An acronym after a word in lower case ends the name
			// ("Cranfield MAP"; "MCP Inspector" is one).
			acronym := shouted(words[j].text) && !shouted(words[j-1].text) && !romanRE.MatchString(words[j].text) &&
				(j+1 == len(words) || !capitalised(words[j+1]))
			if capitalised(words[j]) && !acronym && !junk(words, j) && !starter(words[j].lower) && !isMonthOrDay(words[j].lower) {
				j++
				continue
			}
			if n := connectorAt(words, j); n > 0 && j+n < len(words) && capitalised(words[j+n]) && !junk(words, j+n) && !starter(words[j+n].lower) {
				j += n + 1
				continue
			}
			break
		}
		// A label's letter ("Run D", "Palace B") is not part of a name;
		// an initial inside one is (Christopher D Manning).
		for j-i > 1 && utf8.RuneCountInString(words[j-1].text) == 1 {
			j--
		}
		// A standard's number is part of its name (RFC 3339, ISO 8601).
		if j < len(words) && standards[words[j-1].text] && numberRE.MatchString(words[j].text) {
			j++
		}
		name := joinWords(words[i:j])
		if codeWords(words[i:j], idents) || utf8.RuneCountInString(name) < 2 {
			i = j
			continue
		}
		kind, conf := classify(words, i, j)
		// A lone word is a name when something says so (a gazetteer, a
		// title, a kind word: conf 0.8 and up), or when its text writes
		// it only with a capital ("Jobs" beside "jobs" is a word); in a
		// program's text, only when something says so, acronyms too.
		if j-i == 1 && (kindWord(w.lower) || conf < 0.8 && (program || shoutedWord(name, lower) || !shouted(name) && (lower[w.lower] || demonym(words, i) || utf8.RuneCountInString(name) < 3))) {
			i = j
			continue
		}
		// A lone word in title case that is a common English word
		// ("Game", "Host", "Run") or a verbal noun ("Hardening",
		// "Deduplication") with nothing saying what it names is the word
		// or a section's name, not a name, wherever it stands: an entity
		// only when a fact names it, like a sentence's first word.
		weak := j-i == 1 && kind == graph.KindOther && (start || conf <= 0.5 && !shouted(name) && (commonWord(w.lower) || verbalNoun(w.lower)))
		out = append(out, span{start: i, end: j, name: name, kind: kind, conf: conf, weak: weak})
		i = j
	}
	// Names joined by "and" are of one kind: "Mila and Jonas got married"
	// makes two people of them.
	for k := 0; k+1 < len(out); k++ {
		a, b := &out[k], &out[k+1]
		if b.start != a.end+1 || words[a.end].lower != "and" {
			continue
		}
		if a.kind == graph.KindOther && b.kind == graph.KindPerson && b.conf >= 0.7 {
			a.kind, a.conf, a.weak = b.kind, 0.6, false
		} else if b.kind == graph.KindOther && a.kind == graph.KindPerson && !a.weak && a.conf >= 0.7 {
			b.kind, b.conf = a.kind, 0.6
		}
	}
	return out
}

// placeAt is the number of words of a place of the gazetteer of several
// words starting at words[i] (New York, Buenos Aires); 0 when none.
func placeAt(words []word, i int) int {
	for n := 3; n >= 2; n-- {
		if i+n <= len(words) && capitalised(words[i]) && places[strings.ToLower(joinWords(words[i:i+n]))] {
			return n
		}
	}
	return 0
}

// toolAt reports whether a word of the tools list names the tool: written
// with a capital (not as a clause's first word when the name is also a
// common word: "Go for it", "Swift action"), or in lower case when it is
// no common word ("postgres", "kubernetes").
func toolAt(w word, start bool) bool {
	if strings.ContainsAny(w.lower, "+#") {
		return true
	}
	if commonTools[w.lower] {
		return capitalised(w) && !start
	}
	return capitalised(w) || len(w.lower) >= 5
}

// quotedTitle is the index of the closing quote when words[i] opens a
// quote of one to eight words in title case (every word but short
// function words capitalised; one word when it is no common opener:
// "Dune"); 0 otherwise.
func quotedTitle(words []word, i int) int {
	if words[i].text != `"` && words[i].text != "“" {
		return 0
	}
	for k := i + 1; k < len(words) && k <= i+9; k++ {
		w := words[k]
		if w.text == `"` || w.text == "”" {
			opens := words[i+1].lower
			one := k-i == 2 && !strings.HasSuffix(opens, "ing") && !kindWord(opens)
			common := starter(opens) && !titleSmall[opens] || openers[opens] || one && starter(opens)
			if (k-i > 2 || one) && capitalised(words[i+1]) && !common {
				return k
			}
			return 0
		}
		if !unicode.IsLetter([]rune(w.text)[0]) && !unicode.IsNumber([]rune(w.text)[0]) || !capitalised(w) && !titleSmall[w.lower] || junk(words, k) {
			return 0
		}
	}
	return 0
}

// demonym reports an adjective of nationality or region before a noun
// ("Irish music", "a European trip"): a word ending in -ish, -ese, -ian,
// -ean or -ern followed by a word in lower case.
func demonym(words []word, i int) bool {
	l := words[i].lower
	if !(strings.HasSuffix(l, "ish") || strings.HasSuffix(l, "ese") || strings.HasSuffix(l, "ian") || strings.HasSuffix(l, "ean") || strings.HasSuffix(l, "ern")) {
		return false
	}
	return i+1 < len(words) && unicode.IsLower([]rune(words[i+1].text)[0])
}

// shoutedWord reports a word of five letters or more in capitals that
// its text also writes in lower case (BENCHMARKS beside "benchmarks") or
// that is one of the most frequent English words (DECISIONS,
// LIBRARY-NOTES, INTENSE): a word or a file's name, no acronym.
func shoutedWord(w string, lower map[string]bool) bool {
	if !shouted(w) || utf8.RuneCountInString(w) < 5 {
		return false
	}
	for _, p := range strings.Split(strings.ToLower(w), "-") {
		if !lower[p] && !common[p] {
			return false
		}
	}
	return true
}

// kindWord reports a word that says a name's kind (Inc, University,
// Street, Lake, Mr): alone it names nothing.
func kindWord(lower string) bool {
	return orgWords[lower] || placeWords[lower] || placeFirst[lower] || titles[lower]
}

// codeWords reports a name with a word its text's code uses.
func codeWords(ws []word, idents map[string]bool) bool {
	for _, w := range ws {
		if idents[w.text] {
			return true
		}
	}
	return false
}

// connectorAt is the number of connector words at words[j] ("of", "de",
// "of the": Bank of America, Lord of the Rings); 0 when none.
func connectorAt(words []word, j int) int {
	if j >= len(words) || !connectors[words[j].lower] {
		return 0
	}
	if j+1 < len(words) && (words[j+1].lower == "the" || words[j+1].lower == "la") {
		return 2
	}
	return 1
}

// firstWord is the index of the word that opens the sentence: only clause
// marks (quotes, brackets) come before it.
func firstWord(words []word) int {
	for i, w := range words {
		if r := []rune(w.text); unicode.IsLetter(r[0]) || unicode.IsNumber(r[0]) {
			return i
		}
	}
	return len(words)
}

// starter reports whether a lower-cased word opens sentences without
// naming anything, either apostrophe.
func starter(lower string) bool {
	return starters[strings.ReplaceAll(lower, "’", "'")]
}

// classify decides the kind of the name words[i:j] from its words and
// those around it.
func classify(words []word, i, j int) (kind string, conf float64) {
	first, last := words[i].lower, words[j-1].lower
	prev := ""
	if i > 0 {
		prev = words[i-1].lower
	}
	prev2 := ""
	if i > 1 {
		prev2 = words[i-2].lower
	}
	next := ""
	if j < len(words) {
		next = words[j].lower
	}
	full := strings.ToLower(joinWords(words[i:j]))
	switch {
	case titles[prev]:
		return graph.KindPerson, 0.9
	case (orgWords[last] || orgWords[first]) && j-i > 1:
		return graph.KindOrganization, 0.85
	case (placeWords[last] || placeFirst[first]) && j-i > 1:
		return graph.KindPlace, 0.85
	case places[full]:
		return graph.KindPlace, 0.9
	case prev == "project" || next == "project" || next == "app" || next == "repo" || next == "repository":
		return graph.KindProject, 0.8
	case firstNames[first]:
		return graph.KindPerson, 0.85
	case j-i == 1 && shouted(words[i].text) || prev == "the":
		// An acronym (CLI, NYC, LOTR) or a name after "the" (the Hobbit,
		// the Pacific Northwest) is no person, and the words around it
		// are too weak to say more.
		return graph.KindOther, 0.5
	case orgContext[prev] || orgContext[prev2+" "+prev]:
		return graph.KindOrganization, 0.6
	case placeContext[prev] && !(next != "" && unicode.IsDigit([]rune(next)[0])):
		// Not before a number: "in Game 7" is no place.
		return graph.KindPlace, 0.6
	case personContext[prev]:
		return graph.KindPerson, 0.7
	case personVerbs[next]:
		return graph.KindPerson, 0.7
	}
	return graph.KindOther, 0.5
}

func joinWords(ws []word) string {
	parts := make([]string, len(ws))
	for i, w := range ws {
		parts[i] = w.text
	}
	return strings.Join(parts, " ")
}

var isoDate = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)

// realDate reports an ISO date that is a day of the calendar (2026-13-45
// is an example of a bad input, not a date).
func realDate(s string) bool {
	_, err := time.Parse("2006-01-02", s)
	return err == nil
}

// dateAt is a date starting at words[i] and its length in words: an ISO
// date, a weekday, or a month with an optional day and year.
func dateAt(words []word, i int) (string, int) {
	w := words[i]
	switch {
	case isoDate.MatchString(w.text) && realDate(w.text):
		return w.text, 1
	case weekdays[w.lower] && capitalised(w):
		return w.text, 1
	case months[w.lower] && capitalised(w) && !(w.lower == "may" && (i+1 >= len(words) || !isDay(words[i+1].lower))):
		n := 1
		if i+1 < len(words) && isDay(words[i+1].lower) {
			n++
		}
		if i+n < len(words) && isYear(words[i+n].lower) {
			n++
		}
		return joinWords(words[i : i+n]), n
	case isDay(w.lower) && i+1 < len(words) && months[words[i+1].lower] && capitalised(words[i+1]):
		n := 2
		if i+2 < len(words) && isYear(words[i+2].lower) {
			n++
		}
		return joinWords(words[i : i+n]), n
	}
	return "", 0
}

func isMonthOrDay(w string) bool { return months[w] || weekdays[w] }

func isDay(w string) bool {
	w = strings.TrimRight(w, "stndrh")
	if len(w) == 0 || len(w) > 2 {
		return false
	}
	for _, r := range w {
		if !unicode.IsDigit(r) {
			return false
		}
	}
	return true
}

func isYear(w string) bool {
	if len(w) != 4 {
		return false
	}
	for _, r := range w {
		if !unicode.IsDigit(r) {
			return false
		}
	}
	return w[0] == '1' || w[0] == '2'
}

// facts finds two names with a predicate's phrasing between them.
func facts(words []word, spans []span) []Fact {
	var out []Fact
	for k := 0; k+1 < len(spans); k++ {
		a, b := spans[k], spans[k+1]
		if a.kind == graph.KindDate || b.kind == graph.KindDate {
			continue
		}
		var mid []string
		for _, w := range words[a.end:b.start] {
			if !fillers[w.lower] {
				mid = append(mid, w.lower)
			}
		}
		p, ok := phrasings[strings.Join(mid, " ")]
		if !ok {
			continue
		}
		sk, ok := kindFor(p.subject, a.kind)
		if !ok {
			continue
		}
		ok2 := true
		var objKind string
		if objKind, ok2 = kindFor(p.object, b.kind); !ok2 {
			continue
		}
		out = append(out, Fact{Subject: a.name, SubjectKind: sk, Predicate: p.predicate, Object: b.name, ObjectKind: objKind, Confidence: 0.7})
	}
	return out
}

// kindFor checks a name's kind against what a predicate allows there (an
// "other" name takes the expected kind).
func kindFor(allowed []string, kind string) (string, bool) {
	if len(allowed) == 0 {
		return kind, true
	}
	for _, k := range allowed {
		if k == kind {
			return kind, true
		}
	}
	if kind == graph.KindOther {
		return allowed[0], true
	}
	return "", false
}
