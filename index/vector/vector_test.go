package vector

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/loci-dev/loci/index/embed"
	"github.com/loci-dev/loci/internal/markov"
	"github.com/loci-dev/loci/search/rank"
)

// clustered draws n vectors around c random centres.
func clustered(r *rand.Rand, n, c, dim int, spread float64) [][]float32 {
	centres := make([][]float32, c)
	for i := range centres {
		centres[i] = make([]float32, dim)
		for j := range centres[i] {
			centres[i][j] = float32(r.NormFloat64())
		}
	}
	out := make([][]float32, n)
	for i := range out {
		ce := centres[r.IntN(c)]
		v := make([]float32, dim)
		for j := range v {
			v[j] = ce[j] + float32(r.NormFloat64()*spread)
		}
		out[i] = v
	}
	return out
}

// textVectors embeds realistic sentences with the hash provider (a signed,
// hashed bag of words and word pairs): sparse, skewed, overlapping like real
// text embeddings' neighbourhoods.
func textVectors(r *rand.Rand, n, dim int) [][]float32 {
	text := markov.NewText()
	texts := make([]string, n)
	for i := range texts {
		texts[i] = text.Sentence(r)
	}
	out, _ := embed.Hash{Dim: dim}.Embed(context.Background(), texts)
	return out
}

func recallAt(t testing.TB, x *Index, queries [][]float32, k int) float64 {
	t.Helper()
	total := 0.0
	for _, q := range queries {
		want, err := x.Exact(q, k, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := x.Search(q, k, 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		set := map[string]bool{}
		for _, h := range want {
			set[h.ID] = true
		}
		found := 0
		for _, h := range got {
			if set[h.ID] {
				found++
			}
		}
		total += float64(found) / float64(len(want))
	}
	return total / float64(len(queries))
}

func build(t testing.TB, vecs [][]float32) *Index {
	x := New(len(vecs[0]))
	for i, v := range vecs {
		if err := x.Add(fmt.Sprintf("v%06d", i), v); err != nil {
			t.Fatal(err)
		}
	}
	return x
}

func TestHNSWRecallClustered(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	vecs := clustered(r, 4000, 40, 64, 0.6)
	x := build(t, vecs)
	queries := clustered(r, 100, 40, 64, 0.6)
	rec := recallAt(t, x, queries, 10)
	t.Logf("recall@10 on clustered data: %.3f", rec)
	if rec < 0.95 {
		t.Fatalf("recall@10 on clustered data %.3f, want >= 0.95", rec)
	}
}

func TestHNSWRecallTextLike(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 2))
	vecs := textVectors(r, 4000, 256)
	x := build(t, vecs)
	queries := textVectors(r, 100, 256)
	rec := recallAt(t, x, queries, 10)
	t.Logf("recall@10 on text-like data: %.3f", rec)
	if rec < 0.95 {
		t.Fatalf("recall@10 on text-like data %.3f, want >= 0.95", rec)
	}
}

// Deletes and replacements leave no stale neighbours; Compact drops the
// tombstones.
func TestDeletesAndCompact(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	vecs := clustered(r, 1000, 10, 32, 0.5)
	x := build(t, vecs)
	q := vecs[7]
	hits, _ := x.Search(q, 1, 0, nil)
	if hits[0].ID != "v000007" {
		t.Fatalf("nearest to itself: %v", hits)
	}
	if !x.Has("v000007") || x.Has("nope") {
		t.Fatal("Has before the delete")
	}
	x.Delete("v000007")
	x.Add("v000008", clustered(r, 1, 10, 32, 0.5)[0]) // replaced elsewhere
	if x.Has("v000007") || !x.Has("v000008") {
		t.Fatal("Has after a delete and a replacement")
	}
	for _, h := range mustSearch(t, x, q, 20) {
		if h.ID == "v000007" {
			t.Fatal("a deleted vector was returned")
		}
	}
	if x.Len() != 999 || x.Tombstones() == 0 {
		t.Fatalf("len %d tombstones %.3f", x.Len(), x.Tombstones())
	}
	x.Compact()
	if x.Len() != 999 || x.Tombstones() != 0 {
		t.Fatalf("after compact: len %d tombstones %.3f", x.Len(), x.Tombstones())
	}
	seen := map[string]int{}
	for _, h := range mustSearch(t, x, q, 999) {
		seen[h.ID]++
	}
	if seen["v000008"] != 1 || seen["v000007"] != 0 {
		t.Fatalf("after compact: %v", seen)
	}
}

func mustSearch(t *testing.T, x *Index, q []float32, k int) []Hit {
	t.Helper()
	h, err := x.Search(q, k, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// A filter that keeps few vectors widens the search until k are found.
func TestFilteredSearchWidens(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	x := build(t, clustered(r, 3000, 20, 32, 0.5))
	keep := rank.Each(func(id string) bool { return id[len(id)-1] == '3' }) // one in ten
	q := clustered(r, 1, 20, 32, 0.5)[0]
	got, _ := x.Search(q, 10, 0, keep)
	want, _ := x.Exact(q, 10, keep)
	if len(got) != 10 {
		t.Fatalf("filtered search found %d", len(got))
	}
	match := 0
	for i := range got {
		for j := range want {
			if got[i].ID == want[j].ID {
				match++
			}
		}
	}
	if match < 9 {
		t.Fatalf("filtered recall %d/10", match)
	}
}

func TestDimensionChecks(t *testing.T) {
	x := New(4)
	if err := x.Add("a", []float32{1, 2, 3}); !errors.Is(err, ErrDimension) {
		t.Fatalf("add: %v", err)
	}
	if err := x.Add("z", []float32{0, 0, 0, 0}); err == nil {
		t.Fatal("a zero vector was accepted")
	}
	if _, err := x.Search([]float32{1}, 1, 0, nil); !errors.Is(err, ErrDimension) {
		t.Fatalf("search: %v", err)
	}
	x.Add("a", []float32{1, 0, 0, 0})
	x.Add("b", []float32{0, 1, 0, 0})
	h, _ := x.ExactAmong([]float32{1, 0.1, 0, 0}, 5, []string{"b", "missing"})
	if len(h) != 1 || h[0].ID != "b" {
		t.Fatalf("exact among: %v", h)
	}
}

func TestSaveLoad(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 6))
	vecs := clustered(r, 800, 8, 16, 0.5)
	x := build(t, vecs)
	x.Delete("v000003")
	path := t.TempDir() + "/p.vec"
	if err := x.Save(path, 42, "hash/64/text-v1"); err != nil {
		t.Fatal(err)
	}
	y, seq, err := Load(path, "hash/64/text-v1")
	if err != nil || seq != 42 || y.Len() != x.Len() {
		t.Fatalf("load: seq %d len %d/%d err %v", seq, y.Len(), x.Len(), err)
	}
	for _, q := range clustered(r, 20, 8, 16, 0.5) {
		a, _ := x.Search(q, 10, 0, nil)
		b, _ := y.Search(q, 10, 0, nil)
		for i := range a {
			if a[i] != b[i] {
				t.Fatalf("loaded index answers differently: %v vs %v", a, b)
			}
		}
	}
	// It keeps working after loading.
	if err := y.Add("new", vecs[0]); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Load(path, "other"); err == nil {
		t.Fatal("a file of another identity was loaded")
	}
	raw, _ := os.ReadFile(path)
	os.WriteFile(path, raw[:len(raw)/2], 0o600)
	if _, _, err := Load(path, "hash/64/text-v1"); err == nil {
		t.Fatal("a truncated file was loaded")
	}
}

// Vectors are kept in blocks of vecBlock: every slot reads back its own
// vector across block boundaries, after a save and load, after new adds to
// a loaded index and after a compaction.
func TestVectorBlocks(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	n := 2*vecBlock + 10
	vecs := make([][]float32, n)
	x := New(4)
	for i := range vecs {
		vecs[i] = []float32{float32(i + 1), float32(r.IntN(7) + 1), 1, float32(i%3 + 1)}
		if err := x.Add(fmt.Sprintf("v%06d", i), vecs[i]); err != nil {
			t.Fatal(err)
		}
	}
	check := func(what string, x *Index) {
		t.Helper()
		for i, v := range vecs {
			id := fmt.Sprintf("v%06d", i)
			s, ok := x.slot[id]
			if !ok {
				continue // deleted below
			}
			want, _ := normalise(v)
			if !slices.Equal(x.vec(s), want) {
				t.Fatalf("%s: %s reads %v, want %v", what, id, x.vec(s), want)
			}
		}
	}
	check("added", x)
	path := filepath.Join(t.TempDir(), "v.vec")
	if err := x.Save(path, 1, "id"); err != nil {
		t.Fatal(err)
	}
	y, _, err := Load(path, "id")
	if err != nil {
		t.Fatal(err)
	}
	check("loaded", y)
	for i := range 3 {
		v := []float32{1, 2, 3, float32(i + 1)}
		vecs = append(vecs, v)
		if err := y.Add(fmt.Sprintf("v%06d", len(vecs)-1), v); err != nil {
			t.Fatal(err)
		}
	}
	check("added after loading", y)
	for i := 0; i < len(vecs); i += 3 {
		y.Delete(fmt.Sprintf("v%06d", i))
	}
	y.Compact()
	check("compacted", y)
	if y.Len() != len(vecs)-(len(vecs)+2)/3 {
		t.Fatalf("len %d after compaction", y.Len())
	}
}
