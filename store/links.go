package store

import "github.com/loci-dev/loci/store/dedup"

// Similar_to links per drawer. A write links its drawer to its strongest
// matches, at most MaxLinksPerDrawer; each match keeps at most as many too,
// both sides counted, so a room of thousands of near-identical drawers holds
// at most MaxLinksPerDrawer/2 links a drawer instead of every later drawer
// linking to the first ones (issue 38: 20,000 such files made 199,945
// links). A drawer whose links are full takes a new one only when it is
// stronger than its weakest, which is deleted: the links a drawer keeps are
// its closest. A tie keeps the link already there, so a stream of equally
// close copies does not rewrite links at every write.

// linkRank orders the kinds of link, strongest first.
var linkRank = map[dedup.Verdict]int{dedup.Exact: 0, dedup.Normalized: 1, dedup.Near: 2}

// strongerEnd reports whether a is a closer match than b: a stronger
// kind, then a higher similarity.
func strongerEnd(aKind dedup.Verdict, aSim float64, b *LinkEnd) bool {
	if ra, rb := linkRank[aKind], linkRank[b.Kind]; ra != rb {
		return ra < rb
	}
	return aSim > b.Similarity
}

// weakestEnd is the index of the weakest of ends (the newest of equals).
func weakestEnd(ends []LinkEnd) int {
	w := 0
	for i := 1; i < len(ends); i++ {
		a, b := &ends[i], &ends[w]
		if strongerEnd(b.Kind, b.Similarity, a) || (!strongerEnd(a.Kind, a.Similarity, b) && a.CreatedAt.After(b.CreatedAt)) {
			w = i
		}
	}
	return w
}

// admitLinks chooses among cands, the links a drawer would make, strongest
// first, each to the drawer other(l), the ones it records: at most room,
// each to a drawer with fewer than MaxLinksPerDrawer links or whose weakest
// is weaker than it; that weakest link is deleted (and the deletion logged)
// to make room. It looks at the first maxTried candidates only. The other drawers' links are ranked from their link index
// (LinkEnds), not read one by one.
func admitLinks(tx Tx, cands []Link, room int, other func(*Link) string) ([]Link, error) {
	var out []Link
	for i := range cands {
		if len(out) >= room || i >= maxTried {
			break
		}
		c := &cands[i]
		have, err := tx.LinkEnds(other(c))
		if err != nil {
			return nil, err
		}
		if len(have) >= MaxLinksPerDrawer {
			w := weakestEnd(have)
			if !strongerEnd(c.Kind, c.Signals.Similarity, &have[w]) {
				continue
			}
			weak, err := tx.Link(have[w].ID)
			if err != nil {
				return nil, err
			}
			if weak != nil {
				if err := tx.DeleteLink(weak); err != nil {
					return nil, err
				}
				if err := tx.Log(ChangeLink, ActionDeleted, weak.ID); err != nil {
					return nil, err
				}
			}
		}
		out = append(out, *c)
	}
	return out, nil
}

// maxTried bounds the candidates admitLinks looks at for one write: in a
// room of near-identical drawers most are full, and each costs a scan of
// its link index.
const maxTried = 2 * MaxLinksPerDrawer

// olderEnd is the end of a write's candidate link that is not the new drawer.
func olderEnd(l *Link) string { return l.Older }
