package postgres_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/loci-dev/loci/store"
	"github.com/loci-dev/loci/store/dedup"
	"github.com/loci-dev/loci/store/postgres/pgtest"
)

// dedupRecord is the record of text in scope, as a drawer write makes it.
func dedupRecord(id, scope, text string) *store.DedupRecord {
	norm := dedup.Normalize(text)
	sk := dedup.MakeSketch(norm)
	return &store.DedupRecord{DrawerID: id, Scope: scope, Hash: dedup.Hash(text), Fingerprint: dedup.Fingerprint(norm),
		NormLen: len([]rune(norm)), Bands: sk.Bands, Mins: sk.Mins, Distinct: sk.Distinct, Bag: sk.Bag, Norm: norm}
}

func near(t testing.TB, db store.DB, write bool, scope string, bands [][8]byte, lo, hi int) []string {
	t.Helper()
	var ids []string
	visit := func(r store.Reader) error {
		return r.DedupNear(scope, bands, lo, hi, func(c store.NearCandidate) { ids = append(ids, c.DrawerID()) })
	}
	if write {
		mustUpdate(t, db, func(tx store.Tx) error { return visit(tx) })
	} else {
		mustView(t, db, visit)
	}
	slices.Sort(ids)
	return ids
}

// Exact and normalised copies list oldest first, in the scope asked only;
// a near candidate carries what the rules filter by (its length, the low
// bytes of its minimums, its bag) and is visited once however many bands
// it shares, by a read as by a write, within the length window only; the
// sketch reads back; a record written again replaces its bands; deleting
// it removes it from every list. The record itself reads back without
// its sketch, as Badger keeps it.
func TestDedupDirect(t *testing.T) {
	db := open(t, pgtest.Database(t))
	defer db.Close()
	text := "The deploy queue stalls when the index rebuild runs overnight on the staging cluster"
	ids := []string{uuid.NewString(), uuid.NewString(), uuid.NewString()}
	a := dedupRecord(ids[2], "room1", text)
	b := dedupRecord(ids[0], "room1", text)
	c := dedupRecord(ids[1], "room1", "the DEPLOY queue stalls, when the index rebuild runs overnight on the staging cluster")
	other := dedupRecord(uuid.NewString(), "room2", text)
	mustUpdate(t, db, func(tx store.Tx) error {
		for _, r := range []*store.DedupRecord{a, b, c, other} {
			if err := tx.PutDedup(r); err != nil {
				return err
			}
		}
		return nil
	})
	mustView(t, db, func(r store.Reader) error {
		if got, err := r.DedupByHash("room1", a.Hash); err != nil || !slices.Equal(got, []string{a.DrawerID, b.DrawerID}) {
			return fmt.Errorf("by hash, oldest first: %v %v", got, err)
		}
		if got, err := r.DedupByFingerprint("room1", a.Fingerprint); err != nil || !slices.Equal(got, []string{a.DrawerID, b.DrawerID, c.DrawerID}) {
			return fmt.Errorf("by fingerprint, oldest first: %v %v", got, err)
		}
		rec, err := r.DedupRecord(a.DrawerID)
		want := store.DedupRecord{DrawerID: a.DrawerID, Scope: a.Scope, Hash: a.Hash, Fingerprint: a.Fingerprint, NormLen: a.NormLen, Distinct: a.Distinct}
		if err != nil || rec == nil || fmt.Sprint(*rec) != fmt.Sprint(want) {
			return fmt.Errorf("record: %+v %v", rec, err)
		}
		if rec, err := r.DedupRecord(uuid.NewString()); err != nil || rec != nil {
			return fmt.Errorf("record of a drawer without one: %+v %v", rec, err)
		}
		mins, norm, err := r.DedupSketch(c.DrawerID)
		if err != nil || !slices.Equal(mins, c.Mins) || norm != c.Norm {
			return fmt.Errorf("sketch: %v %q %v", mins, norm, err)
		}
		if mins, norm, err := r.DedupSketch(uuid.NewString()); err != nil || mins != nil || norm != "" {
			return fmt.Errorf("sketch of a drawer without one: %v %q %v", mins, norm, err)
		}
		var cands []store.NearCandidate
		err = r.DedupNear("room1", a.Bands, 0, 1<<30, func(c store.NearCandidate) { cands = append(cands, c) })
		if err != nil || len(cands) != 3 {
			return fmt.Errorf("near candidates, each once: %+v %v", cands, err)
		}
		for _, cand := range cands {
			if cand.DrawerID() != a.DrawerID {
				continue
			}
			if cand.NormLen != a.NormLen || !slices.Equal(cand.Mins, dedup.Low(a.Mins)) || !slices.Equal(cand.Bag, a.Bag[:]) {
				return fmt.Errorf("candidate %+v, want length %d, low minimums %v, bag %v", cand, a.NormLen, dedup.Low(a.Mins), a.Bag)
			}
		}
		return nil
	})
	all := []string{a.DrawerID, b.DrawerID, c.DrawerID}
	slices.Sort(all)
	for _, write := range []bool{false, true} {
		if got := near(t, db, write, "room1", a.Bands, 0, 1<<30); !slices.Equal(got, all) {
			t.Fatalf("near (write %v): %v, want %v", write, got, all)
		}
		if got := near(t, db, write, "room1", a.Bands, a.NormLen+1, 1<<30); len(got) != 0 {
			t.Fatalf("near above the window (write %v): %v", write, got)
		}
		if got := near(t, db, write, "room1", a.Bands, a.NormLen, a.NormLen); !slices.Equal(got, all) {
			t.Fatalf("near at the window's edges (write %v): %v", write, got)
		}
		if got := near(t, db, write, "room1", a.Bands[:1], 0, 1<<30); !slices.Equal(got, all) {
			t.Fatalf("near by one band (write %v): %v", write, got)
		}
		if got := near(t, db, write, "room3", a.Bands, 0, 1<<30); len(got) != 0 {
			t.Fatalf("near in another scope (write %v): %v", write, got)
		}
	}
	// A write sees its own writes; a record written again has its new
	// bands only.
	moved := dedupRecord(c.DrawerID, "room1", "something else entirely, about lamps and kettles and the hall")
	mustUpdate(t, db, func(tx store.Tx) error {
		if err := tx.PutDedup(moved); err != nil {
			return err
		}
		var got []string
		if err := tx.DedupNear("room1", moved.Bands, 0, 1<<30, func(c store.NearCandidate) { got = append(got, c.DrawerID()) }); err != nil {
			return err
		}
		if !slices.Equal(got, []string{c.DrawerID}) {
			return fmt.Errorf("a write's own record: %v", got)
		}
		return nil
	})
	ab := []string{a.DrawerID, b.DrawerID}
	slices.Sort(ab)
	if got := near(t, db, false, "room1", a.Bands, 0, 1<<30); !slices.Equal(got, ab) {
		t.Fatalf("near after a record was written again: %v, want %v", got, ab)
	}
	mustUpdate(t, db, func(tx store.Tx) error { return tx.DeleteDedup(a) })
	mustView(t, db, func(r store.Reader) error {
		if got, err := r.DedupByHash("room1", a.Hash); err != nil || !slices.Equal(got, []string{b.DrawerID}) {
			return fmt.Errorf("by hash after a delete: %v %v", got, err)
		}
		if rec, err := r.DedupRecord(a.DrawerID); err != nil || rec != nil {
			return fmt.Errorf("a deleted record: %+v %v", rec, err)
		}
		if mins, _, err := r.DedupSketch(a.DrawerID); err != nil || mins != nil {
			return fmt.Errorf("a deleted sketch: %v %v", mins, err)
		}
		return nil
	})
	if got := near(t, db, true, "room1", a.Bands, 0, 1<<30); !slices.Equal(got, []string{b.DrawerID}) {
		t.Fatalf("near after a delete: %v", got)
	}
	if got := near(t, db, false, "room2", a.Bands, 0, 1<<30); !slices.Equal(got, []string{other.DrawerID}) {
		t.Fatalf("another scope's drawer: %v", got)
	}
	var rows int
	if err := db.Pool().QueryRow(context.Background(), "SELECT (SELECT count(*) FROM dedup_bands WHERE drawer = $1) + (SELECT count(*) FROM dedup_near WHERE drawer = $1)",
		a.DrawerID).Scan(&rows); err != nil || rows != 0 {
		t.Fatalf("a deleted record left %d band or near rows (%v)", rows, err)
	}
	// Written again without a sketch, a record leaves the near index.
	plain := dedupRecord(b.DrawerID, "room1", text)
	plain.Bands, plain.Mins = nil, nil
	mustUpdate(t, db, func(tx store.Tx) error { return tx.PutDedup(plain) })
	if got := near(t, db, false, "room1", a.Bands, 0, 1<<30); len(got) != 0 {
		t.Fatalf("a record written again without a sketch is a candidate: %v", got)
	}
	if err := db.Pool().QueryRow(context.Background(), "SELECT (SELECT count(*) FROM dedup_bands WHERE drawer = $1) + (SELECT count(*) FROM dedup_near WHERE drawer = $1)",
		b.DrawerID).Scan(&rows); err != nil || rows != 0 {
		t.Fatalf("a record written again without a sketch left %d band or near rows (%v)", rows, err)
	}
}

// A record without a whole sketch, or whose drawer id is not a UUID, has
// exact and normalised keys but no near entry; a band shared by more than
// 512 drawers of a scope is not read (as Badger caps it), the others are.
func TestDedupNearEdges(t *testing.T) {
	db := open(t, pgtest.Database(t))
	defer db.Close()
	text := "a short note about the boiler pressure dropping overnight"
	plain := dedupRecord(uuid.NewString(), "s", text)
	plain.Bands, plain.Mins = nil, nil
	odd := dedupRecord("not-a-uuid", "s", text)
	mustUpdate(t, db, func(tx store.Tx) error {
		if err := tx.PutDedup(plain); err != nil {
			return err
		}
		return tx.PutDedup(odd)
	})
	mustView(t, db, func(r store.Reader) error {
		if got, err := r.DedupByHash("s", plain.Hash); err != nil || len(got) != 2 {
			return fmt.Errorf("by hash: %v %v", got, err)
		}
		if mins, _, err := r.DedupSketch(plain.DrawerID); err != nil || mins != nil {
			return fmt.Errorf("sketch of a record without one: %v %v", mins, err)
		}
		return nil
	})
	if got := near(t, db, true, "s", odd.Bands, 0, 1<<30); len(got) != 0 {
		t.Fatalf("records without a near entry are candidates: %v", got)
	}
	mustUpdate(t, db, func(tx store.Tx) error { return tx.DeleteDedup(odd) })

	// 513 drawers share band 0 (a hot band); each has its own other bands.
	hot := dedupRecord(uuid.NewString(), "hot", text)
	var recs []*store.DedupRecord
	for i := range 513 {
		r := dedupRecord(uuid.NewString(), "hot", fmt.Sprintf("%s number %d", text, i))
		r.Bands = make([][8]byte, dedup.Bands)
		r.Bands[0] = hot.Bands[0]
		for j := 1; j < dedup.Bands; j++ {
			binary.BigEndian.PutUint64(r.Bands[j][:], uint64(i)<<32|uint64(j)) // its own
		}
		recs = append(recs, r)
	}
	put := func(rs []*store.DedupRecord) {
		mustUpdate(t, db, func(tx store.Tx) error {
			for _, r := range rs {
				if err := tx.PutDedup(r); err != nil {
					return err
				}
			}
			return nil
		})
	}
	put(recs[:512])
	if got := near(t, db, true, "hot", hot.Bands[:1], 0, 1<<30); len(got) != 512 {
		t.Fatalf("a band of 512 drawers gave %d candidates, want all 512", len(got))
	}
	put(recs[512:])
	if got := near(t, db, true, "hot", hot.Bands[:1], 0, 1<<30); len(got) != 0 {
		t.Fatalf("a band of 513 drawers was read: %d candidates", len(got))
	}
	if got := near(t, db, false, "hot", recs[7].Bands, 0, 1<<30); !slices.Equal(got, []string{recs[7].DrawerID}) {
		t.Fatalf("the other bands of a drawer with a hot band: %v, want [%s]", got, recs[7].DrawerID)
	}
}

// Links read back by id and from both drawers, by id; LinkEnds rank them
// with their kind, similarity and time (nanoseconds kept); the kept count
// of links moves only when a link comes or goes: writing one again or
// deleting one that is gone leaves it, and each write moves Writes.
func TestLinksDirect(t *testing.T) {
	db := open(t, pgtest.Database(t))
	defer db.Close()
	older, newer, third := uuid.NewString(), uuid.NewString(), uuid.NewString()
	at := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	l1 := store.Link{ID: "22222222-2222-4222-8222-222222222222", Older: older, Newer: newer, Kind: dedup.Near,
		Signals: dedup.Signals{Similarity: 0.93, Threshold: 0.9}, CreatedAt: at}
	l2 := store.Link{ID: "11111111-1111-4111-8111-111111111111", Older: older, Newer: third, Kind: dedup.Exact,
		Signals: dedup.Signals{SameHash: true, SameFingerprint: true, Similarity: 1, Threshold: 0.9}, CreatedAt: at.Add(time.Nanosecond)}
	links := func() int {
		var c store.Counts
		mustView(t, db, func(r store.Reader) error { var err error; c, err = r.Counts(); return err })
		return c.Links
	}
	write := func(fn func(store.Tx) error) {
		mustUpdate(t, db, func(tx store.Tx) error {
			before := tx.Writes()
			if err := fn(tx); err != nil {
				return err
			}
			if tx.Writes() <= before {
				return fmt.Errorf("a link write did not move Writes")
			}
			return nil
		})
	}
	write(func(tx store.Tx) error { return tx.PutLink(&l1) })
	write(func(tx store.Tx) error { return tx.PutLink(&l2) })
	write(func(tx store.Tx) error { return tx.PutLink(&l1) }) // again: not a new link
	if n := links(); n != 2 {
		t.Fatalf("kept count of links %d, want 2", n)
	}
	mustView(t, db, func(r store.Reader) error {
		ls, err := r.Links(older)
		if err != nil || len(ls) != 2 || ls[0] != l2 || ls[1] != l1 {
			return fmt.Errorf("links of the older drawer, by id: %+v %v", ls, err)
		}
		if ls, err := r.Links(third); err != nil || len(ls) != 1 || ls[0] != l2 {
			return fmt.Errorf("links of the third drawer: %+v %v", ls, err)
		}
		ends, err := r.LinkEnds(older)
		want := []store.LinkEnd{{ID: l2.ID, Kind: dedup.Exact, Similarity: 1, CreatedAt: l2.CreatedAt},
			{ID: l1.ID, Kind: dedup.Near, Similarity: 0.93, CreatedAt: at}}
		if err != nil || !slices.Equal(ends, want) {
			return fmt.Errorf("link ends %+v %v, want %+v", ends, err, want)
		}
		if ends, err := r.LinkEnds(uuid.NewString()); err != nil || len(ends) != 0 {
			return fmt.Errorf("link ends of a drawer without links: %+v %v", ends, err)
		}
		if l, err := r.Link(l1.ID); err != nil || l == nil || *l != l1 {
			return fmt.Errorf("link by id: %+v %v", l, err)
		}
		return nil
	})
	write(func(tx store.Tx) error { return tx.DeleteLink(&l1) })
	write(func(tx store.Tx) error { return tx.DeleteLink(&l1) }) // gone: the count stays
	if n := links(); n != 1 {
		t.Fatalf("kept count of links after a delete %d, want 1", n)
	}
	// A failed transaction's link writes leave no count behind.
	err := db.Update(context.Background(), func(tx store.Tx) error {
		if err := tx.DeleteLink(&l2); err != nil {
			return err
		}
		return fmt.Errorf("undo")
	})
	if err == nil || links() != 1 {
		t.Fatalf("a failed delete moved the count: %v, %d links", err, links())
	}
	mustView(t, db, func(r store.Reader) error {
		if l, err := r.Link(l1.ID); err != nil || l != nil {
			return fmt.Errorf("a deleted link: %+v %v", l, err)
		}
		if ls, err := r.Links(newer); err != nil || len(ls) != 0 {
			return fmt.Errorf("a deleted link listed: %+v %v", ls, err)
		}
		return nil
	})
}
