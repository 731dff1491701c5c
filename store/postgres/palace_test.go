package postgres

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/loci-dev/loci/store"
	"github.com/loci-dev/loci/store/postgres/pgtest"
)

// The palace and vector families on their own (the conformance suite
// reaches them through the store's rules, which need every family):
// orders at nanosecond ties, pages, reads inside a scan's callback, kept
// counts, vectors bit for bit, and every read an index scan.

var bg = context.Background()

func openPalace(t testing.TB) *DB {
	t.Helper()
	db, err := Open(bg, store.OpenOptions{Location: pgtest.Database(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	if _, err := db.Migrator(nil).Run(bg); err != nil {
		t.Fatal(err)
	}
	return db
}

func mustUpdate(t testing.TB, db *DB, fn func(store.Tx) error) {
	t.Helper()
	if err := db.Update(bg, fn); err != nil {
		t.Fatal(err)
	}
}

func mustView(t testing.TB, db *DB, fn func(store.Reader) error) {
	t.Helper()
	if err := db.View(bg, fn); err != nil {
		t.Fatal(err)
	}
}

// fixture is a wing, a room and drawers filed in it.
type fixture struct {
	wing *store.Wing
	room *store.Room
}

func newFixture(t testing.TB, db *DB, wing, room string) fixture {
	t.Helper()
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f := fixture{wing: &store.Wing{ID: store.NewID(), Name: wing, CreatedAt: at}}
	f.room = &store.Room{ID: store.NewID(), WingID: f.wing.ID, Name: room, CreatedAt: at}
	mustUpdate(t, db, func(tx store.Tx) error {
		if err := tx.PutWing(f.wing); err != nil {
			return err
		}
		return tx.PutRoom(f.room)
	})
	return f
}

func (f fixture) drawer(name string, at time.Time) *store.Drawer {
	return &store.Drawer{ID: store.NewID(), WingID: f.wing.ID, RoomID: f.room.ID, Name: name, Content: "content of " + name,
		Source: store.Source{Kind: store.KindManual}, ValidFrom: at, CreatedAt: at}
}

// checkCounts fails when the kept counts are not a recount (or want).
func checkCounts(t *testing.T, db *DB, step string, want store.Counts) {
	t.Helper()
	mustView(t, db, func(r store.Reader) error {
		kept, err := r.Counts()
		if err != nil {
			return err
		}
		re, err := r.Recount()
		if err != nil {
			return err
		}
		if kept != re || kept != want {
			t.Errorf("%s: kept %+v, recount %+v, want %+v", step, kept, re, want)
		}
		return nil
	})
}

func ids(ds []*store.Drawer) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.ID
	}
	return out
}

// newestFirst sorts drawers as a room lists them: by filing time in
// nanoseconds, then id, descending.
func newestFirst(ds []*store.Drawer) []*store.Drawer {
	out := slices.Clone(ds)
	slices.SortFunc(out, func(a, b *store.Drawer) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(b.ID, a.ID)
	})
	return out
}

// Drawers list newest first to the nanosecond (ties by id) across pages,
// with or without the closed ones, from any cursor on; a callback may read
// the transaction again; names, counts and ids follow each write.
func TestPalaceOrdersPagesAndNames(t *testing.T) {
	db := openPalace(t)
	f := newFixture(t, db, "w", "r")
	other := newFixture(t, db, "w2", "r")
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var all []*store.Drawer
	mustUpdate(t, db, func(tx store.Tx) error {
		for i := range 400 {
			// Groups of three share a nanosecond; groups a nanosecond
			// apart (a microsecond clock would tie them all), filed in
			// the reverse of their ids' order (ids grow with time).
			d := f.drawer(fmt.Sprintf("d%d", i), base.Add(time.Duration((399-i)/3)))
			if i%5 == 0 {
				to := d.CreatedAt.Add(time.Hour)
				d.ValidTo = &to
			}
			all = append(all, d)
			if err := tx.PutDrawer(d, nil); err != nil {
				return err
			}
		}
		return tx.PutDrawer(other.drawer("elsewhere", base), nil)
	})
	want := newestFirst(all)
	var wantCur []*store.Drawer
	for _, d := range want {
		if d.Current() {
			wantCur = append(wantCur, d)
		}
	}
	mustView(t, db, func(r store.Reader) error {
		for _, current := range []bool{false, true} {
			var got []*store.Drawer
			if err := r.Drawers(f.room.ID, current, func(d *store.Drawer) bool {
				// A read inside the callback: the scan holds no statement open.
				again, err := r.Drawer(d.ID)
				if err != nil || again == nil || again.Content != d.Content {
					t.Fatalf("a read inside the scan: %+v %v", again, err)
				}
				got = append(got, d)
				return true
			}); err != nil {
				return err
			}
			w := want
			if current {
				w = wantCur
			}
			if !slices.Equal(ids(got), ids(w)) {
				t.Errorf("Drawers(current %v): %d drawers, not newest first to the nanosecond", current, len(got))
			}
			// Every cursor gives the rest of the list.
			for _, k := range []int{0, 1, 2, 63, 64, 65, 200, len(w) - 1} {
				var rest []*store.Drawer
				if err := r.DrawersBefore(f.room.ID, current, w[k].CreatedAt, w[k].ID, func(d *store.Drawer) bool {
					rest = append(rest, d)
					return true
				}); err != nil {
					return err
				}
				if !slices.Equal(ids(rest), ids(w[k+1:])) {
					t.Errorf("DrawersBefore drawer %d (current %v): %d drawers, want %d", k, current, len(rest), len(w)-k-1)
				}
			}
		}
		// Stopping early stops.
		n := 0
		if err := r.Drawers(f.room.ID, false, func(*store.Drawer) bool { n++; return n < 70 }); err != nil || n != 70 {
			t.Errorf("a scan stopped at 70 visited %d (%v)", n, err)
		}
		got, err := r.DrawerIDs(f.room.ID)
		if err != nil || !slices.Equal(got, ids(reversed(want))) {
			t.Errorf("DrawerIDs: %d ids, not oldest first (%v)", len(got), err)
		}
		cur, stored, err := r.CountDrawers(f.room.ID)
		if err != nil || cur != len(wantCur) || stored != 400 {
			t.Errorf("CountDrawers: %d/%d %v, want %d/400", cur, stored, err, len(wantCur))
		}
		if d, err := r.DrawerByName(f.room.ID, "d1"); err != nil || d == nil || d.ID != all[1].ID || len(d.Tags) != 0 || d.Tags == nil {
			t.Errorf("DrawerByName d1: %+v %v", d, err)
		}
		if d, err := r.DrawerByName(f.room.ID, "d0"); err != nil || d != nil {
			t.Errorf("a closed drawer holds its name: %+v %v", d, err)
		}
		if d, err := r.DrawerByName(other.room.ID, "d1"); err != nil || d != nil {
			t.Errorf("another room's name: %+v %v", d, err)
		}
		many, err := r.DrawersByID([]string{all[7].ID, "nope", all[7].ID, all[0].ID})
		if err != nil || many[0] == nil || many[0].ID != all[7].ID || many[1] != nil || many[2] == nil || many[2] == many[0] || many[3].ID != all[0].ID {
			t.Errorf("DrawersByID: %v %v", many, err)
		}
		ok, err := r.HasDrawer(all[3].ID)
		if !ok || err != nil {
			t.Errorf("HasDrawer: %v %v", ok, err)
		}
		return nil
	})
	// A replacement takes the name of the drawer it closes.
	old := all[1]
	repl := f.drawer("d1", base.Add(time.Hour))
	mustUpdate(t, db, func(tx store.Tx) error {
		closed := *old
		to := repl.CreatedAt
		closed.ValidTo, closed.SupersededBy = &to, repl.ID
		if err := tx.PutDrawer(&closed, old); err != nil {
			return err
		}
		if d, err := tx.DrawerByName(f.room.ID, "d1"); err != nil || d != nil {
			return fmt.Errorf("a closed drawer still holds its name in its transaction: %+v %v", d, err)
		}
		return tx.PutDrawer(repl, nil)
	})
	mustView(t, db, func(r store.Reader) error {
		if d, err := r.DrawerByName(f.room.ID, "d1"); err != nil || d == nil || d.ID != repl.ID {
			t.Errorf("the replacement does not hold the name: %+v %v", d, err)
		}
		return nil
	})
}

// The kept counts are a recount after every write: new, written again,
// closed, reopened, deleted (with an unknown one), rooms and wings.
func TestPalaceKeptCounts(t *testing.T) {
	db := openPalace(t)
	checkCounts(t, db, "empty", store.Counts{})
	f := newFixture(t, db, "w", "r")
	checkCounts(t, db, "a wing and a room", store.Counts{Wings: 1, Rooms: 1})
	at := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	a, b := f.drawer("a", at), f.drawer("", at.Add(time.Second))
	mustUpdate(t, db, func(tx store.Tx) error {
		for _, fn := range []func() error{
			func() error { return tx.PutWing(f.wing) }, // again: no new wing
			func() error { return tx.PutRoom(f.room) },
			func() error { return tx.PutDrawer(a, nil) },
			func() error { return tx.PutDrawer(b, nil) },
			func() error { return tx.PutDrawer(a, a) }, // again: no new drawer
		} {
			if err := fn(); err != nil {
				return err
			}
		}
		c, err := tx.Counts()
		if err == nil && c != (store.Counts{Wings: 1, Rooms: 1, Drawers: 2, DrawersStored: 2}) {
			err = fmt.Errorf("counts inside the transaction: %+v", c)
		}
		return err
	})
	checkCounts(t, db, "two drawers", store.Counts{Wings: 1, Rooms: 1, Drawers: 2, DrawersStored: 2})
	closed := *a
	to := at.Add(time.Minute)
	closed.ValidTo = &to
	mustUpdate(t, db, func(tx store.Tx) error { return tx.PutDrawer(&closed, a) })
	checkCounts(t, db, "one closed", store.Counts{Wings: 1, Rooms: 1, Drawers: 1, DrawersStored: 2})
	mustUpdate(t, db, func(tx store.Tx) error { return tx.PutDrawer(&closed, &closed) })
	checkCounts(t, db, "a closed one written again", store.Counts{Wings: 1, Rooms: 1, Drawers: 1, DrawersStored: 2})
	mustUpdate(t, db, func(tx store.Tx) error { return tx.PutDrawer(a, &closed) })
	checkCounts(t, db, "reopened", store.Counts{Wings: 1, Rooms: 1, Drawers: 2, DrawersStored: 2})
	mustUpdate(t, db, func(tx store.Tx) error {
		if err := tx.PutDrawer(&closed, a); err != nil {
			return err
		}
		if err := tx.DeleteDrawer(&closed); err != nil {
			return err
		}
		return tx.DeleteDrawer(f.drawer("never stored", at)) // nothing to count
	})
	checkCounts(t, db, "the closed one deleted", store.Counts{Wings: 1, Rooms: 1, Drawers: 1, DrawersStored: 1})
	// A failed transaction adds nothing.
	boom := errors.New("boom")
	if err := db.Update(bg, func(tx store.Tx) error {
		if err := tx.PutDrawer(f.drawer("lost", at), nil); err != nil {
			return err
		}
		return boom
	}); err == nil {
		t.Fatal("a failed update committed")
	}
	checkCounts(t, db, "a failed transaction", store.Counts{Wings: 1, Rooms: 1, Drawers: 1, DrawersStored: 1})
	mustUpdate(t, db, func(tx store.Tx) error {
		for _, fn := range []func() error{
			func() error { return tx.DeleteDrawer(b) },
			func() error { return tx.DeleteRoom(f.room) },
			func() error { return tx.DeleteRoom(f.room) }, // gone already
			func() error { return tx.DeleteWing(f.wing) },
			func() error { return tx.DeleteWing(f.wing) },
		} {
			if err := fn(); err != nil {
				return err
			}
		}
		return nil
	})
	checkCounts(t, db, "all deleted", store.Counts{})
	mustView(t, db, func(r store.Reader) error {
		if w, err := r.WingByName("w"); err != nil || w != nil {
			t.Errorf("a deleted wing: %+v %v", w, err)
		}
		if rs, err := r.Rooms(f.wing.ID); err != nil || len(rs) != 0 {
			t.Errorf("a deleted room: %+v %v", rs, err)
		}
		return nil
	})
}

// Wings and rooms list by name (byte order) and read back by id and name.
func TestPalaceWingsAndRooms(t *testing.T) {
	db := openPalace(t)
	for _, name := range []string{"beta", "Alpha", "alpha", "a-b"} {
		newFixture(t, db, name, "r-"+name)
	}
	mustView(t, db, func(r store.Reader) error {
		ws, err := r.Wings()
		if err != nil {
			return err
		}
		var names []string
		for _, w := range ws {
			names = append(names, w.Name)
			if got, err := r.WingByName(w.Name); err != nil || got == nil || got.ID != w.ID {
				t.Errorf("WingByName %s: %+v %v", w.Name, got, err)
			}
			rs, err := r.Rooms(w.ID)
			if err != nil || len(rs) != 1 || rs[0].Name != "r-"+w.Name {
				t.Errorf("Rooms of %s: %+v %v", w.Name, rs, err)
				continue
			}
			if got, err := r.RoomByName(w.ID, rs[0].Name); err != nil || got == nil || got.ID != rs[0].ID {
				t.Errorf("RoomByName: %+v %v", got, err)
			}
			if got, err := r.Room(rs[0].ID); err != nil || got == nil || got.WingID != w.ID {
				t.Errorf("Room: %+v %v", got, err)
			}
		}
		if fmt.Sprint(names) != "[Alpha a-b alpha beta]" {
			t.Errorf("wings in byte order: %v", names)
		}
		return nil
	})
}

// Neighbours and Filed read nanosecond positions: ties are ordered by id,
// a window's bounds are exact.
func TestPalaceNeighboursAndFiled(t *testing.T) {
	db := openPalace(t)
	f := newFixture(t, db, "w", "r")
	g := newFixture(t, db, "w", "s")
	base := time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
	var ds []*store.Drawer
	mustUpdate(t, db, func(tx store.Tx) error {
		for i := range 8 {
			d := f.drawer(fmt.Sprintf("n%d", i), base.Add(time.Duration((7-i)/2))) // pairs tie; time against id order
			ds = append(ds, d)
			if err := tx.PutDrawer(d, nil); err != nil {
				return err
			}
			if err := tx.PutDrawer(g.drawer(fmt.Sprintf("o%d", i), base.Add(time.Duration((7-i)/2))), nil); err != nil {
				return err
			}
		}
		return nil
	})
	order := reversed(newestFirst(ds)) // oldest first
	mustView(t, db, func(r store.Reader) error {
		got, err := r.Neighbours([]*store.Drawer{order[0], order[3], nil, order[7]}, 3)
		if err != nil {
			return err
		}
		want := [][]string{
			{order[1].ID, order[2].ID, order[3].ID},
			{order[2].ID, order[1].ID, order[0].ID, order[4].ID, order[5].ID, order[6].ID},
			nil,
			{order[6].ID, order[5].ID, order[4].ID},
		}
		for i := range want {
			if !slices.Equal(got[i], want[i]) {
				t.Errorf("neighbours %d: %v, want %v", i, got[i], want[i])
			}
		}
		// Four nanosecond steps of one: two drawers each, per room.
		filed, err := r.Filed(base, time.Nanosecond, 5)
		if err != nil || fmt.Sprint(filed) != "[4 4 4 4 0]" {
			t.Errorf("Filed by the nanosecond: %v %v", filed, err)
		}
		filed, err = r.Filed(base.Add(1), 2, 2)
		if err != nil || fmt.Sprint(filed) != "[8 4]" {
			t.Errorf("Filed from the second nanosecond: %v %v", filed, err)
		}
		return nil
	})
}

// Vectors read back bit for bit, a profile's vectors are visited across
// pages in drawer order (a callback may read again), writing one again
// replaces it and is logged, and deleting the drawer deletes its vectors
// in every profile.
func TestVectors(t *testing.T) {
	db := openPalace(t)
	f := newFixture(t, db, "w", "r")
	at := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	odd := []float32{float32(math.Copysign(0, -1)), math.SmallestNonzeroFloat32, math.MaxFloat32, -1.5,
		math.Float32frombits(0x7fc00001), float32(math.Inf(-1))}
	var ds []*store.Drawer
	before := uint64(0)
	mustUpdate(t, db, func(tx store.Tx) error {
		var err error
		if before, err = tx.LastSeq(); err != nil {
			return err
		}
		for i := range 300 {
			d := f.drawer("", at.Add(time.Duration(i)))
			ds = append(ds, d)
			if err := tx.PutDrawer(d, nil); err != nil {
				return err
			}
			if err := tx.PutEmbedding(&store.Embedding{DrawerID: d.ID, Profile: "p", Provider: "hash", Model: "m",
				Dimension: len(odd), Pipeline: "v1", CreatedAt: at, Vector: odd}); err != nil {
				return err
			}
		}
		return tx.PutEmbedding(&store.Embedding{DrawerID: ds[0].ID, Profile: "q", Dimension: 1, CreatedAt: at, Vector: []float32{2}})
	})
	mustView(t, db, func(r store.Reader) error {
		e, err := r.Embedding(ds[5].ID, "p")
		if err != nil || e == nil || e.Model != "m" || e.Pipeline != "v1" || e.Dimension != len(odd) || !e.CreatedAt.Equal(at) {
			t.Fatalf("embedding: %+v %v", e, err)
		}
		for i := range odd {
			if math.Float32bits(e.Vector[i]) != math.Float32bits(odd[i]) {
				t.Errorf("dimension %d: %x, want %x", i, math.Float32bits(e.Vector[i]), math.Float32bits(odd[i]))
			}
		}
		var seen []string
		if err := r.Embeddings("p", func(e *store.Embedding) bool {
			if d, err := r.Drawer(e.DrawerID); err != nil || d == nil {
				t.Fatalf("a read inside the scan: %v %v", d, err)
			}
			seen = append(seen, e.DrawerID)
			return true
		}); err != nil {
			return err
		}
		if len(seen) != 300 || !slices.IsSorted(seen) {
			t.Errorf("Embeddings visited %d, sorted %v", len(seen), slices.IsSorted(seen))
		}
		n := 0
		if err := r.Embeddings("q", func(*store.Embedding) bool { n++; return true }); err != nil || n != 1 {
			t.Errorf("profile q: %d %v", n, err)
		}
		logged := 0
		if err := r.Changes(before, func(c store.Change) bool {
			if c.Kind == store.ChangeEmbedding {
				logged++
			}
			return true
		}); err != nil || logged != 301 {
			t.Errorf("%d vectors logged (%v), want 301", logged, err)
		}
		return nil
	})
	mustUpdate(t, db, func(tx store.Tx) error {
		if err := tx.PutEmbedding(&store.Embedding{DrawerID: ds[0].ID, Profile: "p", Dimension: 2, CreatedAt: at, Vector: []float32{1, 2}}); err != nil {
			return err
		}
		return tx.DeleteDrawer(ds[1])
	})
	mustView(t, db, func(r store.Reader) error {
		if e, err := r.Embedding(ds[0].ID, "p"); err != nil || e == nil || fmt.Sprint(e.Vector) != "[1 2]" {
			t.Errorf("a replaced vector: %+v %v", e, err)
		}
		if e, err := r.Embedding(ds[1].ID, "p"); err != nil || e != nil {
			t.Errorf("a deleted drawer's vector: %+v %v", e, err)
		}
		return nil
	})
	mustUpdate(t, db, func(tx store.Tx) error { return tx.DeleteDrawer(ds[0]) })
	var left int
	if err := db.Pool().QueryRow(bg, "SELECT count(*) FROM embeddings WHERE drawer_id = $1", ds[0].ID).Scan(&left); err != nil || left != 0 {
		t.Errorf("a deleted drawer kept %d vectors (%v)", left, err)
	}
}

// A cancelled view stops Drawers, EachDrawer and Embeddings at the next
// row, not at the end of the page they read.
func TestPalaceScansStopOnCancel(t *testing.T) {
	db := openPalace(t)
	f := newFixture(t, db, "w", "r")
	at := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	mustUpdate(t, db, func(tx store.Tx) error {
		for i := range 200 {
			d := f.drawer("", at.Add(time.Duration(i)))
			if err := tx.PutDrawer(d, nil); err != nil {
				return err
			}
			if err := tx.PutEmbedding(&store.Embedding{DrawerID: d.ID, Profile: "p", Vector: []float32{1}}); err != nil {
				return err
			}
		}
		return nil
	})
	for name, scan := range map[string]func(store.Reader, func() bool) error{
		"Drawers": func(r store.Reader, v func() bool) error {
			return r.Drawers(f.room.ID, false, func(*store.Drawer) bool { return v() })
		},
		"EachDrawer": func(r store.Reader, v func() bool) error {
			return r.EachDrawer(func(*store.Drawer) bool { return v() })
		},
		"Embeddings": func(r store.Reader, v func() bool) error {
			return r.Embeddings("p", func(*store.Embedding) bool { return v() })
		},
	} {
		cancelAt(t, db, name, 5, scan)
	}
}

// cancelAt runs scan in a view whose context ends at the nth row it
// visits; the scan and the view must fail with the context's error, the
// scan having visited n rows.
func cancelAt(t *testing.T, db *DB, name string, n int, scan func(store.Reader, func() bool) error) {
	t.Helper()
	c, cancel := context.WithCancel(bg)
	defer cancel()
	seen := 0
	var scanErr error
	err := db.View(c, func(r store.Reader) error {
		scanErr = scan(r, func() bool {
			if seen++; seen == n {
				cancel()
			}
			return true
		})
		return nil
	})
	if !errors.Is(err, context.Canceled) || !errors.Is(scanErr, context.Canceled) || seen != n {
		t.Errorf("%s: view %v, scan %v after %d rows", name, err, scanErr, seen)
	}
}

// Every read of the two families is an index lookup or range scan on a
// few thousand rows in 20 rooms (a room's whole listing is a small part
// of a palace; a room holding a quarter of it is read whole by a
// sequential scan, the planner's right choice then), with the plan made for the values and the generic
// one (pgx prepares statements; PostgreSQL may switch to a generic plan).
func TestPalaceReadsUseIndexes(t *testing.T) {
	db := openPalace(t)
	var rooms []fixture
	for i := range 20 {
		rooms = append(rooms, newFixture(t, db, fmt.Sprintf("w%d", i), "r"))
	}
	at := time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC)
	var some []string
	mustUpdate(t, db, func(tx store.Tx) error {
		for i := range 4000 {
			d := rooms[i%20].drawer(fmt.Sprintf("d%d", i), at.Add(time.Duration(i)*time.Second))
			if i%50 == 0 {
				some = append(some, d.ID)
			}
			if err := tx.PutDrawer(d, nil); err != nil {
				return err
			}
			if err := tx.PutEmbedding(&store.Embedding{DrawerID: d.ID, Profile: fmt.Sprintf("p%d", i%2), Vector: []float32{1, 2, 3}}); err != nil {
				return err
			}
		}
		return nil
	})
	if _, err := db.Pool().Exec(bg, "ANALYZE wings, rooms, drawers, embeddings"); err != nil {
		t.Fatal(err)
	}
	room, ns := rooms[1].room.ID, at.Add(2000*time.Second).UnixNano()
	reads := []struct {
		name string
		sql  string
		args []any
	}{
		{"Drawer", qDrawer, []any{some[3]}},
		{"DrawersByID", qDrawersByID, []any{some}},
		{"DrawerByName", qDrawerByName, []any{room, "d41"}},
		{"Drawers", qDrawersBefore, []any{room, int64(math.MaxInt64), "", palacePages.first}},
		{"DrawersBefore", qDrawersBefore, []any{room, ns, some[2], palacePages.most}},
		{"current Drawers", qCurrentDrawersBefore, []any{room, ns, some[2], palacePages.first}},
		{"DrawerIDs", qDrawerIDs, []any{room}},
		{"Neighbours", qNeighbours, []any{[]string{room, room}, []int64{ns, ns + 4}, []string{some[0], some[1]}, []int32{0, 1}, 5}},
		{"CountDrawers", qCountDrawers, []any{room}},
		{"Filed", qFiled, []any{ns, int64(time.Minute), ns + int64(10*time.Minute)}},
		{"EachDrawer", qEachDrawer, []any{some[4], palacePages.most}},
		{"Embedding", qEmbedding, []any{"p0", some[0]}},
		{"Embeddings", qEmbeddings, []any{"p1", some[1], palacePages.most}},
	}
	conn, err := db.Pool().Acquire(bg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
		if _, err := conn.Exec(bg, "SET plan_cache_mode = "+mode); err != nil {
			t.Fatal(err)
		}
		for _, q := range reads {
			rows, err := conn.Query(bg, "EXPLAIN "+q.sql, q.args...)
			if err != nil {
				t.Fatalf("%s: %v", q.name, err)
			}
			plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				t.Fatalf("%s: %v", q.name, err)
			}
			text := strings.Join(plan, "\n")
			if strings.Contains(text, "Seq Scan") || !strings.Contains(text, "Index") {
				t.Errorf("%s (%s) is not an index scan:\n%s", q.name, mode, text)
			}
		}
	}
}

func reversed(ds []*store.Drawer) []*store.Drawer {
	out := slices.Clone(ds)
	slices.Reverse(out)
	return out
}

// A scan whose context ends at its very last row fails with the
// context's error too (pages checks the context when a scan ends), for
// every family's paged scan.
func TestPagedScanEndsOnCancel(t *testing.T) {
	db := openPalace(t)
	f := newFixture(t, db, "w", "r")
	at := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	mustUpdate(t, db, func(tx store.Tx) error {
		for i := range 3 {
			d := f.drawer("", at.Add(time.Duration(i)))
			if err := tx.PutDrawer(d, nil); err != nil {
				return err
			}
			if err := tx.PutTriggerState(&store.TriggerState{Name: fmt.Sprintf("t%d", i)}); err != nil {
				return err
			}
		}
		return nil
	})
	for name, scan := range map[string]func(store.Reader, func() bool) error{
		"Drawers": func(r store.Reader, v func() bool) error {
			return r.Drawers(f.room.ID, false, func(*store.Drawer) bool { return v() })
		},
		"TriggerStates": func(r store.Reader, v func() bool) error {
			return r.TriggerStates(func(*store.TriggerState) bool { return v() })
		},
	} {
		cancelAt(t, db, name, 3, scan)
	}
}
