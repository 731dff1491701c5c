package rank

import (
	"fmt"
	"slices"
	"testing"
)

func TestReachAndOrder(t *testing.T) {
	common := make([]string, ExpandCommon+1)
	for i := range common {
		common[i] = fmt.Sprintf("c%02d", i)
	}
	type got struct {
		id   string
		hops int
		via  []string
	}
	cases := []struct {
		name     string
		entities []Entity
		from     int
		direct   map[string]bool
		want     []got
	}{
		{"fewer hops first, then more entities, then the earlier entity, then id",
			[]Entity{{Name: "Ann", Drawers: []string{"d2", "d1"}}, {Name: "Bob", Drawers: []string{"d1", "d3"}},
				{Name: "Kim", Hops: 1, Drawers: []string{"d4", "d3"}}, {Name: "Lee", Drawers: []string{"d5"}}},
			0, nil,
			[]got{{"d1", 0, []string{"Ann", "Bob"}}, {"d3", 0, []string{"Bob", "Kim"}}, {"d2", 0, []string{"Ann"}}, {"d5", 0, []string{"Lee"}}, {"d4", 1, []string{"Kim"}}}},
		{"the hits themselves are never reached",
			[]Entity{{Name: "Ann", Drawers: []string{"hit", "d1"}}}, 0, map[string]bool{"hit": true},
			[]got{{"d1", 0, []string{"Ann"}}}},
		{"an entity too common connects nothing",
			[]Entity{{Name: "Everyone", Drawers: common}, {Name: "Ann", Drawers: []string{"c01"}}}, 0, nil,
			[]got{{"c01", 0, []string{"Ann"}}}},
		{"only the entities from from",
			[]Entity{{Name: "Ann", Drawers: []string{"d1"}}, {Name: "Kim", Hops: 1, Drawers: []string{"d2"}}}, 1, nil,
			[]got{{"d2", 1, []string{"Kim"}}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			reached := map[string]*Reached{}
			Reach(reached, c.entities, c.from, c.direct)
			list := OrderReached(reached)
			if len(list) != len(c.want) {
				t.Fatalf("reached %d drawers, want %d", len(list), len(c.want))
			}
			for i, w := range c.want {
				if r := list[i]; r.ID != w.id || r.Hops != w.hops || !slices.Equal(r.Via, w.via) {
					t.Fatalf("%d: %+v, want %+v", i, *r, w)
				}
			}
		})
	}
}
