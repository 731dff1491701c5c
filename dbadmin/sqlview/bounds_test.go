package sqlview_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/fxamacker/cbor/v2"

	"github.com/loci-dev/loci/dbadmin/sqlview"
	"github.com/loci-dev/loci/fault"
)

// allocated is the bytes the process allocated while fn ran.
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// A function whose result's size an argument chooses is refused before it
// makes a value past 16 MiB: too_large naming the function and the
// ceiling, nothing large allocated, no panic; within it the engine's own
// function answers.
func TestValuesBounded(t *testing.T) {
	db := openDB(t)
	fillPalace(t, db, 40, 2, 0, 0)
	e := sqlview.New(db, defaults())
	var r sqlview.Result
	if n := allocated(func() { r = failed(t, e, "SELECT length(REPEAT('x', 1000000000))") }); n > 64<<20 {
		t.Errorf("REPEAT of a GB allocated %d bytes", n)
	}
	if r.Err.Code != fault.DBTooLarge || !strings.Contains(r.Err.Msg, "REPEAT") || !strings.Contains(r.Err.Msg, "16 MiB") || !strings.Contains(r.Err.Help, "LEFT") {
		t.Fatalf("REPEAT of a GB: %+v", r.Err)
	}
	for _, st := range []struct{ sql, fn string }{
		{"SELECT length(REPEAT('x', 3000000000))", "REPEAT"},
		{"SELECT REPEAT('abcd', 5000000)", "REPEAT"},
		{"SELECT REPEAT(content, 1000000) FROM drawers", "REPEAT"},
		{"SELECT LPAD('x', 20000000, 'y')", "LPAD"},
		{"SELECT RPAD('x', 99999999999, 'y')", "RPAD"},
		{"SELECT RPAD('x', 9000000, 'é')", "RPAD"},
		{"SELECT SPACE(17000000)", "SPACE"},
		{"SELECT length(SPACE(3000000000))", "SPACE"},
		{"SELECT CONCAT(REPEAT('x', 10000000), REPEAT('y', 10000000))", "CONCAT"},
		{"SELECT CONCAT(" + strings.Repeat("REPEAT('x', 16000000), ", 200) + "'end')", "CONCAT"},
		{"SELECT CONCAT_WS(REPEAT('-', 9000000), 'a', 'b')", "CONCAT_WS"},
		{"SELECT REPLACE(REPEAT('x', 10000), 'x', REPEAT('y', 10000))", "REPLACE"},
		{"SELECT REGEXP_REPLACE(REPEAT('x', 10000), 'x', REPEAT('y', 10000))", "REGEXP_REPLACE"},
		{"SELECT HEX(REPEAT('x', 10000000))", "HEX"},
		{"SELECT TO_BASE64(REPEAT('x', 15000000))", "TO_BASE64"},
		{"SELECT UNCOMPRESS(x'ffffff7f00')", "UNCOMPRESS"},
		{"SELECT CAST(REPEAT('x', 20000000) AS CHAR)", "REPEAT"},
		{"SELECT CONVERT(REPEAT('x', 20000000), BINARY)", "REPEAT"},
		{"SELECT length(REPEAT('x', 1000000000)), length(REPEAT('y', 1000000000))", "REPEAT"},
	} {
		var r sqlview.Result
		n := allocated(func() { r = failed(t, e, st.sql) })
		if r.Err.Code != fault.DBTooLarge || !strings.Contains(r.Err.Msg, st.fn+" would make") || !strings.Contains(r.Err.Msg, "16 MiB") {
			t.Errorf("%s: %s %q", st.sql, r.Err.Code, r.Err.Msg)
		}
		if n > 100<<20 {
			t.Errorf("%s: allocated %d bytes", st.sql, n)
		}
	}
	// Within the ceiling: the engine's own functions answer.
	ok := one(t, e, "SELECT length(REPEAT('ab', 1000000)), REPEAT('ab', 3), LPAD('7', 3, '0'), RPAD('a', 3, 'b'), length(SPACE(16777216)), CONCAT('a', 1, NULL), "+
		"CONCAT('a', 1), CONCAT_WS(',', 'a', 'b'), REPLACE('aXb', 'X', '--'), REGEXP_REPLACE('a1b2', '[0-9]', '#'), HEX('ab'), TO_BASE64('ab'), "+
		"CAST(UNCOMPRESS(COMPRESS('hello')) AS CHAR), REPEAT(NULL, 3), REPEAT('x', NULL), length(CAST(REPEAT('x', 100) AS CHAR)) AS last", nil)
	want := `[2000000 ababab 007 abb 16777216 <nil> a1 a,b a--b a#b# 6162 YWI= hello <nil> <nil> 100]`
	if got := fmt.Sprint(ok.Rows[0]); got != want {
		t.Fatalf("within the ceiling: %s, want %s", got, want)
	}
	if ok.Columns[1].Name != "REPEAT('ab', 3)" || ok.Columns[len(ok.Columns)-1].Name != "last" || ok.Columns[1].Type != "LONGTEXT" {
		t.Fatalf("columns %+v", ok.Columns)
	}
	if g := one(t, e, "SELECT count(*) FROM drawers WHERE CONCAT(content, '') = content AND REPEAT(room_id, 2) <> ''", nil); g.Rows[0][0] != int64(40) {
		t.Fatalf("bounded functions over rows: %v", g.Rows)
	}
	// SPACE answers in linear time (the engine's own is quadratic).
	start := time.Now()
	if sp := one(t, e, "SELECT length(SPACE(300000)), CONCAT('[', SPACE(2), ']'), SPACE(-1), SPACE(NULL)", nil); fmt.Sprint(sp.Rows[0]) != "[300000 [  ]  <nil>]" || time.Since(start) > 2*time.Second {
		t.Fatalf("SPACE: %v in %v", sp.Rows, time.Since(start))
	}
	if p := one(t, e, "SELECT @@max_allowed_packet", nil); p.Rows[0][0] != int64(sqlview.MaxValueBytes) {
		t.Fatalf("@@max_allowed_packet %v", p.Rows)
	}
	// GROUP_CONCAT keeps the engine's 1024 bytes, which a console cannot raise.
	if g := one(t, e, "SELECT length(GROUP_CONCAT(content)) FROM drawers", nil); g.Rows[0][0] != int64(1024) {
		t.Fatalf("GROUP_CONCAT: %v", g.Rows)
	}
	if r := failed(t, e, "SET @@group_concat_max_len = 1000000000"); r.Err.Code != fault.DBReadOnly {
		t.Fatalf("raising group_concat_max_len: %+v", r.Err)
	}
}

// Values each within the ceiling that together pass the statement's
// memory budget are refused too.
func TestValuesWithinTheMemoryBudget(t *testing.T) {
	e := sqlview.New(filled(t, 0), sqlview.Limits{ScanRows: 1000, ResultRows: 10, Timeout: 30 * time.Second, MemoryBytes: 64 << 20})
	var r sqlview.Result
	// A row of 16 columns of 15 MB each: all held at once.
	st := "SELECT " + strings.TrimSuffix(strings.Repeat("REPEAT('x', 15000000), SPACE(15000000), ", 8), ", ")
	if n := allocated(func() { r = failed(t, e, st) }); n > 150<<20 {
		t.Errorf("16 values of 15 MB: allocated %d bytes", n)
	}
	if r.Err.Code != fault.DBTooLarge || !strings.Contains(r.Err.Msg, "in memory") {
		t.Fatalf("values past the budget: %+v", r.Err)
	}
	// Values made one after another, each garbage once measured.
	if ok := one(t, e, "SELECT "+strings.TrimSuffix(strings.Repeat("length(REPEAT('x', 15000000)) + length(SPACE(15000000)) + ", 8), " + "), nil); ok.Rows[0][0] != int64(240000000) {
		t.Fatalf("values within the budget one at a time: %v", ok.Rows)
	}
}

// A query whose context is cancelled (its listener closed, the daemon
// stopping) fails with loci::db::canceled; its deadline with timeout.
func TestCanceledIsNotTimeout(t *testing.T) {
	e := sqlview.New(filled(t, 0), defaults())
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	res, err := e.Query(ctx, "SELECT SLEEP(30)", nil)
	if err != nil || len(res) != 1 || res[0].Err == nil || res[0].Err.Code != fault.DBCanceled || res[0].Err.Code.Status() != 503 ||
		!strings.Contains(res[0].Err.Msg, "listener closed or the daemon is stopping") || strings.Contains(res[0].Err.Help, "query_timeout") {
		t.Fatalf("cancelled: %+v %v", res, err)
	}
	if _, err := e.Query(ctx, "SELECT 1", nil); err == nil {
		t.Fatal("a cancelled context ran a query")
	} else if fe, ok := err.(*fault.Error); !ok || fe.Code != fault.DBCanceled {
		t.Fatalf("cancelled before: %v", err)
	}
	dl, stop := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer stop()
	res, err = e.Query(dl, "SELECT SLEEP(30)", nil)
	if err != nil || len(res) != 1 || res[0].Err == nil || res[0].Err.Code != fault.DBTimeout {
		t.Fatalf("deadline: %+v %v", res, err)
	}
}

// Binary values come back as []byte (base64 in JSON, a byte string in
// CBOR), text as strings; a []byte variable binds as a binary value.
func TestBinaryValues(t *testing.T) {
	e := sqlview.New(filled(t, 0), defaults())
	r := one(t, e, "SELECT x'00ff', UNHEX('00ff'), CAST('ab' AS BINARY), CAST('é' AS CHAR), 'text', @b, LENGTH(@b), HEX(@b), @b = x'00ff'", map[string]any{"b": []byte{0, 0xff}})
	row := r.Rows[0]
	for i := 0; i < 3; i++ {
		if _, ok := row[i].([]byte); !ok {
			t.Errorf("value %d: %T %v", i, row[i], row[i])
		}
	}
	if !bytes.Equal(row[0].([]byte), []byte{0, 0xff}) || !bytes.Equal(row[2].([]byte), []byte("ab")) || row[3] != "é" || row[4] != "text" {
		t.Fatalf("values %#v", row)
	}
	if b, ok := row[5].([]byte); !ok || !bytes.Equal(b, []byte{0, 0xff}) || row[6] != int64(2) || row[7] != "00FF" || row[8] != true {
		t.Fatalf("a []byte variable: %#v", row[5:])
	}
	j, err := json.Marshal(row[:1])
	if err != nil || string(j) != `["AP8="]` {
		t.Fatalf("json %s %v", j, err)
	}
	c, err := cbor.Marshal(row[:1])
	if err != nil || !bytes.Equal(c, []byte{0x81, 0x42, 0x00, 0xff}) {
		t.Fatalf("cbor %x %v", c, err)
	}
	// A stored text column stays text.
	if d := one(t, e, "SELECT name FROM wings LIMIT 1", nil); fmt.Sprintf("%T", d.Rows[0][0]) != "string" {
		t.Fatalf("text column %T", d.Rows[0][0])
	}
}

// EXPLAIN and DESCRIBE of a statement answer the plan as text rows; the
// console reports itself read-only; SET answers nothing; LIMIT @n says
// to write a number; the help names where the column comments are.
func TestConsoleRoughEdges(t *testing.T) {
	e := sqlview.New(filled(t, 2), defaults())
	for _, st := range []string{"EXPLAIN SELECT * FROM drawers WHERE id = 'x'", "DESCRIBE SELECT * FROM drawers WHERE id = 'x'",
		"EXPLAIN FORMAT=TREE SELECT * FROM drawers WHERE id = 'x'", "explain format=traditional SELECT * FROM drawers WHERE id = 'x'"} {
		r := one(t, e, st, nil)
		if len(r.Columns) != 1 || r.Columns[0].Name != "plan" || len(r.Rows) < 2 || r.Statement != st {
			t.Fatalf("%s: %+v", st, r)
		}
		var lines []string
		for _, row := range r.Rows {
			s, ok := row[0].(string)
			if !ok {
				t.Fatalf("%s: row %#v", st, row)
			}
			lines = append(lines, s)
		}
		if plan := strings.Join(lines, "\n"); !strings.Contains(plan, "IndexedTableAccess(drawers)") {
			t.Fatalf("%s: plan\n%s", st, plan)
		}
	}
	ro := one(t, e, "SELECT @@read_only, @@global.read_only, @@transaction_read_only, @@session.transaction_read_only", nil)
	if fmt.Sprint(ro.Rows[0]) != "[1 1 1 1]" {
		t.Fatalf("read_only %v", ro.Rows)
	}
	res, err := e.Query(context.Background(), "SET @x = 5; SELECT @x", nil)
	if err != nil || len(res) != 2 || len(res[0].Columns) != 0 || res[0].Rows == nil || len(res[0].Rows) != 0 || res[1].Rows[0][0] != int64(5) {
		t.Fatalf("SET: %+v %v", res, err)
	}
	if j, _ := json.Marshal(res[0]); !strings.Contains(string(j), `"rows":[]`) {
		t.Fatalf("SET as JSON: %s", j)
	}
	lim := failed(t, e, "SELECT id FROM drawers LIMIT @n")
	if lim.Err.Code != fault.DBQueryInvalid || !strings.Contains(lim.Err.Help, "LIMIT 10") || !strings.Contains(lim.Err.Help, "@variable") {
		t.Fatalf("LIMIT @n: %+v", lim.Err)
	}
	bad := failed(t, e, "SELECT nope FROM drawers")
	for _, w := range []string{"SHOW TABLES", "SHOW FULL COLUMNS FROM <table>", "information_schema.columns"} {
		if !strings.Contains(bad.Err.Help, w) {
			t.Errorf("help %q lacks %q", bad.Err.Help, w)
		}
	}
	// What the help names works and gives the comments.
	full := one(t, e, "SHOW FULL COLUMNS FROM drawers", nil)
	is := one(t, e, "SELECT column_name, column_comment FROM information_schema.columns WHERE table_name = 'drawers' AND column_name = 'content'", nil)
	if !strings.Contains(fmt.Sprint(full.Rows), "embedded") || len(is.Rows) != 1 || is.Rows[0][1] == "" {
		t.Fatalf("comments: %v / %v", full.Rows, is.Rows)
	}
}

// The trial's document of shared parts (JSON_ARRAY(s, s) forty times over
// a recursive CTE: 2^40 leaves, cheap to build, 20 GB as text) answers
// too_large within seconds with the heap barely grown: every JSON builder
// measures its arguments' text, stopping just past the 16 MiB ceiling.
func TestJSONDocumentOfSharedPartsRefused(t *testing.T) {
	e := sqlview.New(openDB(t), defaults())
	for _, st := range []string{
		"WITH RECURSIVE t(n, s) AS (SELECT 1, JSON_ARRAY('xxxxxxxxxxxxxxxx') UNION ALL SELECT n+1, JSON_ARRAY(s,s) FROM t WHERE n<40) SELECT n, length(s) FROM t ORDER BY n DESC LIMIT 1",
		"WITH RECURSIVE t(n, s) AS (SELECT 1, JSON_ARRAY('xxxxxxxxxxxxxxxx') UNION ALL SELECT n+1, JSON_MERGE_PRESERVE(s,s) FROM t WHERE n<40) SELECT n, length(s) FROM t ORDER BY n DESC LIMIT 1",
		"WITH RECURSIVE t(n, s) AS (SELECT 1, JSON_OBJECT('k', 'xxxxxxxxxxxxxxxx') UNION ALL SELECT n+1, JSON_OBJECT('a', s, 'b', s) FROM t WHERE n<40) SELECT n, CAST(s AS CHAR) FROM t ORDER BY n DESC LIMIT 1",
		"WITH RECURSIVE t(n, s) AS (SELECT 1, JSON_ARRAY('xxxxxxxxxxxxxxxx') UNION ALL SELECT n+1, JSON_ARRAY_APPEND(s, '$', s) FROM t WHERE n<40) SELECT n, length(s) FROM t ORDER BY n DESC LIMIT 1",
	} {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		done := make(chan sqlview.Result, 1)
		go func() {
			res, err := e.Query(context.Background(), st, nil)
			if err != nil || len(res) != 1 {
				t.Errorf("%s: %v %+v", st, err, res)
				done <- sqlview.Result{}
				return
			}
			done <- res[0]
		}()
		var r sqlview.Result
		start := time.Now()
		select {
		case r = <-done:
		case <-time.After(20 * time.Second):
			t.Fatalf("%s: no answer in 20 s", st)
		}
		runtime.ReadMemStats(&after)
		if r.Err == nil || r.Err.Code != fault.DBTooLarge || !strings.Contains(r.Err.Msg, "JSON_") || !strings.Contains(r.Err.Msg, "16 MiB") {
			t.Fatalf("%s: %+v", st, r.Err)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("%s: answered after %s", st, d)
		}
		if after.HeapAlloc > before.HeapAlloc && after.HeapAlloc-before.HeapAlloc > 128<<20 {
			t.Errorf("%s: heap grew by %d bytes", st, after.HeapAlloc-before.HeapAlloc)
		}
		if after.TotalAlloc-before.TotalAlloc > 512<<20 {
			t.Errorf("%s: allocated %d bytes", st, after.TotalAlloc-before.TotalAlloc)
		}
	}
}

// JSON builders over large values are refused past 16 MiB, naming the
// function; JSON_ARRAYAGG and JSON_OBJECTAGG are refused as unsupported,
// with help naming GROUP_CONCAT; ordinary JSON still answers.
func TestJSONValuesBounded(t *testing.T) {
	db := openDB(t)
	fillPalace(t, db, 10, 2, 0, 0)
	e := sqlview.New(db, defaults())
	big := "REPEAT('x', 10000000)"
	for _, st := range []struct{ sql, fn string }{
		{"SELECT JSON_ARRAY(" + big + ", " + big + ")", "JSON_ARRAY"},
		{"SELECT length(JSON_ARRAY(" + big + ", " + big + "))", "JSON_ARRAY"},
		{"SELECT JSON_OBJECT('a', " + big + ", 'b', " + big + ")", "JSON_OBJECT"},
		{"SELECT JSON_MERGE_PRESERVE(JSON_ARRAY(" + big + "), JSON_ARRAY(" + big + "))", "JSON_MERGE_PRESERVE"},
		{"SELECT JSON_MERGE_PATCH(JSON_OBJECT('a', " + big + "), JSON_OBJECT('b', " + big + "))", "JSON_MERGE_PATCH"},
		{"SELECT JSON_SET(JSON_ARRAY(" + big + "), '$[1]', " + big + ")", "JSON_SET"},
		{"SELECT JSON_ARRAY_APPEND(JSON_ARRAY(" + big + "), '$', " + big + ")", "JSON_ARRAY_APPEND"},
		{"SELECT JSON_QUOTE(REPEAT('\"', 9000000))", "JSON_QUOTE"},
		{"SELECT JSON_ARRAY(REPEAT('\\\\', 9000000))", "JSON_ARRAY"},
		// Several paths repeat one document: the result is measured.
		{"SELECT length(JSON_EXTRACT(JSON_ARRAY(REPEAT('x', 1000000))" + strings.Repeat(", '$'", 18) + "))", "JSON_EXTRACT"},
	} {
		r := failed(t, e, st.sql)
		if r.Err.Code != fault.DBTooLarge || !strings.Contains(r.Err.Msg, st.fn+" would make") || !strings.Contains(r.Err.Msg, "16 MiB") {
			t.Errorf("%s: %s %q", st.sql, r.Err.Code, r.Err.Msg)
		}
	}
	union := strings.TrimSuffix(strings.Repeat("SELECT "+big+" AS v UNION ALL ", 10), " UNION ALL ")
	for _, st := range []string{
		"SELECT length(JSON_ARRAYAGG(v)) FROM (" + union + ") AS u",
		"SELECT JSON_OBJECTAGG(id, content) FROM drawers",
		"SELECT JSON_ARRAYAGG(id) OVER () FROM drawers",
	} {
		r := failed(t, e, st)
		if r.Err.Code != fault.DBUnsupported || !strings.Contains(r.Err.Help, "GROUP_CONCAT") || !strings.Contains(r.Err.Msg, "AGG") {
			t.Errorf("%s: %s %q %q", st, r.Err.Code, r.Err.Msg, r.Err.Help)
		}
	}
	ok := one(t, e, "SELECT JSON_ARRAY(1, 'a'), JSON_OBJECT('k', 'v'), JSON_EXTRACT('{\"a\": [1, 2]}', '$.a[1]'), length(JSON_ARRAY(REPEAT('x', 1000000))), "+
		"JSON_MERGE_PATCH('{\"a\": 1}', '{\"b\": 2}'), JSON_SET('[1]', '$[1]', 2), JSON_QUOTE('a\"b'), JSON_ARRAY(NULL)", nil)
	want := `[[1 a] map[k:v] 2 1000004 map[a:1 b:2] [1 2] "a\"b" [<nil>]]`
	if got := fmt.Sprint(ok.Rows[0]); got != want {
		t.Errorf("ordinary JSON: %s, want %s", got, want)
	}
	tags := one(t, e, "SELECT JSON_OBJECT('k', tags) FROM drawers LIMIT 1", nil)
	if s := fmt.Sprint(tags.Rows[0][0]); !strings.HasPrefix(s, "map[k:[") {
		t.Errorf("JSON_OBJECT of tags: %s", s)
	}
	if n := one(t, e, "SELECT count(*) FROM drawers WHERE JSON_LENGTH(JSON_ARRAY(tags, id)) = 2", nil); n.Rows[0][0] != int64(10) {
		t.Errorf("JSON over drawers: %v", n.Rows)
	}
}

// A document nested past 100 levels (MySQL's limit) is refused by the
// JSON function that would read or build it, so no walk nests without
// end; JSON_SEARCH's paths (one per matched string, as long as its depth)
// are measured before they are written.
func TestJSONDepthAndPathsBounded(t *testing.T) {
	e := sqlview.New(openDB(t), defaults())
	deep := failed(t, e, "WITH RECURSIVE t(n, s) AS (SELECT 1, JSON_ARRAY('a') UNION ALL SELECT n+1, JSON_ARRAY(s, 'a') FROM t WHERE n<3000) SELECT length(JSON_SEARCH(s, 'all', 'a')) FROM t ORDER BY n DESC LIMIT 1")
	if deep.Err.Code != fault.DBTooLarge || !strings.Contains(deep.Err.Msg, "deeper than 100 levels") || !strings.Contains(deep.Err.Help, "JSON_EXTRACT") {
		t.Errorf("a document 3000 deep: %+v", deep.Err)
	}
	if ok := one(t, e, "WITH RECURSIVE t(n, s) AS (SELECT 1, JSON_ARRAY('a') UNION ALL SELECT n+1, JSON_ARRAY(s, 'a') FROM t WHERE n<99) SELECT length(JSON_SEARCH(s, 'all', 'a')) FROM t ORDER BY n DESC LIMIT 1", nil); ok.Rows[0][0] != int64(15345) {
		t.Errorf("a document 99 deep: %v", ok.Rows)
	}
	// A million strings 90 levels down: 5 MB of text, 300 MB of paths.
	paths := failed(t, e, "WITH RECURSIVE t(n, s) AS (SELECT 1, JSON_ARRAY('a') UNION ALL SELECT n+1, IF(n < 20, JSON_MERGE_PRESERVE(s, s), JSON_ARRAY(s)) FROM t WHERE n<90) SELECT length(JSON_SEARCH(s, 'all', 'a')) FROM t ORDER BY n DESC LIMIT 1")
	if paths.Err.Code != fault.DBTooLarge || !strings.Contains(paths.Err.Msg, "JSON_SEARCH would make") {
		t.Errorf("JSON_SEARCH of a million deep strings: %+v", paths.Err)
	}
}
