// Package markov generates realistic, unique text for loci's benchmarks
// and load tests: a word-bigram Markov chain trained on the Cranfield
// abstracts of ../shared/bench (natural word and letter statistics, never
// the same sentence twice), or random-letter words when the corpus is
// absent.
package markov

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
)

// Text generates sentences.
type Text struct {
	next  map[string][]string
	start []string
}

// NewText trains on the Cranfield corpus found by walking up from the
// working directory to shared/bench, or falls back to random words.
func NewText() *Text {
	t := &Text{next: map[string][]string{}}
	if raw, err := os.ReadFile(findCorpus()); err == nil {
		var prev string
		for _, w := range strings.Fields(string(raw)) {
			if strings.HasPrefix(w, ".") && len(w) == 2 { // SMART field markers
				prev = ""
				continue
			}
			if prev == "" {
				t.start = append(t.start, w)
			} else {
				t.next[prev] = append(t.next[prev], w)
			}
			prev = w
			if w == "." {
				prev = ""
			}
		}
	}
	return t
}

func findCorpus() string {
	dir, _ := os.Getwd()
	for range 6 {
		p := filepath.Join(dir, "..", "shared", "bench", "cranfield", "cran.all.1400")
		if _, err := os.Stat(p); err == nil {
			return p
		}
		dir = filepath.Dir(dir)
	}
	return ""
}

// Sentence is 12 to 40 words, ending with a unique number so that no two
// sentences are byte-identical.
func (t *Text) Sentence(r *rand.Rand) string {
	n := 12 + r.IntN(29)
	words := make([]string, 0, n)
	w := ""
	for len(words) < n {
		switch {
		case len(t.start) == 0:
			b := make([]byte, 2+r.IntN(8))
			for k := range b {
				b[k] = byte('a' + r.IntN(26))
			}
			w = string(b)
		case w == "" || len(t.next[w]) == 0:
			w = t.start[r.IntN(len(t.start))]
		default:
			cand := t.next[w]
			w = cand[r.IntN(len(cand))]
		}
		words = append(words, w)
	}
	return strings.Join(words, " ") + fmt.Sprintf(" [%d]", r.Uint64())
}
