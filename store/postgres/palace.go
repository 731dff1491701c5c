package postgres

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/store"
)

// The palace family (schema/10_palace.sql): wings, rooms and drawers, one
// table each. Every read is an index lookup or a range scan of an index:
// by id (primary keys), by name (wings_name, rooms_wing_name,
// drawers_room_name), a room's drawers in filing order (drawers_room_time)
// and every room's drawers in a window of time (drawers_created).
//
// Each write is one statement (a round trip under the writer lock): an
// upsert or a delete that answers, in the same statement, what the kept
// counts need (whether the row was new, whether the drawer was current),
// as the embedded store's writes look up each key's present state.
//
// Scans that call back (Drawers, DrawersBefore, EachDrawer, Embeddings)
// read a page of rows, close it, then visit it: a callback may read the
// same transaction again (one connection answers one statement at a
// time), and a cancelled context stops the visit at the next row.

// The reads' statements (schema_test.go explains each on a few thousand
// rows: an index lookup or range scan, never a sequential scan).
const (
	qDrawer       = "SELECT rec FROM drawers WHERE id = $1"
	qDrawersByID  = "SELECT id, rec FROM drawers WHERE id = ANY($1)"
	qDrawerByName = `SELECT rec FROM drawers WHERE room_id = $1 AND name = $2 AND current AND name <> ''
		ORDER BY created_ns DESC, id DESC LIMIT 1`
	qDrawersBefore = `SELECT created_ns, id, rec FROM drawers WHERE room_id = $1 AND (created_ns, id) < ($2, $3)
		ORDER BY created_ns DESC, id DESC LIMIT $4`
	qCurrentDrawersBefore = `SELECT created_ns, id, rec FROM drawers WHERE room_id = $1 AND (created_ns, id) < ($2, $3) AND current
		ORDER BY created_ns DESC, id DESC LIMIT $4`
	qDrawerIDs  = "SELECT id FROM drawers WHERE room_id = $1 ORDER BY created_ns, id"
	qNeighbours = `SELECT q.i, s.side, s.created_ns, s.id
		FROM unnest($1::text[], $2::bigint[], $3::text[], $4::int[]) AS q(room, ns, id, i)
		CROSS JOIN LATERAL (
			(SELECT 0 AS side, d.created_ns, d.id FROM drawers d
				WHERE d.room_id = q.room AND (d.created_ns, d.id) < (q.ns, q.id)
				ORDER BY d.created_ns DESC, d.id DESC LIMIT $5)
			UNION ALL
			(SELECT 1 AS side, d.created_ns, d.id FROM drawers d
				WHERE d.room_id = q.room AND (d.created_ns, d.id) > (q.ns, q.id)
				ORDER BY d.created_ns, d.id LIMIT $5)
		) s`
	qCountDrawers = "SELECT count(*) FILTER (WHERE current), count(*) FROM drawers WHERE room_id = $1"
	qFiled        = `SELECT (created_ns - $1) / $2, count(*) FROM drawers WHERE created_ns >= $1 AND created_ns < $3 GROUP BY 1`
	qEachDrawer   = "SELECT id, rec FROM drawers WHERE id > $1 ORDER BY id LIMIT $2"
)

// nanos is a time as stored in a created_ns column.
func nanos(at time.Time) int64 { return at.UnixNano() }

// decDrawer decodes a drawers row's rec; tags are never nil (as the
// embedded store answers).
func decDrawer(b []byte) (*store.Drawer, error) {
	d := new(store.Drawer)
	if err := dec(b, d); err != nil {
		return nil, err
	}
	if d.Tags == nil {
		d.Tags = []string{}
	}
	return d, nil
}

// Wing reads a wing by id; nil when unknown.
func (t *tx) Wing(id string) (*store.Wing, error) {
	return get[store.Wing](t, "SELECT rec FROM wings WHERE id = $1", id)
}

// WingByName reads a wing by name; nil when none has it.
func (t *tx) WingByName(name string) (*store.Wing, error) {
	return get[store.Wing](t, "SELECT rec FROM wings WHERE name = $1 ORDER BY id LIMIT 1", name)
}

// Wings lists the wings by name.
func (t *tx) Wings() ([]store.Wing, error) {
	return all[store.Wing](t, "SELECT rec FROM wings ORDER BY name, id")
}

// Room reads a room by id; nil when unknown.
func (t *tx) Room(id string) (*store.Room, error) {
	return get[store.Room](t, "SELECT rec FROM rooms WHERE id = $1", id)
}

// RoomByName reads a wing's room by name; nil when none has it.
func (t *tx) RoomByName(wingID, name string) (*store.Room, error) {
	return get[store.Room](t, "SELECT rec FROM rooms WHERE wing_id = $1 AND name = $2 ORDER BY id LIMIT 1", wingID, name)
}

// Rooms lists a wing's rooms by name.
func (t *tx) Rooms(wingID string) ([]store.Room, error) {
	return all[store.Room](t, "SELECT rec FROM rooms WHERE wing_id = $1 ORDER BY name, id", wingID)
}

// Drawer reads a drawer by id; nil when unknown.
func (t *tx) Drawer(id string) (*store.Drawer, error) {
	return t.drawer(qDrawer, id)
}

// drawer reads the rec of the drawers row a query answers; nil when none.
func (t *tx) drawer(sql string, args ...any) (*store.Drawer, error) {
	var b []byte
	ok, err := t.row(sql, args, &b)
	if err != nil || !ok {
		return nil, err
	}
	return decDrawer(b)
}

// HasDrawer reports whether a drawer is stored (its primary key alone).
func (t *tx) HasDrawer(id string) (bool, error) {
	var one int
	return t.row("SELECT 1 FROM drawers WHERE id = $1", []any{id}, &one)
}

// DrawersByID reads many drawers in one statement (= ANY of the ids, one
// probe of the primary key each): out[i] is ids[i]'s, nil when unknown.
func (t *tx) DrawersByID(ids []string) ([]*store.Drawer, error) {
	out := make([]*store.Drawer, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	recs := make(map[string][]byte, len(ids))
	err := t.rows(qDrawersByID, []any{ids}, func(r pgx.Rows) (bool, error) {
		var id string
		var b []byte
		if err := r.Scan(&id, &b); err != nil {
			return false, t.check(err)
		}
		recs[id] = b
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	for i, id := range ids {
		if b, ok := recs[id]; ok {
			if out[i], err = decDrawer(b); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// DrawerByName is the current drawer holding the name in the room (the
// newest, should two ever hold it).
func (t *tx) DrawerByName(roomID, name string) (*store.Drawer, error) {
	if name == "" {
		return nil, nil
	}
	return t.drawer(qDrawerByName, roomID, name)
}

// Drawers visits the room's drawers newest first (by filing time, then
// id) until fn returns false; with current set, only drawers valid now.
func (t *tx) Drawers(roomID string, current bool, fn func(*store.Drawer) bool) error {
	return t.drawersBefore(roomID, current, math.MaxInt64, "", fn)
}

// DrawersBefore is Drawers from the position after (createdAt, id) on.
func (t *tx) DrawersBefore(roomID string, current bool, createdAt time.Time, id string, fn func(*store.Drawer) bool) error {
	return t.drawersBefore(roomID, current, nanos(createdAt), id, fn)
}

// drawersBefore visits the room's drawers below the position (ns, id),
// newest first, a page at a time (a range scan of drawers_room_time from
// the position down).
func (t *tx) drawersBefore(roomID string, current bool, ns int64, id string, fn func(*store.Drawer) bool) error {
	sql := qDrawersBefore
	if current {
		sql = qCurrentDrawersBefore
	}
	type row struct {
		ns  int64
		id  string
		rec []byte
	}
	return pages(t, palacePages, func(last *row, limit int) (string, []any) {
		if last != nil {
			ns, id = last.ns, last.id
		}
		return sql, []any{roomID, ns, id, limit}
	}, func(x *row) []any { return []any{&x.ns, &x.id, &x.rec} }, func(x *row) (bool, error) {
		return visitDrawer(x.rec, fn)
	})
}

// visitDrawer decodes a drawers row's rec and visits it.
func visitDrawer(rec []byte, fn func(*store.Drawer) bool) (bool, error) {
	d, err := decDrawer(rec)
	if err != nil {
		return false, err
	}
	return fn(d), nil
}

// DrawerIDs lists the ids of the room's stored drawers, oldest first
// (drawers_room_time alone).
func (t *tx) DrawerIDs(roomID string) ([]string, error) {
	return t.strings(qDrawerIDs, roomID)
}

// Neighbours lists, for each drawer, up to n drawers filed just before it
// in its room and up to n just after it, nearest first on each side: one
// statement, two bounded range scans of drawers_room_time a drawer.
func (t *tx) Neighbours(ds []*store.Drawer, n int) ([][]string, error) {
	out := make([][]string, len(ds))
	if len(ds) == 0 || n <= 0 {
		return out, nil
	}
	var rooms, ids []string
	var at []int64
	var idx []int32
	for i, d := range ds {
		if d == nil {
			continue
		}
		rooms, ids, at, idx = append(rooms, d.RoomID), append(ids, d.ID), append(at, nanos(d.CreatedAt)), append(idx, int32(i))
	}
	if len(idx) == 0 {
		return out, nil
	}
	type hit struct {
		ns int64
		id string
	}
	before, after := make([][]hit, len(ds)), make([][]hit, len(ds))
	err := t.rows(qNeighbours, []any{rooms, at, ids, idx, n}, func(r pgx.Rows) (bool, error) {
		var i, side int32
		var h hit
		if err := r.Scan(&i, &side, &h.ns, &h.id); err != nil {
			return false, t.check(err)
		}
		if int(i) < 0 || int(i) >= len(ds) {
			return false, fault.New(fault.ServerFailed, "a neighbour row names no drawer asked for", "report it: this is a bug in loci")
		}
		if side == 0 {
			before[i] = append(before[i], h)
		} else {
			after[i] = append(after[i], h)
		}
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	order := func(a, b hit) int {
		if c := cmp.Compare(a.ns, b.ns); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	}
	for i := range ds {
		// Nearest first: the side before descending, the side after
		// ascending (the statement's order is not relied upon).
		slices.SortFunc(before[i], func(a, b hit) int { return order(b, a) })
		slices.SortFunc(after[i], order)
		for _, h := range before[i] {
			out[i] = append(out[i], h.id)
		}
		for _, h := range after[i] {
			out[i] = append(out[i], h.id)
		}
	}
	return out, nil
}

// CountDrawers counts the room's current and stored drawers
// (drawers_room_time alone: current is included in it).
func (t *tx) CountDrawers(roomID string) (current, stored int, err error) {
	var c, s int64
	_, err = t.row(qCountDrawers, []any{roomID}, &c, &s)
	return int(c), int(s), err
}

// Filed counts the stored drawers filed in each of buckets spans of step
// from since on, every room: a range scan of drawers_created over the
// window only.
func (t *tx) Filed(since time.Time, step time.Duration, buckets int) ([]int, error) {
	out := make([]int, max(buckets, 0))
	if buckets <= 0 || step <= 0 {
		return out, nil
	}
	from, end := since.UnixNano(), since.Add(step*time.Duration(buckets)).UnixNano()
	err := t.rows(qFiled,
		[]any{from, int64(step), end}, func(r pgx.Rows) (bool, error) {
			var b, n int64
			if err := r.Scan(&b, &n); err != nil {
				return false, t.check(err)
			}
			if b >= 0 && b < int64(len(out)) {
				out[b] += int(n)
			}
			return true, nil
		})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// linksTable is the similarity links' table (the dedup family's, one row
// a link): Recount counts it once it exists.
const linksTable = "links"

// Recount counts the palace's rows: what the kept counts must equal.
func (t *tx) Recount() (store.Counts, error) {
	var w, r, cur, stored int64
	if _, err := t.row(`SELECT (SELECT count(*) FROM wings), (SELECT count(*) FROM rooms),
		(SELECT count(*) FILTER (WHERE current) FROM drawers), (SELECT count(*) FROM drawers)`, nil, &w, &r, &cur, &stored); err != nil {
		return store.Counts{}, err
	}
	c := store.Counts{Wings: int(w), Rooms: int(r), Drawers: int(cur), DrawersStored: int(stored)}
	var exists bool
	if _, err := t.row("SELECT to_regclass($1) IS NOT NULL", []any{linksTable}, &exists); err != nil {
		return store.Counts{}, err
	}
	if exists {
		var l int64
		if _, err := t.row("SELECT count(*) FROM "+linksTable, nil, &l); err != nil {
			return store.Counts{}, err
		}
		c.Links = int(l)
	}
	return c, nil
}

// EachDrawer visits every stored drawer by id, a page at a time, until fn
// returns false.
func (t *tx) EachDrawer(fn func(*store.Drawer) bool) error {
	return pages(t, palacePages, func(last *idRec, limit int) (string, []any) {
		return qEachDrawer, []any{lastID(last), limit}
	}, (*idRec).dest, func(x *idRec) (bool, error) { return visitDrawer(x.rec, fn) })
}

// Writes.

// PutWing writes a wing (one upsert, answering whether it was new).
func (t *tx) PutWing(w *store.Wing) error {
	rec, err := enc(w)
	if err != nil {
		return err
	}
	return t.putCounted(`INSERT INTO wings(id, name, rec) VALUES ($1, $2, $3)
		ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name, rec = EXCLUDED.rec RETURNING xmax = 0`,
		[]any{w.ID, w.Name, rec}, store.Counts{Wings: 1})
}

// DeleteWing removes a wing's row (store.DeleteWing removes its rooms).
func (t *tx) DeleteWing(w *store.Wing) error {
	return t.deleteCounted("wings", w.ID, func(n int) store.Counts { return store.Counts{Wings: -n} })
}

// PutRoom writes a room (one upsert, answering whether it was new).
func (t *tx) PutRoom(r *store.Room) error {
	rec, err := enc(r)
	if err != nil {
		return err
	}
	return t.putCounted(`INSERT INTO rooms(id, wing_id, name, rec) VALUES ($1, $2, $3, $4)
		ON CONFLICT (id) DO UPDATE SET wing_id = EXCLUDED.wing_id, name = EXCLUDED.name, rec = EXCLUDED.rec RETURNING xmax = 0`,
		[]any{r.ID, r.WingID, r.Name, rec}, store.Counts{Rooms: 1})
}

// DeleteRoom removes a room's row (store.DeleteRoom removes its drawers).
func (t *tx) DeleteRoom(r *store.Room) error {
	return t.deleteCounted("rooms", r.ID, func(n int) store.Counts { return store.Counts{Rooms: -n} })
}

// PutDrawer writes a drawer: one statement upserts it and answers whether
// it was stored and current before, which the kept counts need. Its name
// and time "indexes" are its columns: a drawer that is no longer current
// no longer holds its name, a replacement holds it as soon as it is
// written (prev is not needed: the row's previous state is read in the
// statement).
func (t *tx) PutDrawer(d *store.Drawer, prev *store.Drawer) error {
	rec, err := enc(d)
	if err != nil {
		return err
	}
	var existed, wasCurrent bool
	if _, err := t.rowWritten(`WITH old AS (SELECT current FROM drawers WHERE id = $1),
		put AS (INSERT INTO drawers(id, wing_id, room_id, name, created_ns, current, rec) VALUES ($1, $2, $3, $4, $5, $6, $7)
			ON CONFLICT (id) DO UPDATE SET wing_id = EXCLUDED.wing_id, room_id = EXCLUDED.room_id, name = EXCLUDED.name,
				created_ns = EXCLUDED.created_ns, current = EXCLUDED.current, rec = EXCLUDED.rec RETURNING 1)
		SELECT EXISTS (SELECT 1 FROM old), coalesce((SELECT current FROM old), false)`,
		[]any{d.ID, d.WingID, d.RoomID, d.Name, nanos(d.CreatedAt), d.Current(), rec}, &existed, &wasCurrent); err != nil {
		return err
	}
	var c store.Counts
	if !existed {
		c.DrawersStored++
	}
	if wasCurrent {
		c.Drawers--
	}
	if d.Current() {
		c.Drawers++
	}
	t.addCounts(c)
	return nil
}

// DeleteDrawer removes a drawer and its vectors in one statement.
func (t *tx) DeleteDrawer(d *store.Drawer) error {
	var stored, current int64
	if _, err := t.rowWritten(`WITH vectors AS (DELETE FROM embeddings WHERE drawer_id = $1),
		gone AS (DELETE FROM drawers WHERE id = $1 RETURNING current)
		SELECT count(*), count(*) FILTER (WHERE current) FROM gone`, []any{d.ID}, &stored, &current); err != nil {
		return err
	}
	t.addCounts(store.Counts{DrawersStored: -int(stored), Drawers: -int(current)})
	return nil
}
