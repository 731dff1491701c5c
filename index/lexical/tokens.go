package lexical

import (
	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
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

// Tokens analyses text as the index analyses drawer content (the en
// analyzer), with each token's offsets: where a drawer holds a query's
// words.
func Tokens(text string) []Token {
	ts := analyzer.Analyze([]byte(text))
	out := make([]Token, len(ts))
	for i, t := range ts {
		out[i] = Token{Term: string(t.Term), Start: t.Start, End: t.End, Position: t.Position}
	}
	return out
}

// analyzer is the en analyzer the index's mapping names, built once.
var analyzer = func() analysis.Analyzer {
	a, err := registry.NewCache().AnalyzerNamed(en.AnalyzerName)
	if err != nil {
		panic("the en analyzer is not registered: " + err.Error())
	}
	return a
}()
