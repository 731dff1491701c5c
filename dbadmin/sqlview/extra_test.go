package sqlview_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loci-dev/loci/dbadmin/sqlview"
	"github.com/loci-dev/loci/fault"
)

// tools is an extra table of n rows, counting its reads; fail, when set,
// is the error its Rows answers.
func tools(n int, reads *atomic.Int64, fail *atomic.Pointer[error]) sqlview.Extra {
	return sqlview.Extra{Name: "tools", Doc: "Tools the daemon knows.",
		Columns: []sqlview.Column{
			{Name: "name", Type: sqlview.TypeID, Doc: "the tool's name"},
			{Name: "note", Type: sqlview.TypeText, Doc: "a note"},
			{Name: "size", Type: sqlview.TypeInt, Doc: "a size"},
			{Name: "max", Type: sqlview.TypeInt, Doc: "an optional bound"},
			{Name: "on", Type: sqlview.TypeBool, Doc: "whether it is on"},
			{Name: "at", Type: sqlview.TypeTime, Doc: "when"},
			{Name: "ratio", Type: sqlview.TypeFloat, Doc: "a ratio"},
			{Name: "options", Type: sqlview.TypeJSON, Doc: "its options"},
		},
		Rows: func(ctx context.Context) ([][]any, error) {
			reads.Add(1)
			if fail != nil {
				if err := fail.Load(); err != nil {
					return nil, *err
				}
			}
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			out := make([][]any, n)
			for i := range out {
				var max *int
				if i%2 == 0 {
					m := i * 10
					max = &m
				}
				at := time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.FixedZone("x", 3600))
				out[i] = []any{fmt.Sprintf("t%02d", i), nil, i, max, i%2 == 1, at, float64(i) / 4,
					map[string]string{"k": fmt.Sprint(i), "quote": `a"b`}}
			}
			return out, nil
		}}
}

// An extra table is listed with its columns, answers SELECT with
// JSON-ready values (booleans, times in UTC, JSON decoded, NULLs), joins
// the store's tables, is read once per statement that uses it (not per
// scan, and not by a statement that does not), and counts its rows in
// RowsRead.
func TestExtraTable(t *testing.T) {
	var reads atomic.Int64
	e := sqlview.New(filled(t, 2), defaults(), tools(3, &reads, nil))

	var got *sqlview.Table
	for _, tb := range e.Tables() {
		if tb.Name == "tools" {
			got = &tb
		}
	}
	if got == nil || got.Doc != "Tools the daemon knows." || len(got.Columns) != 8 || len(got.Indexed) != 0 {
		t.Fatalf("listed: %+v", got)
	}
	wantTypes := []string{"VARCHAR(255)", "TEXT", "BIGINT", "BIGINT", "TINYINT(1)", "DATETIME(6)", "DOUBLE", "JSON"}
	for i, c := range got.Columns {
		if c.Type != wantTypes[i] || c.Doc == "" {
			t.Errorf("column %d: %+v, want type %s", i, c, wantTypes[i])
		}
	}
	if r := one(t, e, "SHOW TABLES", nil); !strings.Contains(fmt.Sprint(r.Rows), "tools") || !strings.Contains(fmt.Sprint(r.Rows), "drawers") {
		t.Fatalf("SHOW TABLES: %v", r.Rows)
	}
	if r := one(t, e, "DESCRIBE tools", nil); len(r.Rows) != 8 || r.Rows[7][0] != "options" || !strings.EqualFold(fmt.Sprint(r.Rows[7][1]), "json") {
		t.Fatalf("DESCRIBE: %v", r.Rows)
	}

	reads.Store(0)
	r := one(t, e, "SELECT * FROM tools ORDER BY name", nil)
	want := [][]any{
		{"t00", nil, int64(0), int64(0), false, "2026-01-02T02:04:05.123456Z", 0.0, map[string]any{"k": "0", "quote": `a"b`}},
		{"t01", nil, int64(1), nil, true, "2026-01-02T02:04:05.123456Z", 0.25, map[string]any{"k": "1", "quote": `a"b`}},
		{"t02", nil, int64(2), int64(20), false, "2026-01-02T02:04:05.123456Z", 0.5, map[string]any{"k": "2", "quote": `a"b`}},
	}
	if !reflect.DeepEqual(r.Rows, want) {
		t.Fatalf("rows\n got %#v\nwant %#v", r.Rows, want)
	}
	if r.RowsRead != 3 || reads.Load() != 1 {
		t.Fatalf("rows read %d, Rows called %d times", r.RowsRead, reads.Load())
	}
	if c := one(t, e, "SELECT name FROM tools WHERE `on` AND JSON_EXTRACT(options, '$.k') = '1'", nil); !reflect.DeepEqual(c.Rows, [][]any{{"t01"}}) {
		t.Fatalf("WHERE on a boolean and JSON: %v", c.Rows)
	}

	// A self-join reads the rows once; a statement without the table, not at all.
	reads.Store(0)
	j := one(t, e, "SELECT a.name, b.name FROM tools a JOIN tools b ON b.size = a.size + 1 ORDER BY a.name", nil)
	if !reflect.DeepEqual(j.Rows, [][]any{{"t00", "t01"}, {"t01", "t02"}}) || reads.Load() != 1 {
		t.Fatalf("self-join %v, Rows called %d times", j.Rows, reads.Load())
	}
	one(t, e, "SELECT count(*) FROM wings", nil)
	one(t, e, "SELECT count(*) FROM tools", nil)
	one(t, e, "SELECT count(*) FROM tools", nil)
	if reads.Load() != 3 {
		t.Fatalf("Rows called %d times over a join, a statement without it and two with it", reads.Load())
	}

	// It joins the store's tables.
	jw := one(t, e, "SELECT t.name, w.name FROM tools t CROSS JOIN wings w WHERE t.size = 2 ORDER BY w.name", nil)
	wings := one(t, e, "SELECT name FROM wings ORDER BY name", nil)
	if len(jw.Rows) != len(wings.Rows) || len(jw.Rows) == 0 || jw.Rows[0][0] != "t02" || jw.Rows[0][1] != wings.Rows[0][0] {
		t.Fatalf("join with wings: %v (wings %v)", jw.Rows, wings.Rows)
	}
}

// An extra table keeps the limits: its rows count against the scan limit
// and the result limit cuts them; writes to it are refused and change
// nothing; a Rows failure is the statement's fault, as is a row of the
// wrong width.
func TestExtraTableLimitsAndWrites(t *testing.T) {
	var reads atomic.Int64
	var fail atomic.Pointer[error]
	db := openDB(t)
	e := sqlview.New(db, sqlview.Limits{ScanRows: 5, ResultRows: 10_000, Timeout: 30 * time.Second}, tools(6, &reads, &fail))
	r := failed(t, e, "SELECT name FROM tools")
	if r.Err.Code != fault.DBTooLarge || r.RowsRead != 6 {
		t.Fatalf("scan limit: %+v read %d", r.Err, r.RowsRead)
	}
	e = sqlview.New(db, sqlview.Limits{ScanRows: 100, ResultRows: 4, Timeout: 30 * time.Second}, tools(6, &reads, &fail))
	if cut := one(t, e, "SELECT name FROM tools", nil); len(cut.Rows) != 4 || !cut.Truncated {
		t.Fatalf("result limit: %d rows, truncated %v", len(cut.Rows), cut.Truncated)
	}

	before := fmt.Sprint(one(t, e, "SELECT * FROM tools", nil).Rows)
	for _, st := range []string{
		"INSERT INTO tools (name) VALUES ('x')",
		"UPDATE tools SET note = 'x'",
		"DELETE FROM tools",
		"REPLACE INTO tools (name) VALUES ('t00')",
		"DROP TABLE tools",
		"ALTER TABLE tools ADD COLUMN y INT",
		"TRUNCATE TABLE tools",
		"CREATE INDEX i ON tools (name)",
	} {
		if r := failed(t, e, st); r.Err.Code != fault.DBReadOnly || r.Err.Help == "" {
			t.Errorf("%s: %s %q", st, r.Err.Code, r.Err.Msg)
		}
	}
	if after := fmt.Sprint(one(t, e, "SELECT * FROM tools", nil).Rows); after != before {
		t.Fatalf("rows changed: %s -> %s", before, after)
	}

	boom := error(fault.New(fault.MinerConfigFile, "the file is gone", "restore it"))
	fail.Store(&boom)
	if r := failed(t, e, "SELECT * FROM tools"); r.Err.Code != fault.MinerConfigFile || r.Err.Msg != "the file is gone" {
		t.Fatalf("a fault from Rows: %+v", r.Err)
	}
	plain := errors.New("disk on fire")
	fail.Store(&plain)
	if r := failed(t, e, "SELECT * FROM tools"); r.Err.Code != fault.ServerFailed || !strings.Contains(r.Err.Msg, "tools") || !strings.Contains(r.Err.Msg, "disk on fire") {
		t.Fatalf("an error from Rows: %+v", r.Err)
	}
	fail.Store(nil)

	bad := sqlview.New(db, defaults(), sqlview.Extra{Name: "bad", Columns: []sqlview.Column{{Name: "a", Type: sqlview.TypeInt}},
		Rows: func(context.Context) ([][]any, error) { return [][]any{{int64(1), "extra"}}, nil }})
	if r := failed(t, bad, "SELECT * FROM bad"); r.Err.Code != fault.ServerFailed || !strings.Contains(r.Err.Msg, "2 values for 1 columns") {
		t.Fatalf("a row of the wrong width: %+v", r.Err)
	}
	typed := sqlview.New(db, defaults(), sqlview.Extra{Name: "typed", Columns: []sqlview.Column{{Name: "a", Type: sqlview.TypeInt}},
		Rows: func(context.Context) ([][]any, error) { return [][]any{{"not a number"}}, nil }})
	if r := failed(t, typed, "SELECT * FROM typed"); r.Err.Code != fault.ServerFailed || !strings.Contains(r.Err.Msg, "column a") {
		t.Fatalf("a value of the wrong type: %+v", r.Err)
	}
}

// A definition that cannot be served panics at New: a name the store's
// tables hold, a name not lowercase, a column of no known type, no Rows.
func TestExtraTableBadDefinitions(t *testing.T) {
	rows := func(context.Context) ([][]any, error) { return nil, nil }
	cols := []sqlview.Column{{Name: "a", Type: sqlview.TypeText}}
	for name, x := range map[string]sqlview.Extra{
		"taken":     {Name: "drawers", Columns: cols, Rows: rows},
		"uppercase": {Name: "Tools", Columns: cols, Rows: rows},
		"type":      {Name: "tools", Columns: []sqlview.Column{{Name: "a", Type: "INT(11)"}}, Rows: rows},
		"repeated":  {Name: "tools", Columns: []sqlview.Column{{Name: "a", Type: sqlview.TypeText}, {Name: "A", Type: sqlview.TypeInt}}, Rows: rows},
		"no rows":   {Name: "tools", Columns: cols},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: New accepted %+v", name, x)
				}
			}()
			sqlview.New(openDB(t), defaults(), x)
		}()
	}
	// Two extras of one name: the second is refused.
	defer func() {
		if recover() == nil {
			t.Error("New accepted two extra tables of one name")
		}
	}()
	x := sqlview.Extra{Name: "tools", Columns: cols, Rows: rows}
	sqlview.New(openDB(t), defaults(), x, x)
}

// A join from an extra table into a store's table goes by the store's
// index: it reads the extra's rows and the rows looked up, not the
// store's table whole.
func TestExtraTableJoinsByIndex(t *testing.T) {
	db := openDB(t)
	fillPalace(t, db, 300, 3, 0, 0)
	var room string
	e := sqlview.New(db, defaults(), sqlview.Extra{Name: "picked", Columns: []sqlview.Column{{Name: "room", Type: sqlview.TypeID}},
		Rows: func(context.Context) ([][]any, error) { return [][]any{{room}}, nil }})
	room = one(t, e, "SELECT id FROM rooms ORDER BY name LIMIT 1", nil).Rows[0][0].(string)
	for _, st := range []string{
		"SELECT count(*) FROM picked p JOIN drawers d ON d.room_id = p.room",
		"SELECT count(*) FROM drawers d JOIN picked p ON d.room_id = p.room",
	} {
		r := one(t, e, st, nil)
		if r.Rows[0][0] != int64(100) || r.RowsRead != 101 {
			t.Errorf("%s: %v, read %d (want 100, read 101)", st, r.Rows, r.RowsRead)
		}
	}
}
