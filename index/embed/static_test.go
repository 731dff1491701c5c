package embed

import (
	"context"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

type fixedDF struct {
	n  uint64
	df map[string]uint64
}

func (f fixedDF) DocFreqs(words []string) (uint64, []uint64) {
	out := make([]uint64, len(words))
	for i, w := range words {
		out[i] = f.df[w]
	}
	return f.n, out
}

func unit(t *testing.T, v []float32) {
	t.Helper()
	var n float64
	for _, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			t.Fatalf("not finite: %v", v)
		}
		n += float64(x) * float64(x)
	}
	if math.Abs(n-1) > 1e-4 {
		t.Fatalf("length %f, want 1", math.Sqrt(n))
	}
}

func cosine(a, b []float32) float64 {
	var d float64
	for i := range a {
		d += float64(a[i]) * float64(b[i])
	}
	return d
}

// Any text embeds without error into a unit vector of StaticDim values:
// empty, huge, another script, binary-looking bytes. A text with no known
// word gets the zero-information vector, orthogonal to every text with
// one; a paraphrase with no shared word is nearer than an unrelated text.
func TestStaticEmbedsAnyText(t *testing.T) {
	st, err := NewStatic()
	if err != nil {
		t.Fatal(err)
	}
	texts := map[string]string{
		"empty":     "",
		"blank":     " \n\t ",
		"huge":      strings.Repeat("The engineers deployed the new release to production on Friday. ", 20000),
		"kanji":     "東京の天気は晴れです",
		"binary":    string([]byte{0, 1, 2, 0xff, 0xfe, 0x80, 'x', 0x7f, 0xc3}),
		"symbols":   "#### ~~~ %%% ^^^",
		"car":       "I drove my car to the garage",
		"auto":      "automobile",
		"banana":    "a ripe banana and a cup of tea",
		"mixed":     "Zürich café naïve résumé",
		"multiline": "first line\nsecond line\r\nthird",
	}
	got := map[string][]float32{}
	for name, text := range texts {
		vs, err := st.Embed(context.Background(), []string{text})
		if err != nil || len(vs) != 1 || len(vs[0]) != StaticDim {
			t.Fatalf("%s: %v %d", name, err, len(vs))
		}
		unit(t, vs[0])
		got[name] = vs[0]
	}
	for _, name := range []string{"empty", "blank", "kanji", "binary", "symbols"} {
		t.Run(name, func(t *testing.T) {
			if !NoInformation(got[name]) {
				t.Errorf("want the zero-information vector, got %v", got[name][:4])
			}
			if c := cosine(got[name], got["car"]); c != 0 {
				t.Errorf("cosine with a text of known words %f, want 0", c)
			}
		})
	}
	for _, name := range []string{"huge", "car", "auto", "multiline"} {
		t.Run(name, func(t *testing.T) {
			if NoInformation(got[name]) {
				t.Errorf("%s: has known words, got the zero-information vector", name)
			}
		})
	}
	if near, far := cosine(got["auto"], got["car"]), cosine(got["auto"], got["banana"]); near <= far || near < 0.3 {
		t.Errorf("cos(automobile, car text) %.3f, cos(automobile, banana text) %.3f", near, far)
	}
}

// Words are weighted by their IDF in the palace: with "meeting" in every
// drawer and "budget" in few, a text of both leans to budget.
func TestStaticWeighsByPalaceIDF(t *testing.T) {
	st, err := NewStatic()
	if err != nil {
		t.Fatal(err)
	}
	vs, _ := st.Embed(context.Background(), []string{"budget", "meeting", "budget meeting"})
	plain := cosine(vs[2], vs[0]) - cosine(vs[2], vs[1])
	st2, _ := NewStatic()
	st2.DF = fixedDF{n: 1000, df: map[string]uint64{"meeting": 1000, "budget": 3}}
	ws, _ := st2.Embed(context.Background(), []string{"budget", "meeting", "budget meeting"})
	weighted := cosine(ws[2], ws[0]) - cosine(ws[2], ws[1])
	if weighted <= plain+0.1 {
		t.Fatalf("IDF should pull the pair toward the rare word: lean %.3f unweighted, %.3f weighted", plain, weighted)
	}
}

// gateDF is a palace whose first count (DocFreqs(nil)) blocks until
// release is closed: an embed job's batch waiting for the frequencies to
// settle, or a slow index.
type gateDF struct {
	first   atomic.Bool
	entered chan struct{}
	release chan struct{}
}

func (g *gateDF) DocFreqs(words []string) (uint64, []uint64) {
	if words == nil {
		if g.first.CompareAndSwap(false, true) {
			close(g.entered)
			<-g.release
		}
	}
	return 100, make([]uint64, len(words))
}

// A text is embedded without waiting for another embedding's read of the
// palace's frequencies: a search's query is not held behind an embed
// job's batch that waits for the lexical index (issue 38, point 8: the
// first search after a burst took 3.7 s). Before, the provider's lock was
// held across the read.
func TestStaticEmbedDoesNotWaitForAnotherBatch(t *testing.T) {
	st, err := NewStatic()
	if err != nil {
		t.Fatal(err)
	}
	g := &gateDF{entered: make(chan struct{}), release: make(chan struct{})}
	st.DF = g
	batch := make(chan error, 1)
	go func() {
		_, err := st.Embed(ForStored(context.Background()), []string{"the kettle in the garden shed"})
		batch <- err
	}()
	<-g.entered // the batch is reading the palace's size
	query := make(chan error, 1)
	go func() {
		_, err := st.Embed(context.Background(), []string{"broken kettle"})
		query <- err
	}()
	select {
	case err := <-query:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		close(g.release)
		t.Fatal("the query's embedding waited for the other batch's read of the frequencies")
	}
	close(g.release)
	if err := <-batch; err != nil {
		t.Fatal(err)
	}
}

// growingDF is a palace whose frequencies the test changes.
type growingDF struct{ f atomic.Pointer[fixedDF] }

func (g *growingDF) DocFreqs(words []string) (uint64, []uint64) { return g.f.Load().DocFreqs(words) }

// A query is embedded with the palace's frequencies as they are, whatever
// the provider embedded before: a daemon whose embed jobs read the
// frequencies of a smaller palace (cached until it grows a quarter) and
// one started on a restored copy of the same palace embed a query alike,
// so both answer the same search alike (issue 37: after a restore, the
// semantic leg of a search ranked otherwise than the original's).
func TestStaticQueryDoesNotDependOnHistory(t *testing.T) {
	palace := func(n uint64, df map[string]uint64) *fixedDF { return &fixedDF{n: n, df: df} }
	then := palace(1000, map[string]uint64{"walnut": 40, "basalt": 400})
	now := palace(1200, map[string]uint64{"walnut": 240, "basalt": 410})

	original, err := NewStatic()
	if err != nil {
		t.Fatal(err)
	}
	g := &growingDF{}
	g.f.Store(then)
	original.DF = g
	// An embed job's batch, when the palace held 1,000 drawers.
	if _, err := original.Embed(ForStored(context.Background()), []string{"walnut basalt harbor"}); err != nil {
		t.Fatal(err)
	}
	g.f.Store(now) // 200 drawers more: less than a quarter
	qs, _ := original.Embed(context.Background(), []string{"walnut basalt"})
	q := qs[0]

	restored, _ := NewStatic()
	restored.DF = now
	rs, _ := restored.Embed(context.Background(), []string{"walnut basalt"})
	r := rs[0]
	for i := range q {
		if q[i] != r[i] {
			t.Fatalf("the query's vector depends on what the provider embedded before: value %d is %v, in a fresh provider %v (cosine %.6f)",
				i, q[i], r[i], cosine(q, r))
		}
	}
}
