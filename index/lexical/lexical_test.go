package lexical

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2/analysis/lang/en"

	"github.com/loci-dev/loci/internal/markov"
	ranking "github.com/loci-dev/loci/search/rank"
)

func open(t *testing.T) *Index {
	t.Helper()
	x, err := Open(filepath.Join(t.TempDir(), "lex"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { x.Close() })
	return x
}

func ids(h []Hit) []string {
	out := make([]string, len(h))
	for i := range h {
		out[i] = h[i].ID
	}
	return out
}

func same(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestConjunctiveThenAnyWord(t *testing.T) {
	x := open(t)
	err := x.Apply([]Doc{
		{ID: "a", Content: "The deploys happen on Fridays after the review.", WingID: "w", RoomID: "r"},
		{ID: "b", Content: "Deploying on Fridays is risky.", WingID: "w", RoomID: "r"},
		{ID: "c", Content: "Reviews are done on Mondays.", WingID: "w", RoomID: "r2", Tags: []string{"process"}},
	}, nil, 3)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// Stemming and case: "deploy friday" matches a and b (deploys, Deploying, Fridays).
	h, _ := x.Search(ctx, "DEPLOY friday", Filter{}, 10, nil)
	if got := ids(h); len(got) != 2 || !h[0].AllWords || !h[1].AllWords {
		t.Fatalf("conjunctive: %v", got)
	}
	// A drawer with only some of the words comes after every drawer with
	// all of them, and not at all when those fill the page.
	if err := x.Apply([]Doc{{ID: "0", Content: "Fridays.", WingID: "w", RoomID: "r"}}, nil, 4); err != nil {
		t.Fatal(err)
	}
	h, _ = x.Search(ctx, "DEPLOY friday", Filter{}, 10, nil)
	if got := ids(h); len(got) != 3 || got[2] != "0" || h[2].AllWords || h[2].Rank != 3 {
		t.Fatalf("some words after all words: %+v", h)
	}
	h, _ = x.Search(ctx, "DEPLOY friday", Filter{}, 2, nil)
	if got := ids(h); len(got) != 2 || slices.Contains(got, "0") {
		t.Fatalf("a page of all-word matches: %v", got)
	}
	if err := x.Apply(nil, []string{"0"}, 5); err != nil {
		t.Fatal(err)
	}
	// No document has every word: any single word suffices.
	h, _ = x.Search(ctx, "review budget", Filter{}, 10, nil)
	if got := ids(h); len(got) != 2 {
		t.Fatalf("any word: %v", got)
	}
	// Scope before ranking.
	h, _ = x.Search(ctx, "review", Filter{RoomID: "r2"}, 10, nil)
	if got := ids(h); !same(got, []string{"c"}) {
		t.Fatalf("room filter: %v", got)
	}
	h, _ = x.Search(ctx, "review", Filter{Tags: []string{"process"}}, 10, nil)
	if got := ids(h); !same(got, []string{"c"}) {
		t.Fatalf("tag filter: %v", got)
	}
	if x.Seq() != 5 {
		t.Fatalf("seq %d", x.Seq())
	}
}

func TestTieBrokenByID(t *testing.T) {
	x := open(t)
	x.Apply([]Doc{{ID: "b", Content: "same words"}, {ID: "a", Content: "same words"}, {ID: "c", Content: "same words"}}, nil, 1)
	h, _ := x.Search(context.Background(), "same words", Filter{}, 10, nil)
	if got := ids(h); !same(got, []string{"a", "b", "c"}) {
		t.Fatalf("ties: %v", got)
	}
}

func TestReopenAndRebuild(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "lex")
	x, err := Open(dir)
	if err != nil || !x.Rebuilt {
		t.Fatalf("new index: %v %v", x, err)
	}
	x.Apply([]Doc{{ID: "a", Content: "kept words"}}, nil, 7)
	x.Close()
	x, err = Open(dir)
	if err != nil || x.Rebuilt || x.Seq() != 7 {
		t.Fatalf("reopen: rebuilt %v seq %d err %v", x.Rebuilt, x.Seq(), err)
	}
	x.Close()
	// Damage: the index metadata is gone.
	os.Remove(filepath.Join(dir, "index_meta.json"))
	x, err = Open(dir)
	if err != nil || !x.Rebuilt || x.Seq() != 0 {
		t.Fatalf("damaged: rebuilt %v seq %d err %v", x.Rebuilt, x.Seq(), err)
	}
	x.Close()
}

func TestNthLargest(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 500 {
		n := 1 + r.IntN(60)
		v := make([]float64, n)
		for i := range v {
			v[i] = float64(r.IntN(8)) // many ties
		}
		k := 1 + r.IntN(n)
		sorted := slices.Clone(v)
		slices.Sort(sorted)
		slices.Reverse(sorted)
		if got := nthLargest(slices.Clone(v), k); got != sorted[k-1] {
			t.Fatalf("nthLargest(%v, %d) = %v, want %v", v, k, got, sorted[k-1])
		}
	}
}

// The top of a large candidate set is the same as a full sort's.
func TestTopKMatchesFullRanking(t *testing.T) {
	x := open(t)
	var docs []Doc
	words := []string{"alpha", "beta", "gamma", "delta", "eps"}
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 300 {
		var b []string
		for range 1 + r.IntN(6) {
			b = append(b, words[r.IntN(len(words))])
		}
		docs = append(docs, Doc{ID: fmt.Sprintf("d%03d", i), Content: strings.Join(b, " ")})
	}
	x.Apply(docs, nil, 1)
	all, _ := x.Search(context.Background(), "alpha beta", Filter{}, 300, nil)
	top, _ := x.Search(context.Background(), "alpha beta", Filter{}, 7, nil)
	if len(top) != 7 || !same(ids(top), ids(all[:7])) {
		t.Fatalf("top 7 %v, full %v", ids(top), ids(all[:7]))
	}
	// Drawers with both words first, each group by score then id.
	for i := 1; i < len(all); i++ {
		a, b := all[i-1], all[i]
		if a.AllWords != b.AllWords {
			if !a.AllWords {
				t.Fatalf("some-word match before an all-word match at %d", i)
			}
			continue
		}
		if b.Score > a.Score || (b.Score == a.Score && b.ID < a.ID) {
			t.Fatalf("order broken at %d", i)
		}
	}
	if !all[0].AllWords || all[len(all)-1].AllWords {
		t.Fatalf("expected both groups: first %+v last %+v", all[0], all[len(all)-1])
	}
}

// keep is a scope check in rank order: refused drawers leave room for the
// next ones, in both groups.
func TestKeepPredicate(t *testing.T) {
	x := open(t)
	x.Apply([]Doc{
		{ID: "a", Content: "deploy friday deploy"},
		{ID: "b", Content: "deploy friday"},
		{ID: "c", Content: "deploy"},
		{ID: "d", Content: "friday"},
	}, nil, 1)
	h, _ := x.Search(context.Background(), "deploy friday", Filter{}, 10, ranking.Each(func(id string) bool { return id != "a" }))
	if got := ids(h); len(got) != 3 || got[0] != "b" || slices.Contains(got, "a") {
		t.Fatalf("keep: %v", got)
	}
	h, _ = x.Search(context.Background(), "deploy friday", Filter{}, 10, ranking.Each(func(id string) bool { return id != "a" && id != "b" }))
	if got := ids(h); len(got) != 2 || slices.Contains(got, "a") || slices.Contains(got, "b") {
		t.Fatalf("fallback to any word: %v", got)
	}
	h, _ = x.Search(context.Background(), "deploy friday", Filter{}, 10, ranking.Each(func(id string) bool { return id != "d" }))
	if got := ids(h); !same(got, []string{"a", "b", "c"}) {
		t.Fatalf("keep in the some-words group: %v", got)
	}
}

// A room filter keeps exactly the candidates of that room, however they
// interleave with others in document order.
func TestFilterMergeJoin(t *testing.T) {
	x := open(t)
	words := []string{"alpha", "beta", "gamma", "delta", "eps"}
	r := rand.New(rand.NewPCG(5, 6))
	room := map[string]string{}
	var docs []Doc
	for i := range 400 {
		var b []string
		for range 1 + r.IntN(6) {
			b = append(b, words[r.IntN(len(words))])
		}
		id := fmt.Sprintf("d%03d", i)
		room[id] = fmt.Sprintf("r%d", r.IntN(5))
		docs = append(docs, Doc{ID: id, Content: strings.Join(b, " "), RoomID: room[id]})
	}
	x.Apply(docs, nil, 1)
	for _, q := range []string{"alpha", "beta gamma", "eps delta alpha"} {
		t.Run(q, func(t *testing.T) {
			all, _ := x.Search(context.Background(), q, Filter{}, 200, ranking.Each(func(id string) bool { return room[id] == "r2" }))
			got, _ := x.Search(context.Background(), q, Filter{RoomID: "r2"}, 200, nil)
			if !same(ids(got), ids(all)) {
				t.Fatalf("%q: filter %v, predicate %v", q, ids(got), ids(all))
			}
			if len(got) == 0 {
				t.Fatalf("%q: nothing found", q)
			}
		})
	}
}

// The token total (BM25's average length) counts each drawer once, and
// forgets a deleted one.
func TestTokenTotal(t *testing.T) {
	x := open(t)
	x.Apply([]Doc{{ID: "a", Content: "alpha beta gamma"}, {ID: "b", Content: "delta epsilon"}}, nil, 1)
	if x.tokens.Load() != 5 {
		t.Fatalf("tokens %d, want 5", x.tokens.Load())
	}
	x.Apply([]Doc{{ID: "a", Content: "alpha beta gamma", Tags: []string{"re-indexed"}}}, nil, 2)
	if x.tokens.Load() != 5 {
		t.Fatalf("after re-indexing: tokens %d, want 5", x.tokens.Load())
	}
	x.Apply(nil, []string{"a"}, 3)
	if x.tokens.Load() != 2 {
		t.Fatalf("after a delete: tokens %d, want 2", x.tokens.Load())
	}
}

// tokenCount (the en analyzer without its stemmer) counts exactly the
// en analyzer's tokens.
func TestTokenCountMatchesTheAnalyzer(t *testing.T) {
	x, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	a := x.idx.Mapping().AnalyzerNamed(en.AnalyzerName)
	mt := markov.NewText()
	r := rand.New(rand.NewPCG(1, 2))
	texts := []string{"", "The", "It's John's dog's bowl, isn't it?", "C++ and C# and Go's runtime: 3.14 e-mail ünïcödé 東京 🙂"}
	for range 500 {
		texts = append(texts, mt.Sentence(r)+" "+mt.Sentence(r))
	}
	for _, s := range texts {
		if got, want := x.tokenCount(s), uint64(len(a.Analyze([]byte(s)))); got != want {
			t.Fatalf("%q: %d tokens counted, the analyzer has %d", s, got, want)
		}
	}
}

// Tokens gives the index's own terms, each at the bytes of the word it
// came from: "Deploying" is the term "deploy" the query "deploys" asks
// for, and a stop word is not a token.
func TestTokensAreTheIndexsTerms(t *testing.T) {
	x, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	a := x.idx.Mapping().AnalyzerNamed(en.AnalyzerName)
	text := "The Deploying of ünïcödé queues: it's John's job."
	got := Tokens(text)
	want := a.Analyze([]byte(text))
	if len(got) != len(want) || len(got) == 0 {
		t.Fatalf("%d tokens, the index has %d", len(got), len(want))
	}
	for i, tk := range got {
		if tk.Term != string(want[i].Term) || tk.Position != want[i].Position {
			t.Fatalf("token %d: %+v, the index has %q at %d", i, tk, want[i].Term, want[i].Position)
		}
	}
	if got[0].Term != Tokens("deploys")[0].Term || text[got[0].Start:got[0].End] != "Deploying" {
		t.Fatalf("first token %+v (%q)", got[0], text[got[0].Start:got[0].End])
	}
	for _, tk := range got {
		if tk.Term == "the" || tk.Term == "of" {
			t.Fatalf("stop word %q is a token", tk.Term)
		}
	}
}

// Matching finds exactly the tokens Tokens has for the terms asked, though
// it stems only the words that could be theirs.
func TestMatchingIsTokensOfTheTerms(t *testing.T) {
	mt := markov.NewText()
	r := rand.New(rand.NewPCG(3, 4))
	texts := []string{"Sensibility, sensible relational relate happiness happy queues queuing jobs Job's it's"}
	for range 300 {
		texts = append(texts, mt.Sentence(r)+" "+mt.Sentence(r)+" "+mt.Sentence(r))
	}
	for _, text := range texts {
		all := Tokens(text)
		var terms []string
		for i, tk := range all {
			if i%3 == 0 {
				terms = append(terms, tk.Term)
			}
		}
		want := map[string]bool{}
		for _, tm := range terms {
			want[tm] = true
		}
		var exp []Token
		for _, tk := range all {
			if want[tk.Term] {
				exp = append(exp, tk)
			}
		}
		if got := Matching(text, terms); !reflect.DeepEqual(got, exp) {
			t.Fatalf("%q, terms %v:\n got  %v\n want %v", text, terms, got, exp)
		}
	}
}

// A search, the index's sequence and its frequencies are answered while a
// batch is being applied, from what the last finished batch published:
// they never wait for the writer (issue 38, point 8: every search of a
// palace catching up after a burst waited for the 2,000-drawer batch in
// progress, p99 474 ms against 0.6 ms).
func TestReadersDoNotWaitForTheWriter(t *testing.T) {
	x := open(t)
	if err := x.Apply([]Doc{{ID: "a", Content: "alpha beta gamma"}}, nil, 7); err != nil {
		t.Fatal(err)
	}
	x.mu.Lock() // the writer, mid-batch
	defer x.mu.Unlock()
	done := make(chan struct{})
	go func() {
		defer close(done)
		if s := x.Seq(); s != 7 {
			t.Errorf("seq %d, want 7", s)
		}
		hits, err := x.Search(context.Background(), "beta", Filter{}, 10, nil)
		if err != nil || len(hits) != 1 {
			t.Errorf("search: %v %v", hits, err)
		}
		if n, _ := x.DocFreqs([]string{"beta"}); n != 1 {
			t.Errorf("doc count %d", n)
		}
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("a reader waited for the batch in progress")
	}
}
