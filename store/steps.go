package store

import (
	"context"
	"slices"
)

// Steps is the ordered, immutable list of numbered data steps. Never
// change a released step; add a new one.
func Steps() []Step {
	return []Step{
		{N: 1, Name: "diary requested_by", Run: stepDiaryRequestedBy},
		{N: 2, Name: "pair supersession links", Run: stepPairSupersession},
		{N: 3, Name: "derive dedup keys", Run: stepDedupKeys},
		{N: 4, Name: "mining state per source and wing", Run: stepMiningPerWing},
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

// Step 4: mining's state was kept per source (src/<source>, sd/<source>/…,
// each document's state naming its wing); it is now per source and wing
// (TargetKey). Each document's state moves to its wing's state, with its
// chunks' owners (a document whose drawers were deleted is marked to be
// filed again); documents of a wing that no longer exists are forgotten.
// The cursor goes to the wing when every document is filed in one wing
// (the usual case: nothing is read again); when the documents are spread
// over wings (a source mined into several), each wing's state starts
// without a cursor, so that its next mine reads everything once and
// duplicates nothing. A run cut short resumes: the new states are written
// first, and kept when found; the old record goes last.
func stepMiningPerWing(ctx context.Context, db DB) error {
	var legacy []*SourceState
	err := db.View(ctx, func(r Reader) error {
		return r.Sources(func(s *SourceState) bool {
			if s.WingID == "" {
				legacy = append(legacy, s)
			}
			return true
		})
	})
	if err != nil {
		return err
	}
	for _, old := range legacy {
		var ids []string
		wings := map[string]bool{}
		per := map[string]int{}
		err := db.View(ctx, func(r Reader) error {
			var docs []*DocumentState
			if err := r.SourceDocuments(old.Key, func(d *DocumentState) bool { docs = append(docs, d); return true }); err != nil {
				return err
			}
			for _, d := range docs {
				ids = append(ids, d.ID)
				per[d.WingID]++
				if _, seen := wings[d.WingID]; seen || d.WingID == "" {
					continue
				}
				w, err := r.Wing(d.WingID)
				if err != nil {
					return err
				}
				wings[d.WingID] = w != nil
			}
			return nil
		})
		if err != nil {
			return err
		}
		var alive []string
		for w, ok := range wings {
			if ok {
				alive = append(alive, w)
			}
		}
		if err := db.Update(ctx, func(tx Tx) error {
			for _, w := range alive {
				key := TargetKey(old.Key, w)
				have, err := tx.Source(key)
				if err != nil {
					return err
				}
				if have != nil {
					continue // written by a run cut short
				}
				st := &SourceState{Key: key, Identity: old.Identity, WingID: w, Documents: per[w], LastJob: old.LastJob, LastRun: old.LastRun}
				if len(wings) == 1 {
					st.Cursor = old.Cursor
				}
				if err := tx.PutSource(st); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			return err
		}
		err = applyInChunks(ctx, db, ids, func(tx Tx, id string) error {
			d, err := tx.SourceDocument(old.Key, id)
			if err != nil || d == nil {
				return err
			}
			if err := tx.DeleteSourceDocument(old.Key, id); err != nil {
				return err
			}
			if !wings[d.WingID] {
				return nil
			}
			d.Source = TargetKey(old.Key, d.WingID)
			drawers := make([]string, len(d.Chunks))
			for i, c := range d.Chunks {
				drawers[i] = c.Drawer
				if err := tx.PutChunkOwner(c.Drawer, d.Source, d.ID); err != nil {
					return err
				}
			}
			// Drawers deleted before this step: the next mine files the
			// document again.
			ds, err := tx.DrawersByID(drawers)
			if err != nil {
				return err
			}
			if slices.Contains(ds, nil) {
				if err := tx.PutStaleDocument(d.Source, d.ID); err != nil {
					return err
				}
			}
			return tx.PutSourceDocument(d)
		})
		if err != nil {
			return err
		}
		if err := db.Update(ctx, func(tx Tx) error { return tx.DeleteSource(old.Key) }); err != nil {
			return err
		}
	}
	return nil
}
