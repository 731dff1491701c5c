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

// strongerLink reports whether a is a closer match than b: a stronger kind,
// then a higher similarity.
func strongerLink(a, b *Link) bool {
	if ra, rb := linkRank[a.Kind], linkRank[b.Kind]; ra != rb {
		return ra < rb
	}
	return a.Signals.Similarity > b.Signals.Similarity
}

// weakestLink is the index of the weakest of links (the newest of equals).
func weakestLink(links []Link) int {
	w := 0
	for i := 1; i < len(links); i++ {
		if strongerLink(&links[w], &links[i]) || (!strongerLink(&links[i], &links[w]) && links[i].CreatedAt.After(links[w].CreatedAt)) {
			w = i
		}
	}
	return w
}

// admitLinks chooses among cands, the links a drawer would make, strongest
// first, each to the drawer other(l), the ones it records: at most room,
// each to a drawer with fewer than MaxLinksPerDrawer links or whose weakest
// is weaker than it; that weakest link is deleted (and the deletion logged)
// to make room.
func admitLinks(tx Tx, cands []Link, room int, other func(*Link) string) ([]Link, error) {
	var out []Link
	for i := range cands {
		if len(out) >= room {
			break
		}
		c := &cands[i]
		have, err := tx.Links(other(c))
		if err != nil {
			return nil, err
		}
		if len(have) >= MaxLinksPerDrawer {
			w := weakestLink(have)
			if !strongerLink(c, &have[w]) {
				continue
			}
			if err := tx.DeleteLink(&have[w]); err != nil {
				return nil, err
			}
			if err := tx.Log(ChangeLink, ActionDeleted, have[w].ID); err != nil {
				return nil, err
			}
		}
		out = append(out, *c)
	}
	return out, nil
}

// olderEnd is the end of a write's candidate link that is not the new drawer.
func olderEnd(l *Link) string { return l.Older }
