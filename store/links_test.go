package store_test

import (
	"context"
	"fmt"
	"sort"
	"testing"

	"github.com/loci-dev/loci/store"
)

// linksOf is every similar_to link of a drawer, both sides.
func linksOf(t *testing.T, db store.DB, id string) []store.Link {
	t.Helper()
	var out []store.Link
	err := db.View(context.Background(), func(r store.Reader) error {
		var err error
		out, err = r.Links(id)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestSimilarLinksBoundedPerDrawer: many near-identical drawers in one room
// give every drawer at most store.MaxLinksPerDrawer similar_to links, both
// sides counted (issue 38: 20,000 near-identical files made 199,945 links,
// the first drawers linked from thousands of later ones), and the links a
// drawer keeps are its closest: a later, closer copy displaces the weakest.
func TestSimilarLinksBoundedPerDrawer(t *testing.T) {
	db := open(t)
	const n = 120
	base := "the nightly build of the payments service compiled every package and ran the suites"
	var ids []string
	for i := range n {
		res := must(t, db, drawer(fmt.Sprintf("%s, report number %04d", base, i)))
		ids = append(ids, res.Drawer.ID)
	}
	total := 0
	for _, id := range ids {
		ls := linksOf(t, db, id)
		if len(ls) > store.MaxLinksPerDrawer {
			t.Fatalf("drawer %s has %d similar_to links, more than %d", id, len(ls), store.MaxLinksPerDrawer)
		}
		total += len(ls)
	}
	if total == 0 {
		t.Fatal("no similar_to links at all: the drawers are near duplicates")
	}
	var counts store.Counts
	db.View(context.Background(), func(r store.Reader) error {
		var err error
		counts, err = r.Counts()
		return err
	})
	if counts.Links*2 != total {
		t.Fatalf("status counts %d links, the drawers hold %d ends", counts.Links, total)
	}

	// A drawer whose links are full takes a closer one: an exact
	// normalised copy (similarity 1) of the first drawer displaces its
	// weakest near link, and the first drawer keeps its closest ones.
	first := ids[0]
	before := linksOf(t, db, first)
	if len(before) != store.MaxLinksPerDrawer {
		t.Fatalf("the first drawer has %d links, want it full (%d)", len(before), store.MaxLinksPerDrawer)
	}
	res := must(t, db, drawer(fmt.Sprintf("%s; REPORT NUMBER %04d!", base, 0)))
	after := linksOf(t, db, first)
	if len(after) != store.MaxLinksPerDrawer {
		t.Fatalf("after a closer copy the first drawer has %d links, want %d", len(after), store.MaxLinksPerDrawer)
	}
	found := false
	for _, l := range after {
		if l.Newer == res.Drawer.ID {
			found = true
		}
	}
	if !found {
		t.Fatalf("the closer copy %s was not linked to the full first drawer: %+v", res.Drawer.ID, after)
	}
	sims := func(ls []store.Link) []float64 {
		var s []float64
		for _, l := range ls {
			s = append(s, l.Signals.Similarity)
		}
		sort.Float64s(s)
		return s
	}
	b, a := sims(before), sims(after)
	if a[0] < b[0] {
		t.Fatalf("the weakest link kept (%v) is weaker than before (%v)", a[0], b[0])
	}
	// The displaced link is gone from both its ends and from the counts.
	for _, id := range ids {
		if ls := linksOf(t, db, id); len(ls) > store.MaxLinksPerDrawer {
			t.Fatalf("drawer %s has %d links", id, len(ls))
		}
	}
}
