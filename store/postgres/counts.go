package postgres

import "github.com/loci-dev/loci/store"

// The palace's counts are kept, not recounted (status answers at once at
// any size): one row (schema/02_counts.sql). A write method that adds or
// removes a counted record (wing, room, drawer current or stored, link)
// adds the difference with addCounts; Update adds the transaction's sum to
// the row in the same commit. The writer lock makes that row's updates
// serial across daemons.

// addCounts adds what a write changes to the transaction's counts.
func (t *tx) addCounts(c store.Counts) {
	t.counted = sumCounts(t.counted, c)
}

func sumCounts(a, b store.Counts) store.Counts {
	return store.Counts{Wings: a.Wings + b.Wings, Rooms: a.Rooms + b.Rooms, Drawers: a.Drawers + b.Drawers,
		DrawersStored: a.DrawersStored + b.DrawersStored, Links: a.Links + b.Links}
}

// Counts is the palace's kept counts as of this transaction (its own
// writes included).
func (t *tx) Counts() (store.Counts, error) {
	var c store.Counts
	if _, err := t.row("SELECT wings, rooms, drawers, drawers_stored, links FROM palace_counts WHERE id = 1", nil,
		&c.Wings, &c.Rooms, &c.Drawers, &c.DrawersStored, &c.Links); err != nil {
		return c, err
	}
	return sumCounts(c, t.counted), nil
}

// keepCounts writes the transaction's counts into the row (Update, before
// the commit).
func (t *tx) keepCounts() error {
	c := t.counted
	if c == (store.Counts{}) {
		return nil
	}
	_, err := t.q.Exec(t.ctx, `UPDATE palace_counts SET wings = wings + $1, rooms = rooms + $2, drawers = drawers + $3,
		drawers_stored = drawers_stored + $4, links = links + $5 WHERE id = 1`, c.Wings, c.Rooms, c.Drawers, c.DrawersStored, c.Links)
	return t.check(err)
}
