package lexical

import (
	"bytes"
	"unicode"
	"unicode/utf8"

	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/analysis/token/lowercase"
	"github.com/blevesearch/bleve/v2/analysis/token/porter"
	"github.com/blevesearch/bleve/v2/registry"
)

// Token is a word of a text as the index analyses it: its term (lower
// case, stemmed), its byte offsets in the text and its place among the
// text's words (stop words keep their places).
type Token struct {
	Term       string
	Start, End int
	Position   int
}

// Tokens analyses text as the index analyses drawer content, with each
// token's offsets: where a drawer holds a query's words. Words are runs
// of letters and digits (an apostrophe inside one kept), then the en
// analyzer's filters (possessive, lower case, stop words, Porter stems):
// the index's terms for ordinary words, without the index's Unicode word
// segmentation (the most of its analysis time), which splits some runs
// differently ("3.14", "e-mail"). Both sides of a comparison must come
// from Tokens or Matching.
func Tokens(text string) []Token {
	ts := analyzer.Analyze([]byte(text))
	out := make([]Token, len(ts))
	for i, t := range ts {
		out[i] = Token{Term: string(t.Term), Start: t.Start, End: t.End, Position: t.Position}
	}
	return out
}

// Matching is the tokens of text (as Tokens has them) whose term is one
// of terms. Only the words that could stem to a term are stemmed: a
// Porter stem keeps the start of its word (all but at most its last
// three letters, which a rule may rewrite: "sensibility", "sensibl"), so
// a word not starting with a term's start is not one of its words.
func Matching(text string, terms []string) []Token {
	if len(terms) == 0 {
		return nil
	}
	starts := make([][]byte, len(terms))
	for i, t := range terms {
		starts[i] = []byte(t[:max(1, len(t)-3)])
	}
	b := []byte(text)
	var cands analysis.TokenStream
	eachWord(b, func(start, end, pos int) {
		for _, st := range starts {
			if end-start >= len(st) && bytes.EqualFold(b[start:start+len(st)], st) {
				cands = append(cands, &analysis.Token{Term: b[start:end:end], Start: start, End: end, Position: pos, Type: analysis.AlphaNumeric})
				return
			}
		}
	})
	for _, f := range filters {
		cands = f.Filter(cands)
	}
	want := make(map[string]bool, len(terms))
	for _, t := range terms {
		want[t] = true
	}
	var out []Token
	for _, t := range cands {
		if want[string(t.Term)] {
			out = append(out, Token{Term: string(t.Term), Start: t.Start, End: t.End, Position: t.Position})
		}
	}
	return out
}

// filters are the en analyzer's token filters.
var filters = func() []analysis.TokenFilter {
	c := registry.NewCache()
	var out []analysis.TokenFilter
	for _, name := range []string{en.PossessiveName, lowercase.Name, en.StopName, porter.Name} {
		f, err := c.TokenFilterNamed(name)
		if err != nil {
			panic("the en analyzer's filters are not registered: " + err.Error())
		}
		out = append(out, f)
	}
	return out
}()

// analyzer is the en analyzer's filters over wordRuns.
var analyzer = &analysis.DefaultAnalyzer{Tokenizer: wordRuns{}, TokenFilters: filters}

// wordRuns tokenizes runs of letters and digits.
type wordRuns struct{}

// Tokenize implements analysis.Tokenizer.
func (wordRuns) Tokenize(b []byte) analysis.TokenStream {
	var out analysis.TokenStream
	eachWord(b, func(start, end, pos int) {
		out = append(out, &analysis.Token{Term: b[start:end:end], Start: start, End: end, Position: pos, Type: analysis.AlphaNumeric})
	})
	return out
}

// eachWord calls fn with each run of letters and digits of b (an
// apostrophe between two of them inside the run) and its place, from 1.
func eachWord(b []byte, fn func(start, end, pos int)) {
	start, pos := -1, 0
	word := func(r rune) bool {
		if r < utf8.RuneSelf {
			return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9'
		}
		return unicode.IsLetter(r) || unicode.IsDigit(r)
	}
	for i := 0; i <= len(b); {
		r, w := rune(0), 1
		if i < len(b) {
			if c := b[i]; c < utf8.RuneSelf {
				r = rune(c)
			} else {
				r, w = utf8.DecodeRune(b[i:])
			}
		}
		in := i < len(b) && (word(r) || (r == '\'' && start >= 0 && i+1 < len(b) && word(rune(b[i+1]))))
		switch {
		case in && start < 0:
			start = i
		case !in && start >= 0:
			pos++
			fn(start, i, pos)
			start = -1
		}
		i += w
	}
}
