package extract

import (
	"context"
	"regexp"
	"strings"
	"unicode"

	"github.com/loci-dev/loci/graph"
)

// Heuristic is the built-in extractor: rules over English text, no model
// and no network. Names are runs of capitalised words (with "of", "de",
// "&" between them, and C++-style tokens); each is classed by gazetteers
// (tools, places, first names), by its words (Inc, University, Street...)
// and by the words around it (in, at, project, Mr...); dates are month
// names, weekdays and ISO dates. Facts are two names with one of the
// predicates' phrasings between them ("works at", "lives in", ...).
type Heuristic struct{}

// Name is the provenance of what it finds.
func (Heuristic) Name() string { return "heuristic" }

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

var sentenceEnd = regexp.MustCompile(`[.!?]+(\s+|$)|\n+`)

func (h Heuristic) one(text string) Result {
	var res Result
	seen := map[string]int{}
	for _, sent := range sentenceEnd.Split(text, -1) {
		words := tokenize(sent)
		spans := names(words)
		fs := facts(words, spans)
		inFacts := map[string]bool{}
		for _, f := range fs {
			inFacts[f.Subject], inFacts[f.Object] = true, true
		}
		for _, s := range spans {
			if s.weak && !inFacts[s.name] {
				continue
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

// tokenRE matches words (with inner apostrophes, hyphens, dots, and C++
// and C# endings) and clause marks, which end a name and break a fact.
var tokenRE = regexp.MustCompile(`[\p{L}\p{N}][\p{L}\p{N}'’\-\.+#]*[\p{L}\p{N}+#]|[\p{L}\p{N}][+#]*|[,;:()"“”]`)

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

// names finds the names of a sentence and classes them.
func names(words []word) []span {
	var out []span
	opening := firstWord(words)
	for i := 0; i < len(words); {
		w := words[i]
		if d, n := dateAt(words, i); n > 0 {
			out = append(out, span{start: i, end: i + n, name: d, kind: graph.KindDate, conf: 0.9})
			i += n
			continue
		}
		if t, ok := tools[w.lower]; ok && (capitalised(w) || len(w.lower) >= 5 || strings.ContainsAny(w.lower, "+#")) {
			out = append(out, span{start: i, end: i + 1, name: t, kind: graph.KindTool, conf: 0.9})
			i++
			continue
		}
		start := i == opening
		// A sentence's first word is capitalised whatever it is: one
		// ending in -ing ("Finding", "Seeing") names nothing by itself.
		if !capitalised(w) || starter(w.lower) && !firstNames[w.lower] || start && strings.HasSuffix(w.lower, "ing") && !firstNames[w.lower] && !places[w.lower] {
			i++
			continue
		}
		j := i + 1
		for j < len(words) {
			if capitalised(words[j]) && !starter(words[j].lower) && !isMonthOrDay(words[j].lower) {
				j++
				continue
			}
			if connectors[words[j].lower] && j+1 < len(words) && capitalised(words[j+1]) {
				j += 2
				continue
			}
			break
		}
		parts := make([]string, 0, j-i)
		for _, x := range words[i:j] {
			parts = append(parts, x.text)
		}
		kind, conf := classify(words, i, j)
		out = append(out, span{start: i, end: j, name: strings.Join(parts, " "), kind: kind, conf: conf, weak: start && j-i == 1 && kind == graph.KindOther})
		i = j
	}
	return out
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
func classify(words []word, i, j int) (string, float64) {
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
	case orgWords[last] || orgWords[first] && j-i > 1:
		return graph.KindOrganization, 0.85
	case (placeWords[last] || placeWords[first]) && j-i > 1:
		return graph.KindPlace, 0.85
	case places[full]:
		return graph.KindPlace, 0.9
	case prev == "project" || next == "project" || next == "app" || next == "repo" || next == "repository":
		return graph.KindProject, 0.8
	case firstNames[first]:
		return graph.KindPerson, 0.85
	case orgContext[prev] || orgContext[prev2+" "+prev]:
		return graph.KindOrganization, 0.6
	case placeContext[prev]:
		return graph.KindPlace, 0.6
	case personVerbs[next] || personContext[prev]:
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

// dateAt is a date starting at words[i] and its length in words: an ISO
// date, a weekday, or a month with an optional day and year.
func dateAt(words []word, i int) (string, int) {
	w := words[i]
	switch {
	case isoDate.MatchString(w.text):
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
