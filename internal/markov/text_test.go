package markov

import (
	"math/rand/v2"
	"testing"
)

func TestSentencesAreUnique(t *testing.T) {
	tx := NewText()
	r := rand.New(rand.NewPCG(1, 1))
	seen := map[string]bool{}
	for range 1000 {
		s := tx.Sentence(r)
		if seen[s] || len(s) < 20 {
			t.Fatalf("repeated or short sentence %q", s)
		}
		seen[s] = true
	}
	t.Log(tx.Sentence(r))
}
