package sqlview_test

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loci-dev/loci/dbadmin/sqlview"
	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/store"
)

var allTables = []string{"aliases", "documents", "drawers", "entities", "entity_links", "jobs", "mentions", "relationship_links",
	"relationships", "rooms", "similar", "sources", "triggers", "wings"}

// Every table is offered, described and readable, its columns as
// Tables() says, with a record of every family of a filled palace.
func TestTablesReadEveryFamily(t *testing.T) {
	e := sqlview.New(filled(t, 4), defaults())
	var names []string
	for _, tb := range e.Tables() {
		names = append(names, tb.Name)
		if tb.Doc == "" || len(tb.Columns) == 0 || len(tb.Indexed) == 0 {
			t.Errorf("%s: doc %q, %d columns, indexed %v", tb.Name, tb.Doc, len(tb.Columns), tb.Indexed)
		}
		for _, c := range tb.Columns {
			if c.Doc == "" || c.Type == "" {
				t.Errorf("%s.%s: type %q doc %q", tb.Name, c.Name, c.Type, c.Doc)
			}
		}
		for _, ix := range tb.Indexed {
			if !slices.ContainsFunc(tb.Columns, func(c sqlview.Column) bool { return c.Name == ix }) {
				t.Errorf("%s: indexed %s is no column", tb.Name, ix)
			}
		}
		r := one(t, e, "SELECT * FROM "+tb.Name, nil)
		if len(r.Rows) == 0 {
			t.Errorf("%s: no rows on a palace with every family", tb.Name)
		}
		if len(r.Columns) != len(tb.Columns) {
			t.Fatalf("%s: %d columns, Tables says %d", tb.Name, len(r.Columns), len(tb.Columns))
		}
		for i, c := range r.Columns {
			if c.Name != tb.Columns[i].Name || c.Type != tb.Columns[i].Type {
				t.Errorf("%s: column %d is %+v, Tables says %+v", tb.Name, i, c, tb.Columns[i])
			}
		}
		d := one(t, e, "DESCRIBE "+tb.Name, nil)
		if len(d.Rows) != len(tb.Columns) {
			t.Errorf("DESCRIBE %s: %d rows", tb.Name, len(d.Rows))
		}
	}
	sort.Strings(names)
	if !slices.Equal(names, allTables) {
		t.Fatalf("tables %v", names)
	}
	var shown []string
	for _, row := range one(t, e, "SHOW TABLES", nil).Rows {
		shown = append(shown, row[0].(string))
	}
	if !slices.Equal(shown, allTables) {
		t.Fatalf("SHOW TABLES %v", shown)
	}
	var ixcols []string
	for _, row := range one(t, e, "SHOW INDEX FROM drawers", nil).Rows {
		ixcols = append(ixcols, fmt.Sprint(row[2], ".", row[4]))
	}
	if fmt.Sprint(ixcols) != "[id.id room_time.room_id room_time.created_at]" {
		t.Fatalf("SHOW INDEX: %v", ixcols)
	}
	is := one(t, e, "SELECT count(*) FROM information_schema.columns WHERE table_schema = 'palace' AND table_name = 'drawers'", nil)
	if is.Rows[0][0] != int64(22) {
		t.Fatalf("information_schema: %v", is.Rows)
	}
}

// Values are JSON-ready: strings, int64, float64, bool, nil, times as
// RFC 3339 strings in UTC, JSON decoded, decimals as text.
func TestValuesJSONReady(t *testing.T) {
	e := sqlview.New(filled(t, 0), defaults())
	r := one(t, e, "SELECT 'a', 7, 2.5e0, 1.25, NULL, true, CAST('2026-01-02 03:04:05.123456' AS DATETIME(6)), JSON_OBJECT('k', JSON_ARRAY(1, 'x'))", nil)
	want := []any{"a", int64(7), 2.5, "1.25", nil, true, "2026-01-02T03:04:05.123456Z", map[string]any{"k": []any{float64(1), "x"}}}
	if fmt.Sprint(r.Rows[0]) != fmt.Sprint(want) {
		t.Fatalf("values %#v, want %#v", r.Rows[0], want)
	}
	for i, v := range r.Rows[0] {
		if fmt.Sprintf("%T", v) != fmt.Sprintf("%T", want[i]) {
			t.Errorf("value %d: %T, want %T", i, v, want[i])
		}
	}
	d := one(t, e, "SELECT tags, current, created_at, source_origin FROM drawers WHERE name = 'ports/staging'", nil)
	row := d.Rows[0]
	if fmt.Sprint(row[0]) != "[infra ports]" || row[1] != true {
		t.Fatalf("tags/current %#v", row)
	}
	if ts, err := time.Parse(time.RFC3339Nano, row[2].(string)); err != nil || ts.Location() != time.UTC {
		t.Fatalf("created_at %v: %v", row[2], err)
	}
	if m, ok := row[3].(map[string]any); !ok || m["a"] != "x" {
		t.Fatalf("source_origin %#v", row[3])
	}
}

// drawers.embedded says whether a drawer has a vector in the serving
// profile ("which rooms have drawers with no vector?"), NULL when no
// profile has served.
func TestEmbeddedColumn(t *testing.T) {
	db := filled(t, 4)
	e := sqlview.New(db, defaults())
	var withVector string
	err := db.View(context.Background(), func(r store.Reader) error {
		return r.Embeddings("p", func(v *store.Embedding) bool { withVector = v.DrawerID; return false })
	})
	if err != nil || withVector == "" {
		t.Fatal(withVector, err)
	}
	got := one(t, e, "SELECT id FROM drawers WHERE embedded", nil)
	if len(got.Rows) != 1 || got.Rows[0][0] != withVector {
		t.Fatalf("embedded: %v, want %s", got.Rows, withVector)
	}
	total := count(t, e, "SELECT count(*) FROM drawers")
	if n := count(t, e, "SELECT count(*) FROM drawers WHERE NOT embedded"); n != total-1 {
		t.Fatalf("not embedded: %d of %d", n, total)
	}
	if rooms := one(t, e, "SELECT DISTINCT room FROM drawers WHERE current AND NOT embedded ORDER BY room", nil); fmt.Sprint(rooms.Rows) != "[[r] [r0] [r1] [r2] [r3]]" {
		t.Fatalf("rooms with drawers without a vector: %v", rooms.Rows)
	}
	bare := openDB(t)
	fillPalace(t, bare, 3, 1, 0, 0)
	if r := one(t, sqlview.New(bare, defaults()), "SELECT embedded FROM drawers", nil); fmt.Sprint(r.Rows) != "[[<nil>] [<nil>] [<nil>]]" {
		t.Fatalf("no serving profile: %v", r.Rows)
	}
}

// count reads a single count.
func count(t *testing.T, e *sqlview.Engine, sql string) int64 {
	t.Helper()
	return one(t, e, sql, nil).Rows[0][0].(int64)
}

// Predicates on indexed columns are answered by the store's indexes: a
// point lookup reads one row, a room's drawers only that room's, and a join
// of mentions to entities looks each entity up (one read per mention).
func TestPushdownReadsOnlyWhatIsAsked(t *testing.T) {
	db := openDB(t)
	fillPalace(t, db, 400, 4, 5, 7)
	e := sqlview.New(db, defaults())
	all := one(t, e, "SELECT id, room_id FROM drawers", nil)
	if len(all.Rows) != 400 || all.RowsRead < 400 {
		t.Fatalf("full scan: %d rows, %d read", len(all.Rows), all.RowsRead)
	}
	id, room := all.Rows[17][0].(string), all.Rows[17][1].(string)

	cases := []struct {
		sql        string
		rows, read int
	}{
		{"SELECT * FROM drawers WHERE id = '" + id + "'", 1, 1},
		{"SELECT * FROM drawers WHERE id = @id", 1, 1},
		{"SELECT * FROM drawers WHERE id IN ('" + id + "', 'no-such-id')", 1, 1},
		{"SELECT id FROM drawers WHERE room_id = '" + room + "'", 100, 100},
		{"SELECT id FROM drawers WHERE room_id = '" + room + "' AND created_at > '2999-01-01'", 0, 0},
		{"SELECT id FROM drawers WHERE room_id = '" + room + "' AND created_at < '2000-01-01'", 0, 0},
		{"SELECT * FROM wings WHERE name = 'bench'", 1, 1},
		{"SELECT * FROM rooms WHERE id = '" + room + "'", 1, 1},
		{"SELECT * FROM entities WHERE name = 'Person 003'", 1, 1},
	}
	for _, c := range cases {
		r := one(t, e, c.sql, map[string]any{"id": id})
		if len(r.Rows) != c.rows || r.RowsRead != c.read {
			t.Errorf("%s: %d rows, %d read; want %d rows, %d read", c.sql, len(r.Rows), r.RowsRead, c.rows, c.read)
		}
	}
	// A statement that needs only ids and names reads the rooms' keys; one
	// that needs more reads the records (content here): both right.
	for _, c := range []struct{ sql, want string }{
		{"SELECT room, count(*) FROM drawers GROUP BY room ORDER BY room", "[[room00 100] [room01 100] [room02 100] [room03 100]]"},
		{"SELECT count(*) FROM drawers WHERE room_id = '" + room + "'", "[[100]]"},
		{"SELECT count(*) FROM drawers WHERE content LIKE 'Drawer 1%'", "[[111]]"},
		{"SELECT room, count(*) FROM drawers WHERE content LIKE 'Drawer 1%' GROUP BY room ORDER BY room", "[[room00 27] [room01 28] [room02 28] [room03 28]]"},
		{"SELECT count(*) FROM drawers WHERE room_id = '" + room + "' AND current", "[[100]]"},
	} {
		if r := one(t, e, c.sql, nil); fmt.Sprint(r.Rows) != c.want {
			t.Errorf("%s: %v, want %s", c.sql, r.Rows, c.want)
		}
	}

	ent := one(t, e, "SELECT id FROM entities WHERE name = 'Person 003'", nil).Rows[0][0].(string)
	m := one(t, e, "SELECT drawer_id FROM mentions WHERE entity_id = '"+ent+"'", nil)
	if len(m.Rows) == 0 || m.RowsRead != len(m.Rows) {
		t.Errorf("mentions by entity: %d rows, %d read", len(m.Rows), m.RowsRead)
	}
	md := one(t, e, "SELECT entity_id FROM mentions WHERE drawer_id = '"+m.Rows[0][0].(string)+"'", nil)
	if len(md.Rows) != 1 || md.RowsRead != 1 {
		t.Errorf("mentions by drawer: %d rows, %d read", len(md.Rows), md.RowsRead)
	}

	// The join: the mentions' scan reads each entity and its mentions
	// (7 + 80), and each mention's entity is one lookup (80).
	j := one(t, e, "SELECT e.name, count(*) AS n FROM mentions m JOIN entities e ON e.id = m.entity_id GROUP BY e.name ORDER BY n DESC, e.name LIMIT 20", nil)
	if len(j.Rows) != 7 || j.RowsRead != 7+80+80 {
		t.Errorf("join: %d rows, %d read; want 7 rows, %d read", len(j.Rows), j.RowsRead, 7+80+80)
	}
	plan := one(t, e, "EXPLAIN PLAN SELECT e.name FROM mentions m JOIN entities e ON e.id = m.entity_id", nil)
	if text := fmt.Sprint(plan.Rows); !strings.Contains(text, "LookupJoin") || !strings.Contains(text, "IndexedTableAccess(entities)") {
		t.Errorf("plan %s", text)
	}
	// A join from one room's drawers to their mentions reads each side
	// once (the room by its index: 100; the mentions: 7 entities, 80
	// mentions), never a nested loop that reads the room again for each
	// mention.
	dj := one(t, e, "SELECT count(*) FROM drawers d JOIN mentions m ON m.drawer_id = d.id WHERE d.room_id = '"+room+"'", nil)
	if dj.Rows[0][0] != int64(20) || dj.RowsRead > 100+7+80 {
		t.Errorf("room join read %d", dj.RowsRead)
	}
}

// A created_at range within a room is answered by the room's time index:
// the scan starts at the range's end and stops at its start.
func TestTimeRangeWithinARoom(t *testing.T) {
	db := openDB(t)
	for range 5 {
		fillPalace(t, db, 10, 1, 0, 0) // one transaction: one instant each
	}
	e := sqlview.New(db, defaults())
	room := one(t, e, "SELECT id FROM rooms", nil).Rows[0][0].(string)
	var instants []string
	for _, row := range one(t, e, "SELECT DISTINCT created_at FROM drawers ORDER BY created_at", nil).Rows {
		ts, err := time.Parse(time.RFC3339Nano, row[0].(string))
		if err != nil {
			t.Fatal(err)
		}
		instants = append(instants, ts.Format("2006-01-02 15:04:05.999999"))
	}
	if len(instants) != 5 {
		t.Fatalf("instants %v", instants)
	}
	for _, c := range []struct {
		where      string
		rows, read int
	}{
		{"created_at >= '" + instants[2] + "'", 30, 30},
		{"created_at > '" + instants[2] + "'", 20, 20},
		{"created_at < '" + instants[2] + "'", 20, 20},
		{"created_at BETWEEN '" + instants[1] + "' AND '" + instants[3] + "'", 30, 30},
		{"created_at > '2999-01-01'", 0, 0},
	} {
		r := one(t, e, "SELECT id FROM drawers WHERE room_id = '"+room+"' AND "+c.where, nil)
		if len(r.Rows) != c.rows || r.RowsRead != c.read {
			t.Errorf("%s: %d rows, %d read; want %d, %d", c.where, len(r.Rows), r.RowsRead, c.rows, c.read)
		}
	}
}

// The answers are the store's: a room's count by SQL is CountDrawers, and
// a join of drawers, mentions and entities is what the graph reads give.
func TestAnswersEqualTheStore(t *testing.T) {
	db := openDB(t)
	fillPalace(t, db, 300, 3, 4, 5)
	e := sqlview.New(db, defaults())
	byRoom := one(t, e, "SELECT r.id, r.name, count(d.id) FROM rooms r JOIN drawers d ON d.room_id = r.id GROUP BY r.id, r.name", nil)
	if len(byRoom.Rows) != 3 {
		t.Fatalf("rooms %v", byRoom.Rows)
	}
	want := map[string][]string{}
	err := db.View(context.Background(), func(r store.Reader) error {
		for _, row := range byRoom.Rows {
			_, stored, err := r.CountDrawers(row[0].(string))
			if err != nil {
				return err
			}
			if int64(stored) != row[2].(int64) {
				t.Errorf("room %s: SQL %d, store %d", row[1], row[2], stored)
			}
		}
		ids, err := r.DrawerIDs(byRoom.Rows[0][0].(string))
		if err != nil {
			return err
		}
		for _, row := range byRoom.Rows {
			ids, err := r.DrawerIDs(row[0].(string))
			if err != nil {
				return err
			}
			for _, id := range ids {
				ms, err := r.DrawerMentions(id)
				if err != nil {
					return err
				}
				for _, m := range ms {
					ent, err := r.Entity(m.Entity)
					if err != nil {
						return err
					}
					want[id] = append(want[id], ent.Name)
				}
			}
		}
		_ = ids
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The palace's kept counts, on a palace with links and superseded
	// drawers.
	every := filled(t, 12)
	var c store.Counts
	if err := every.View(context.Background(), func(r store.Reader) (err error) { c, err = r.Counts(); return err }); err != nil {
		t.Fatal(err)
	}
	if c.Links == 0 || c.Drawers == c.DrawersStored {
		t.Fatalf("a palace without links or superseded drawers: %+v", c)
	}
	got := one(t, sqlview.New(every, defaults()), "SELECT (SELECT count(*) FROM wings), (SELECT count(*) FROM rooms), (SELECT count(*) FROM drawers WHERE current), (SELECT count(*) FROM drawers), (SELECT count(*) FROM similar)", nil)
	if want := fmt.Sprint([]any{int64(c.Wings), int64(c.Rooms), int64(c.Drawers), int64(c.DrawersStored), int64(c.Links)}); fmt.Sprint(got.Rows[0]) != want {
		t.Fatalf("counts %v, store %s", got.Rows[0], want)
	}
	j := one(t, e, "SELECT d.id, e.name FROM drawers d JOIN mentions m ON m.drawer_id = d.id JOIN entities e ON e.id = m.entity_id", nil)
	joined := map[string][]string{}
	for _, row := range j.Rows {
		joined[row[0].(string)] = append(joined[row[0].(string)], row[1].(string))
	}
	if len(joined) != 75 || fmt.Sprint(joined) != fmt.Sprint(want) {
		t.Fatalf("join: %d drawers\n got %v\nwant %v", len(joined), joined, want)
	}
}

// writerDB writes a drawer through the same store after each query's view
// is opened and before the query reads it: what a daemon's writer may do
// at any moment.
type writerDB struct {
	store.DB
	views int
	t     *testing.T
}

func (w *writerDB) View(ctx context.Context, fn func(store.Reader) error) error {
	w.views++
	return w.DB.View(ctx, func(r store.Reader) error {
		err := w.DB.Update(ctx, func(tx store.Tx) error {
			_, err := store.CreateDrawer(tx, store.NewDrawer{Wing: "bench", Room: "room00", Content: fmt.Sprintf("written meanwhile %d", w.views),
				Source: store.Source{Kind: store.KindNote}, Provenance: store.Provenance{RequestedBy: store.ByCLI}}, store.Dedup{})
			return err
		})
		if err != nil {
			w.t.Error(err)
		}
		return fn(r)
	})
}

// A query reads one view for all its statements: a write made meanwhile is
// seen by none of them, and by the next query.
func TestOneSnapshotPerQuery(t *testing.T) {
	base := openDB(t)
	fillPalace(t, base, 10, 1, 0, 0)
	w := &writerDB{DB: base, t: t}
	e := sqlview.New(w, defaults())
	res, err := e.Query(context.Background(), "SELECT count(*) FROM drawers; SELECT count(*) FROM drawers WHERE content LIKE 'written%'; SELECT count(*) FROM rooms", nil)
	if err != nil || len(res) != 3 {
		t.Fatal(res, err)
	}
	if res[0].Rows[0][0] != int64(10) || res[1].Rows[0][0] != int64(0) || w.views != 1 {
		t.Fatalf("counts %v %v, views %d", res[0].Rows, res[1].Rows, w.views)
	}
	res, _ = e.Query(context.Background(), "SELECT count(*) FROM drawers", nil)
	if res[0].Rows[0][0] != int64(11) || w.views != 2 {
		t.Fatalf("next query %v, views %d", res[0].Rows, w.views)
	}
}

// Queries run concurrently, each in its own view and session.
func TestConcurrentQueries(t *testing.T) {
	db := openDB(t)
	fillPalace(t, db, 200, 2, 10, 3)
	e := sqlview.New(db, defaults())
	var wg sync.WaitGroup
	for i := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := e.Query(context.Background(), "SET @n = 1; SELECT count(*) + @n, @v FROM drawers", map[string]any{"v": float64(i)})
			if err != nil || len(res) != 2 || res[1].Err != nil {
				t.Errorf("%v %v", res, err)
				return
			}
			if res[1].Rows[0][0] != int64(201) || res[1].Rows[0][1] != int64(i) {
				t.Errorf("query %d: %v", i, res[1].Rows)
			}
		}()
	}
	wg.Wait()
}

// Several statements run in order, split by the parser (a ';' inside a
// string is no separator), with vars as @variables; the first failure stops
// the query and its Result carries the error.
func TestStatementsAndVariables(t *testing.T) {
	db := openDB(t)
	fillPalace(t, db, 20, 2, 0, 0)
	e := sqlview.New(db, defaults())
	res, err := e.Query(context.Background(), "SELECT 'a;b' AS s; SELECT count(*) FROM drawers WHERE room_id = @room;\n SELECT @label, @n + 1, @f, @flag, @nothing, @obj", map[string]any{
		"room": "none", "label": "x", "n": float64(41), "f": 1.5, "flag": true, "nothing": nil, "obj": map[string]any{"k": "v"}})
	if err != nil || len(res) != 3 {
		t.Fatal(res, err)
	}
	if res[0].Rows[0][0] != "a;b" || res[0].Statement != "SELECT 'a;b' AS s" || res[1].Rows[0][0] != int64(0) {
		t.Fatalf("%+v %+v", res[0], res[1])
	}
	if got := fmt.Sprint(res[2].Rows[0]); got != "[x 42 1.5 true <nil> map[k:v]]" {
		t.Fatalf("variables %s", got)
	}
	res, err = e.Query(context.Background(), "SELECT 1; SELECT nope FROM drawers; SELECT 3", nil)
	if err != nil || len(res) != 2 || res[0].Err != nil || res[1].Err == nil || res[1].Err.Code != fault.DBQueryInvalid {
		t.Fatalf("stop after failure: %+v %v", res, err)
	}
	if !strings.Contains(res[1].Err.Msg, "nope") || !strings.Contains(res[1].Err.Help, "SHOW TABLES") || !strings.Contains(res[1].Err.Help, "DESCRIBE") {
		t.Fatalf("unknown column: %+v", res[1].Err)
	}
	for _, bad := range []string{"SELECT * FROM nowhere", "SELEC 1", "SELECT * FROM drawers WHERE", "SELECT count(* FROM drawers"} {
		r := failed(t, e, bad)
		if r.Err.Code != fault.DBQueryInvalid || r.Err.Msg == "" || !strings.Contains(r.Err.Help, "SHOW TABLES") {
			t.Errorf("%s: %+v", bad, r.Err)
		}
	}
	if _, err := e.Query(context.Background(), "  ;; ", nil); err == nil {
		t.Fatal("an empty query ran")
	} else if fe, ok := err.(*fault.Error); !ok || fe.Code != fault.DBQueryInvalid {
		t.Fatalf("empty query: %v", err)
	}
}

// Writes and what reaches the host are refused, and change nothing.
func TestWritesRefused(t *testing.T) {
	e := sqlview.New(filled(t, 4), defaults())
	counts := func() string {
		return fmt.Sprint(one(t, e, "SELECT (SELECT count(*) FROM drawers), (SELECT count(*) FROM wings), (SELECT count(*) FROM entities), (SELECT count(*) FROM jobs)", nil).Rows)
	}
	before := counts()
	for _, st := range []string{
		"INSERT INTO wings (id, name, created_at) VALUES ('x', 'y', NOW())",
		"UPDATE drawers SET content = 'x'",
		"DELETE FROM drawers",
		"REPLACE INTO wings VALUES ('x', 'y', NULL, NOW())",
		"CREATE TABLE t (a INT)",
		"CREATE DATABASE other",
		"DROP TABLE drawers",
		"DROP DATABASE palace",
		"ALTER TABLE drawers ADD COLUMN x INT",
		"TRUNCATE TABLE drawers",
		"RENAME TABLE drawers TO d2",
		"CREATE INDEX i ON drawers (content)",
		"CREATE VIEW v AS SELECT 1",
		"SET GLOBAL max_connections = 1",
		"SET SESSION sql_mode = ''",
		"SET autocommit = 0",
		"LOAD DATA INFILE '/etc/passwd' INTO TABLE wings",
		"SELECT * FROM drawers INTO OUTFILE '/tmp/sqlview-out'",
		"SELECT content FROM drawers LIMIT 1 INTO DUMPFILE '/tmp/sqlview-dump'",
		"SELECT LOAD_FILE('/etc/passwd')",
		"SELECT GET_LOCK('x', 1)",
		"CALL p()",
		"PREPARE s FROM 'SELECT 1'",
		"START TRANSACTION",
		"LOCK TABLES drawers READ",
		"ANALYZE TABLE drawers",
		"CREATE USER u",
		"GRANT ALL ON *.* TO u",
		"EXPLAIN DELETE FROM drawers",
	} {
		r := failed(t, e, st)
		if r.Err.Code != fault.DBReadOnly || !strings.Contains(r.Err.Msg, "refused") || r.Err.Help == "" {
			t.Errorf("%s: %s %q (%s)", st, r.Err.Code, r.Err.Msg, r.Err.Help)
		}
		if len(r.Rows) != 0 {
			t.Errorf("%s: rows %v", st, r.Rows)
		}
	}
	r := failed(t, e, "DELETE FROM drawers")
	if !strings.Contains(r.Err.Msg, "DELETE") || !strings.Contains(r.Err.Help, "REST, MCP or the CLI") {
		t.Fatalf("message %+v", r.Err)
	}
	if after := counts(); after != before {
		t.Fatalf("counts changed: %s -> %s", before, after)
	}
	// A user variable is the query's own: allowed.
	res, err := e.Query(context.Background(), "SET @x = 5; SELECT @x", nil)
	if err != nil || res[1].Err != nil || res[1].Rows[0][0] != int64(5) {
		t.Fatalf("user variable: %+v %v", res, err)
	}
}

// Past the scan limit a statement fails with too_large naming the
// setting; past the result limit its rows are cut and flagged; past the
// timeout the query fails with timeout.
func TestLimits(t *testing.T) {
	db := openDB(t)
	fillPalace(t, db, 300, 3, 0, 0)

	e := sqlview.New(db, sqlview.Limits{ScanRows: 100, ResultRows: 10_000, Timeout: 30 * time.Second})
	r := failed(t, e, "SELECT count(*) FROM drawers")
	if r.Err.Code != fault.DBTooLarge || !strings.Contains(r.Err.Msg, "100") || !strings.Contains(r.Err.Msg, "db.max_scan_rows") ||
		!strings.Contains(r.Err.Help, "WHERE") || !strings.Contains(r.Err.Help, "db.max_scan_rows") || r.RowsRead != 101 {
		t.Fatalf("scan limit: %+v read %d", r.Err, r.RowsRead)
	}
	// An indexed statement stays within it.
	room := one(t, e, "SELECT id FROM rooms LIMIT 1", nil).Rows[0][0].(string)
	if c := one(t, e, "SELECT count(*) FROM drawers WHERE room_id = '"+room+"'", nil); c.Rows[0][0] != int64(100) {
		t.Fatalf("room count %v", c.Rows)
	}

	e = sqlview.New(db, sqlview.Limits{ScanRows: 10_000, ResultRows: 25, Timeout: 30 * time.Second})
	cut := one(t, e, "SELECT id FROM drawers", nil)
	if len(cut.Rows) != 25 || !cut.Truncated || cut.TruncatedBy != "rows" {
		t.Fatalf("result limit: %d rows, truncated %v by %q", len(cut.Rows), cut.Truncated, cut.TruncatedBy)
	}
	if whole := one(t, e, "SELECT id FROM drawers LIMIT 25", nil); whole.Truncated || whole.TruncatedBy != "" || len(whole.Rows) != 25 {
		t.Fatalf("exactly the limit: %d rows, truncated %v", len(whole.Rows), whole.Truncated)
	}

	// Past the result's size: cut and flagged, at least one row kept.
	e = sqlview.New(db, sqlview.Limits{ScanRows: 10_000, ResultRows: 10_000, Timeout: 30 * time.Second, ResultBytes: 1000})
	big := one(t, e, "SELECT content FROM drawers", nil)
	if !big.Truncated || big.TruncatedBy != "bytes" || len(big.Rows) < 5 || len(big.Rows) > 20 {
		t.Fatalf("result bytes: %d rows, truncated %v by %q", len(big.Rows), big.Truncated, big.TruncatedBy)
	}
	// One row past the size: no part of it can be sent, the statement
	// fails (and the statements after it are not run).
	res, err := e.Query(context.Background(), "SELECT 1; SELECT 'a', REPEAT('x', 5000); SELECT 2", nil)
	if err != nil || len(res) != 2 || res[0].Err != nil || res[1].Err == nil || res[1].Err.Code != fault.DBTooLarge ||
		!strings.Contains(res[1].Err.Msg, "the row is larger than the answer's limit") || len(res[1].Rows) != 0 {
		t.Fatalf("one row over the size: %+v %v", res, err)
	}
	if r := failed(t, e, "SELECT 'a' UNION ALL SELECT REPEAT('x', 5000)"); r.Err.Code != fault.DBTooLarge || len(r.Rows) != 0 {
		t.Fatalf("a large row after small ones: %+v", r.Err)
	}

	// Past the memory budget (the rows a sort keeps): too_large.
	e = sqlview.New(db, sqlview.Limits{ScanRows: 1 << 40, ResultRows: 10, Timeout: 30 * time.Second, MemoryBytes: 1 << 20})
	mem := failed(t, e, "SELECT a.content, b.content FROM drawers a CROSS JOIN drawers b ORDER BY a.content, b.content")
	if mem.Err.Code != fault.DBTooLarge || !strings.Contains(mem.Err.Msg, "memory") {
		t.Fatalf("memory budget: %+v", mem.Err)
	}
	if top := one(t, e, "SELECT content FROM drawers ORDER BY content LIMIT 3", nil); len(top.Rows) != 3 {
		t.Fatalf("a sort within the budget: %v", top.Rows)
	}

	e = sqlview.New(db, sqlview.Limits{ScanRows: 1 << 40, ResultRows: 10, Timeout: 300 * time.Millisecond})
	if r := failed(t, e, "SELECT SLEEP(30)"); r.Err.Code != fault.DBTimeout {
		t.Fatalf("sleep past the timeout: %+v", r.Err)
	}
	res, err = e.Query(context.Background(), "SELECT 1; SELECT count(*) FROM drawers a, drawers b, drawers c; SELECT 2", nil)
	if err != nil || len(res) != 2 || res[1].Err == nil || res[1].Err.Code != fault.DBTimeout || !strings.Contains(res[1].Err.Help, "db.query_timeout_secs") {
		t.Fatalf("timeout: %+v %v", res, err)
	}
}

// Every family's indexes answer their lookups with the rows asked for and
// no more reads than rows (a palace with a record of every family).
func TestEveryIndexLooksUp(t *testing.T) {
	e := sqlview.New(filled(t, 8), defaults())
	first := func(sql string) string {
		t.Helper()
		r := one(t, e, sql, nil)
		if len(r.Rows) == 0 {
			t.Fatalf("%s: no rows", sql)
		}
		return fmt.Sprint(r.Rows[0][0])
	}
	bob := first("SELECT id FROM entities WHERE name = 'Bob Stone'")
	billing := first("SELECT id FROM entities WHERE name = 'billing'")
	fact := first("SELECT id FROM relationships WHERE predicate = 'leads'")
	job := first("SELECT id FROM jobs WHERE kind = 'mine'")
	source := first("SELECT `key` FROM sources")
	link := first("SELECT id FROM similar LIMIT 1")
	older := first("SELECT older_id FROM similar WHERE id = '" + link + "'")
	drawer := first("SELECT drawer_id FROM mentions")
	wing := first("SELECT id FROM wings")
	for _, c := range []struct {
		sql  string
		rows int
	}{
		{"SELECT * FROM wings WHERE id = '" + wing + "'", 1},
		{"SELECT * FROM rooms WHERE wing_id = '" + wing + "'", 5},
		{"SELECT * FROM entities WHERE id = '" + bob + "'", 1},
		{"SELECT * FROM aliases WHERE entity_id = '" + bob + "'", 1},
		{"SELECT * FROM mentions WHERE entity_id = '" + bob + "'", 1},
		{"SELECT * FROM mentions WHERE drawer_id = '" + drawer + "'", 1},
		{"SELECT * FROM relationships WHERE id = '" + fact + "'", 1},
		{"SELECT * FROM relationships WHERE subject_id = '" + bob + "'", 2},
		{"SELECT * FROM relationships WHERE object_id = '" + billing + "'", 2},
		{"SELECT * FROM relationships WHERE object_id = '" + bob + "'", 0},
		{"SELECT * FROM relationship_links WHERE from_id = '" + fact + "'", 1},
		{"SELECT * FROM entity_links WHERE from_id = '" + bob + "'", 1},
		{"SELECT * FROM entity_links WHERE to_id = '" + billing + "'", 1},
		{"SELECT * FROM similar WHERE id = '" + link + "'", 1},
		{"SELECT * FROM similar WHERE older_id = '" + older + "'", 1},
		{"SELECT * FROM jobs WHERE id = '" + job + "'", 1},
		{"SELECT * FROM sources WHERE `key` = '" + source + "'", 1},
		{"SELECT * FROM documents WHERE source = '" + source + "'", 1},
		{"SELECT * FROM triggers WHERE name = 'nightly'", 1},
		{"SELECT * FROM triggers WHERE name = 'none'", 0},
	} {
		r := one(t, e, c.sql, nil)
		if len(r.Rows) != c.rows || r.RowsRead != c.rows {
			t.Errorf("%s: %d rows, %d read; want %d", c.sql, len(r.Rows), r.RowsRead, c.rows)
		}
		plan := fmt.Sprint(one(t, e, "EXPLAIN PLAN "+c.sql, nil).Rows)
		if !strings.Contains(plan, "IndexedTableAccess") {
			t.Errorf("%s: no index in %s", c.sql, plan)
		}
	}
	// From one entity by name to its mentions: without statistics the
	// planner reads the mentions once and hashes the named entity (2
	// entities, 1 mention, 1 lookup); with the engine's join hints it
	// goes by the name index, then the mentions' entity index.
	j := one(t, e, "SELECT m.drawer_id FROM entities e JOIN mentions m ON m.entity_id = e.id WHERE e.name = 'Bob Stone'", nil)
	if len(j.Rows) != 1 || j.RowsRead > 4 {
		t.Errorf("entity to mentions: %d rows, %d read", len(j.Rows), j.RowsRead)
	}
	j = one(t, e, "SELECT /*+ JOIN_ORDER(e, m) LOOKUP_JOIN(e, m) */ m.drawer_id FROM entities e JOIN mentions m ON m.entity_id = e.id WHERE e.name = 'Bob Stone'", nil)
	if len(j.Rows) != 1 || j.RowsRead != 2 {
		t.Errorf("entity to mentions, hinted: %d rows, %d read", len(j.Rows), j.RowsRead)
	}
}
