package rank

import (
	"slices"
	"testing"
)

// dfOf is a palace of n drawers with these document frequencies.
func dfOf(n uint64, df map[string]uint64) func([]string) (uint64, []uint64) {
	return func(words []string) (uint64, []uint64) {
		out := make([]uint64, len(words))
		for i, w := range words {
			out[i] = df[w]
		}
		return n, out
	}
}

func TestFeedbackTerms(t *testing.T) {
	df := dfOf(100, map[string]uint64{"harbour": 5, "ferry": 5, "dawn": 50, "rare": 1, "boat": 5})
	cases := []struct {
		name  string
		own   []string
		docs  []FeedbackDoc
		top   float64
		terms int
		want  []string
	}{
		{"the words of the best drawers by share, frequency and rarity",
			nil, []FeedbackDoc{{Score: 2, Words: []string{"harbour", "harbour", "dawn"}}, {Score: 1, Words: []string{"ferry", "dawn"}}},
			2, 3, []string{"harbour", "ferry", "dawn"}},
		{"at most terms",
			nil, []FeedbackDoc{{Score: 2, Words: []string{"harbour", "harbour", "dawn"}}, {Score: 1, Words: []string{"ferry", "dawn"}}},
			2, 1, []string{"harbour"}},
		{"the query's own words, short words and a word of one drawer are left out",
			[]string{"harbour"}, []FeedbackDoc{{Score: 1, Words: []string{"harbour", "ox", "rare", "ferry"}}}, 1, 5, []string{"ferry"}},
		{"ties by word",
			nil, []FeedbackDoc{{Score: 1, Words: []string{"harbour", "ferry", "boat"}}}, 1, 5, []string{"boat", "ferry", "harbour"}},
		{"no best score: no terms", nil, []FeedbackDoc{{Score: 1, Words: []string{"harbour"}}}, 0, 5, nil},
		{"no terms asked", nil, []FeedbackDoc{{Score: 1, Words: []string{"harbour"}}}, 1, 0, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := FeedbackTerms(c.own, c.docs, c.top, df, c.terms); !slices.Equal(got, c.want) {
				t.Fatalf("terms %v, want %v", got, c.want)
			}
		})
	}
}

func TestAddFeedback(t *testing.T) {
	cases := []struct {
		name   string
		lex    []Item
		more   []Item
		weight float64
		depth  int
		want   []Item
	}{
		{"scaled to the first query's best and added",
			[]Item{{"a", 10}, {"b", 6}}, []Item{{"b", 4}, {"c", 2}}, 0.5, 10,
			[]Item{{"b", 11}, {"a", 10}, {"c", 2.5}}},
		{"the order follows the sums, ties by id",
			[]Item{{"a", 4}, {"b", 2}}, []Item{{"b", 2}, {"a", 0}}, 1, 10,
			[]Item{{"b", 6}, {"a", 4}}},
		{"at most depth", []Item{{"a", 4}, {"b", 2}}, []Item{{"c", 8}, {"b", 2}}, 1.5, 1, []Item{{"c", 6}}},
		{"nothing more: the first list", []Item{{"a", 4}}, nil, 1, 10, []Item{{"a", 4}}},
		{"no first list: nothing", nil, []Item{{"a", 4}}, 1, 10, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := AddFeedback(c.lex, c.more, c.weight, c.depth)
			if len(got) != len(c.want) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
			for i := range got {
				if got[i].ID != c.want[i].ID || !near(got[i].Score, c.want[i].Score) {
					t.Fatalf("got %v, want %v", got, c.want)
				}
			}
		})
	}
}
