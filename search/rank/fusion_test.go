package rank

import (
	"math"
	"slices"
	"testing"
)

func items(ids ...string) []Item {
	out := make([]Item, len(ids))
	for i, id := range ids {
		out[i] = Item{ID: id, Score: float64(len(ids) - i)}
	}
	return out
}

func TestRRF(t *testing.T) {
	for _, c := range []struct {
		name  string
		legs  [][]Item
		order []string
		ranks map[string][]int
	}{
		{"one leg keeps its order", [][]Item{items("a", "b", "c")}, []string{"a", "b", "c"},
			map[string][]int{"b": {2}}},
		{"found by both beats found by one", [][]Item{items("a", "b"), items("b", "c")}, []string{"b", "a", "c"},
			map[string][]int{"b": {2, 1}, "a": {1, 0}, "c": {0, 2}}},
		{"equal sums tie by id", [][]Item{items("y", "x"), items("x", "y")}, []string{"x", "y"},
			map[string][]int{"x": {2, 1}, "y": {1, 2}}},
		{"a leg's first places weigh alike", [][]Item{items("a"), items("b")}, []string{"a", "b"}, nil},
		{"an empty leg changes nothing", [][]Item{items("a", "b"), nil}, []string{"a", "b"},
			map[string][]int{"a": {1, 0}}},
		{"an id listed twice by a leg counts once, at its best rank", [][]Item{items("a", "b", "a")}, []string{"a", "b"},
			map[string][]int{"a": {1}}},
		{"no legs", nil, []string{}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := RRF(K, c.legs...)
			ids := []string{}
			for _, f := range got {
				ids = append(ids, f.ID)
			}
			if !slices.Equal(ids, c.order) {
				t.Errorf("order %v, want %v", ids, c.order)
			}
			for _, f := range got {
				if want, ok := c.ranks[f.ID]; ok && !slices.Equal(f.Ranks, want) {
					t.Errorf("ranks of %s %v, want %v", f.ID, f.Ranks, want)
				}
				var sum float64
				for _, r := range f.Ranks {
					if r > 0 {
						sum += 1 / float64(K+r)
					}
				}
				if math.Abs(sum-f.Score) > 1e-12 {
					t.Errorf("score of %s %v, want %v", f.ID, f.Score, sum)
				}
			}
		})
	}
}

func TestSingle(t *testing.T) {
	got := Single([]Item{{"b", 3}, {"a", 5}, {"b", 1}})
	if len(got) != 2 || got[0].ID != "b" || got[0].Score != 3 || got[1].ID != "a" || got[1].Ranks[0] != 2 {
		t.Fatalf("Single kept %+v, want b (3, rank 1) then a (rank 2)", got)
	}
}
