package store

import (
	"math"
	"time"

	"github.com/loci-dev/loci/fault"
)

// Removed counts what a delete removed.
type Removed struct {
	Wings   int
	Rooms   int
	Drawers int
}

// DeleteDrawer removes a drawer with its dedup record and similar_to links
// (deleting the newer drawer undoes its dedup call). A supersession chain
// through it is spliced so history stays walkable. A mined chunk of a
// document's last revision marks the document to be filed again by the
// next mine.
func DeleteDrawer(tx Tx, d *Drawer) error {
	if rec, err := tx.DedupRecord(d.ID); err != nil {
		return err
	} else if rec != nil {
		if err := tx.DeleteDedup(rec); err != nil {
			return err
		}
	}
	links, err := tx.Links(d.ID)
	if err != nil {
		return err
	}
	for i := range links {
		if err := tx.DeleteLink(&links[i]); err != nil {
			return err
		}
		if err := tx.Log(ChangeLink, ActionDeleted, links[i].ID); err != nil {
			return err
		}
	}
	if err := splice(tx, d); err != nil {
		return err
	}
	if err := forgetChunk(tx, d.ID); err != nil {
		return err
	}
	if err := tx.DeleteDrawer(d); err != nil {
		return err
	}
	return tx.Log(ChangeDrawer, ActionDeleted, d.ID)
}

// splice joins a deleted drawer's predecessor and successor.
func splice(tx Tx, d *Drawer) error {
	var prev, next *Drawer
	var err error
	if d.Supersedes != "" {
		if prev, err = tx.Drawer(d.Supersedes); err != nil {
			return err
		}
	}
	if d.SupersededBy != "" {
		if next, err = tx.Drawer(d.SupersededBy); err != nil {
			return err
		}
	}
	if prev != nil {
		old := *prev
		prev.SupersededBy = ""
		if next != nil {
			prev.SupersededBy = next.ID
		}
		if err := tx.PutDrawer(prev, &old); err != nil {
			return err
		}
		if err := tx.Log(ChangeDrawer, ActionUpdated, prev.ID); err != nil {
			return err
		}
	}
	if next != nil {
		old := *next
		next.Supersedes = ""
		if prev != nil {
			next.Supersedes = prev.ID
		}
		if err := tx.PutDrawer(next, &old); err != nil {
			return err
		}
		return tx.Log(ChangeDrawer, ActionUpdated, next.ID)
	}
	return nil
}

// DeleteBatch bounds the drawers one transaction of a big delete removes:
// a room of tens of thousands of drawers (a mined tree) does not fit in one.
const DeleteBatch = 1000

// DeleteSomeDrawers removes up to limit drawers of a room (the room stays)
// and reports how many it removed and whether any are left. A big room is
// emptied by calling it in one transaction after another, then DeleteRoom.
func DeleteSomeDrawers(tx Tx, rm *Room, limit int) (removed int, more bool, err error) {
	var ds []*Drawer
	if err := tx.Drawers(rm.ID, false, func(d *Drawer) bool {
		if len(ds) == limit {
			more = true
			return false
		}
		ds = append(ds, d)
		return true
	}); err != nil {
		return 0, false, err
	}
	for _, d := range ds {
		// Reload: splicing an earlier drawer may have changed this one.
		cur, err := tx.Drawer(d.ID)
		if err != nil {
			return 0, false, err
		}
		if cur == nil {
			continue
		}
		if err := DeleteDrawer(tx, cur); err != nil {
			return 0, false, err
		}
		removed++
	}
	return removed, more, nil
}

// DeleteRoom removes a room and every drawer in it.
func DeleteRoom(tx Tx, rm *Room) (Removed, error) {
	var ds []*Drawer
	if err := tx.Drawers(rm.ID, false, func(d *Drawer) bool { ds = append(ds, d); return true }); err != nil {
		return Removed{}, err
	}
	for _, d := range ds {
		// Reload: splicing an earlier drawer may have changed this one.
		cur, err := tx.Drawer(d.ID)
		if err != nil {
			return Removed{}, err
		}
		if cur == nil {
			continue
		}
		if err := DeleteDrawer(tx, cur); err != nil {
			return Removed{}, err
		}
	}
	if err := tx.DeleteRoom(rm); err != nil {
		return Removed{}, err
	}
	return Removed{Rooms: 1, Drawers: len(ds)}, tx.Log(ChangeRoom, ActionDeleted, rm.ID)
}

// DeleteWing removes a wing with its rooms and drawers, and what mining
// kept for it (ForgetSomeMined).
func DeleteWing(tx Tx, w *Wing) (Removed, error) {
	rooms, err := tx.Rooms(w.ID)
	if err != nil {
		return Removed{}, err
	}
	total := Removed{Wings: 1}
	for i := range rooms {
		n, err := DeleteRoom(tx, &rooms[i])
		if err != nil {
			return Removed{}, err
		}
		total.Rooms += n.Rooms
		total.Drawers += n.Drawers
	}
	if _, _, err := ForgetSomeMined(tx, w.ID, math.MaxInt); err != nil {
		return Removed{}, err
	}
	if err := tx.DeleteWing(w); err != nil {
		return Removed{}, err
	}
	return total, tx.Log(ChangeWing, ActionDeleted, w.ID)
}

// SimilarView is a similar_to link as read from one drawer's side.
type SimilarView struct {
	Drawer     string
	Side       string
	Kind       string
	Similarity float64
	Signals    any
	CreatedAt  string
	LinkID     string
}

// LinkTime is how a similar_to link's created_at is shown: RFC 3339 in UTC
// with nanoseconds, trailing zeros trimmed (as every other time the API
// shows). The duplicates list once padded it to nine digits while a write's
// answer trimmed it.
func LinkTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// Similar lists a drawer's similar_to links as read from its side: side
// "older" when the drawer asked about resembles that older one, "newer"
// when that drawer was written later.
func Similar(r Reader, d *Drawer) ([]SimilarView, error) {
	links, err := r.Links(d.ID)
	if err != nil {
		return nil, err
	}
	out := make([]SimilarView, 0, len(links))
	for _, l := range links {
		v := SimilarView{Kind: string(l.Kind), Similarity: l.Signals.Similarity, Signals: l.Signals,
			CreatedAt: LinkTime(l.CreatedAt), LinkID: l.ID}
		if l.Newer == d.ID {
			v.Drawer, v.Side = l.Older, "older"
		} else {
			v.Drawer, v.Side = l.Newer, "newer"
		}
		out = append(out, v)
	}
	return out, nil
}

// DeleteSimilar removes one similar_to link of a drawer, undoing that
// dedup call.
func DeleteSimilar(tx Tx, d *Drawer, linkRef string) error {
	links, err := tx.Links(d.ID)
	if err != nil {
		return err
	}
	for i := range links {
		l := &links[i]
		if l.ID == linkRef || l.Older == linkRef || l.Newer == linkRef && l.Older == d.ID {
			if err := tx.DeleteLink(l); err != nil {
				return err
			}
			return tx.Log(ChangeLink, ActionDeleted, l.ID)
		}
	}
	return fault.Newf(fault.PalaceDrawerNotFound, "the drawer's duplicates ("+d.ID+") list its links",
		"drawer %s has no similar_to link %q", d.ID, linkRef)
}
