package rank

import (
	"fmt"
	"slices"
	"testing"
)

func TestKeepInOrder(t *testing.T) {
	id := func(i int) string { return fmt.Sprint(i) }
	even := func(calls *[][]string) Keep {
		return func(ids []string) []bool {
			*calls = append(*calls, ids)
			out := make([]bool, len(ids))
			for i, s := range ids {
				var n int
				fmt.Sscan(s, &n)
				out[i] = n%2 == 0
			}
			return out
		}
	}
	for _, c := range []struct {
		name    string
		n, want int
		keep    bool
		pos     []int
		windows []int
	}{
		{"no keep", 10, 3, false, []int{0, 1, 2}, nil},
		{"no keep, fewer than wanted", 2, 5, false, []int{0, 1}, nil},
		{"nothing wanted", 10, 0, true, nil, nil},
		{"no candidates", 0, 3, true, []int{}, nil},
		// 0..3: 0 and 2 kept, then 2 wanted and the window doubles to 8 (4..11): 4 and 6.
		{"refusals widen the window", 20, 4, true, []int{0, 2, 4, 6}, []int{4, 8}},
		{"the last window is what is left", 5, 4, true, []int{0, 2, 4}, []int{4, 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var calls [][]string
			var keep Keep
			if c.keep {
				keep = even(&calls)
			}
			got := KeepInOrder(c.n, c.want, id, keep)
			if !slices.Equal(got, c.pos) && !(len(got) == 0 && len(c.pos) == 0) {
				t.Errorf("positions %v, want %v", got, c.pos)
			}
			var windows []int
			for _, w := range calls {
				windows = append(windows, len(w))
			}
			if !slices.Equal(windows, c.windows) {
				t.Errorf("windows %v, want %v", windows, c.windows)
			}
		})
	}
}
