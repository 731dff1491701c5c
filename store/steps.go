package store

import (
	"context"
)

// Steps is the ordered, immutable list of numbered data steps. Never
// change a released step; add a new one.
func Steps() []Step {
	return []Step{
		{N: 1, Name: "diary requested_by", Run: stepDiaryRequestedBy},
		{N: 2, Name: "pair supersession links", Run: stepPairSupersession},
		{N: 3, Name: "derive dedup keys", Run: stepDedupKeys},
	}
}

// eachDrawer visits every drawer of the palace in one read view.
func eachDrawer(ctx context.Context, db DB, fn func(r Reader, d *Drawer) error) error {
	return db.View(ctx, func(r Reader) error {
		wings, err := r.Wings()
		if err != nil {
			return err
		}
		for _, w := range wings {
			rooms, err := r.Rooms(w.ID)
			if err != nil {
				return err
			}
			for _, rm := range rooms {
				var inner error
				err := r.Drawers(rm.ID, false, func(d *Drawer) bool {
					inner = fn(r, d)
					return inner == nil
				})
				if err != nil {
					return err
				}
				if inner != nil {
					return inner
				}
			}
		}
		return nil
	})
}

// applyInChunks writes the fixes found by a scan, a bounded number per
// transaction.
func applyInChunks(ctx context.Context, db DB, ids []string, fix func(tx Tx, id string) error) error {
	const chunk = 500
	for len(ids) > 0 {
		n := min(chunk, len(ids))
		part := ids[:n]
		ids = ids[n:]
		if err := db.Update(ctx, func(tx Tx) error {
			for _, id := range part {
				if err := fix(tx, id); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			return err
		}
	}
	return nil
}

// Step 1: diary drawers written before requested_by existed say unknown.
func stepDiaryRequestedBy(ctx context.Context, db DB) error {
	var ids []string
	err := eachDrawer(ctx, db, func(_ Reader, d *Drawer) error {
		if d.Diary && d.Provenance.RequestedBy == "" {
			ids = append(ids, d.ID)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return applyInChunks(ctx, db, ids, func(tx Tx, id string) error {
		d, err := tx.Drawer(id)
		if err != nil || d == nil {
			return err
		}
		prev := *d
		d.Provenance.RequestedBy = ByUnknown
		return tx.PutDrawer(d, &prev)
	})
}

// Step 2: a superseded drawer without a successor link is paired with the
// one drawer of its room that took over its name at its end of validity.
func stepPairSupersession(ctx context.Context, db DB) error {
	pairs := map[string]string{}
	var order []string
	err := eachDrawer(ctx, db, func(r Reader, d *Drawer) error {
		if d.ValidTo == nil || d.SupersededBy != "" || d.Name == "" {
			return nil
		}
		var found []string
		err := r.Drawers(d.RoomID, false, func(o *Drawer) bool {
			if o.ID != d.ID && o.Name == d.Name && o.Supersedes == "" && o.ValidFrom.Equal(*d.ValidTo) {
				found = append(found, o.ID)
			}
			return true
		})
		if err == nil && len(found) == 1 {
			pairs[d.ID] = found[0]
			order = append(order, d.ID)
		}
		return err
	})
	if err != nil {
		return err
	}
	return applyInChunks(ctx, db, order, func(tx Tx, id string) error {
		old, err := tx.Drawer(id)
		if err != nil || old == nil {
			return err
		}
		next, err := tx.Drawer(pairs[id])
		if err != nil || next == nil || next.Supersedes != "" {
			return err
		}
		po, pn := *old, *next
		old.SupersededBy, next.Supersedes = next.ID, old.ID
		if err := tx.PutDrawer(old, &po); err != nil {
			return err
		}
		return tx.PutDrawer(next, &pn)
	})
}

// Step 3: current drawers without dedup keys get them; nothing is merged
// or linked.
func stepDedupKeys(ctx context.Context, db DB) error {
	var ids []string
	err := eachDrawer(ctx, db, func(r Reader, d *Drawer) error {
		if !d.Current() {
			return nil
		}
		rec, err := r.DedupRecord(d.ID)
		if err == nil && rec == nil {
			ids = append(ids, d.ID)
		}
		return err
	})
	if err != nil {
		return err
	}
	return applyInChunks(ctx, db, ids, func(tx Tx, id string) error {
		d, err := tx.Drawer(id)
		if err != nil || d == nil {
			return err
		}
		return tx.PutDedup(newDedupRecord(d))
	})
}
