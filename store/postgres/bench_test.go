package postgres

import (
	"fmt"
	"testing"
	"time"

	"github.com/loci-dev/loci/store"
)

// benchPalace is a palace of n drawers in 10 rooms, filed in one
// transaction; it answers the fixture and the drawers' ids.
func benchPalace(b *testing.B, n int) (*DB, fixture, []string) {
	b.Helper()
	db := openPalace(b)
	var rooms []fixture
	for i := range 10 {
		rooms = append(rooms, newFixture(b, db, fmt.Sprintf("w%d", i), "r"))
	}
	at := time.Date(2026, 8, 1, 0, 0, 0, 0, time.UTC)
	ids := make([]string, 0, n)
	mustUpdate(b, db, func(tx store.Tx) error {
		for i := range n {
			d := rooms[i%10].drawer("", at.Add(time.Duration(i)*time.Millisecond))
			d.Content = fmt.Sprintf("drawer %d: %s", i, benchText)
			ids = append(ids, d.ID)
			if err := tx.PutDrawer(d, nil); err != nil {
				return err
			}
		}
		return nil
	})
	if _, err := db.Pool().Exec(bg, "ANALYZE wings, rooms, drawers"); err != nil {
		b.Fatal(err)
	}
	return db, rooms[0], ids
}

const benchText = "a note of about two hundred bytes, as an agent files them: what was decided, why, " +
	"and what to look at next time; the deploy queue stalls on fridays when the index rebuild runs."

// BenchmarkDrawerWrite: one Update filing one new drawer (the writer
// lock, the upsert, the kept counts, the commit) at 10,000 drawers.
func BenchmarkDrawerWrite(b *testing.B) {
	db, f, _ := benchPalace(b, 10000)
	at := time.Date(2026, 9, 1, 0, 0, 0, 0, time.UTC)
	b.ResetTimer()
	for i := range b.N {
		d := f.drawer("", at.Add(time.Duration(i)))
		d.Content = benchText
		if err := db.Update(bg, func(tx store.Tx) error { return tx.PutDrawer(d, nil) }); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDrawersByID50: one View reading 50 drawers by id (a search's
// candidates) at 10,000 drawers.
func BenchmarkDrawersByID50(b *testing.B) {
	db, _, ids := benchPalace(b, 10000)
	b.ResetTimer()
	for i := range b.N {
		start := (i * 50) % (len(ids) - 50)
		want := ids[start : start+50]
		if err := db.View(bg, func(r store.Reader) error {
			ds, err := r.DrawersByID(want)
			if err == nil && (len(ds) != 50 || ds[49] == nil) {
				err = fmt.Errorf("read %d drawers", len(ds))
			}
			return err
		}); err != nil {
			b.Fatal(err)
		}
	}
}
