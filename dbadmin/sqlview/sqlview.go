// Package sqlview answers read-only SQL over the live store: a real
// embedded SQL engine (go-mysql-server, MySQL's dialect) planning over
// tables that read the store through one consistent view per query. It is
// what the database admin listener (package dbadmin) runs a `query` with.
// Nothing here writes: a statement that would change the palace is
// refused with loci::db::read_only.
package sqlview

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime/metrics"
	"strings"
	"sync/atomic"
	"time"

	sqle "github.com/dolthub/go-mysql-server"
	"github.com/dolthub/go-mysql-server/memory"
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/analyzer"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/vt/sqlparser"

	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/store"
)

// Limits bound one query.
type Limits struct {
	// ScanRows is how many rows one statement may read from the store
	// (every table, every pass); past it the statement fails with
	// loci::db::too_large.
	ScanRows int
	// ResultRows is how many rows one statement returns; past it the rows
	// are cut and Result.Truncated is set.
	ResultRows int
	// Timeout bounds the whole query (all its statements):
	// loci::db::timeout past it.
	Timeout time.Duration
	// MemoryBytes bounds what the engine may hold in memory for one
	// statement (the rows a sort, a grouping, a DISTINCT or a join keeps):
	// past it the statement fails with loci::db::too_large. Zero means
	// DefaultMemoryBytes.
	MemoryBytes int64
	// ResultBytes bounds the size of one statement's rows (their text,
	// roughly as JSON): past it the rows are cut and Result.Truncated is
	// set, as at ResultRows. A drawer holds up to a MiB, so 10,000 rows of
	// content could otherwise make a 10 GiB answer. Zero means
	// DefaultResultBytes.
	ResultBytes int64
}

// DefaultMemoryBytes is Limits.MemoryBytes when none is set.
const DefaultMemoryBytes = 256 << 20

// DefaultResultBytes is Limits.ResultBytes when none is set.
const DefaultResultBytes = 64 << 20

// Database is the one database the engine serves, Namespace the one
// namespace (`use` accepts these).
const (
	Namespace = "loci"
	Database  = "palace"
)

// Engine runs SQL over a store. Safe for concurrent use: each Query reads
// its own view, in its own session.
type Engine struct {
	db     store.DB
	limits Limits
	pro    sql.DatabaseProvider
	gms    *sqle.Engine
	// defs are the store's tables, then the extra ones.
	defs []*tableDef
}

// New is an engine over db, offering the store's tables and the extra
// tables given (their rows come from the daemon: see Extra). An extra
// table that cannot be served (a name taken or not lowercase, a column of
// no known type, no Rows) panics: the daemon's wiring is wrong.
func New(db store.DB, l Limits, extras ...Extra) *Engine {
	all := append([]*tableDef(nil), defs...)
	taken := map[string]bool{}
	for _, d := range defs {
		taken[d.name] = true
	}
	for _, x := range extras {
		all = append(all, extraDef(x, taken))
	}
	pro := memory.NewDBProvider(newDatabase(all))
	// Read-only twice over: the engine's own flag refuses a plan that
	// writes, and guard refuses the statement before it is planned.
	gms := sqle.New(analyzer.NewDefault(pro), &sqle.Config{IsReadOnly: true})
	boundFunctions(gms)
	return &Engine{db: db, limits: l, pro: pro, gms: gms, defs: all}
}

// Limits is the bounds in force.
func (e *Engine) Limits() Limits { return e.limits }

// Column is one column of a result or a table.
type Column struct {
	Name string `json:"name"`
	// Type is the SQL type as the engine names it, in capitals
	// (VARCHAR(255), BIGINT, DATETIME(6), DOUBLE, JSON, TINYINT(1) for a
	// boolean, ...).
	Type string `json:"type"`
	// Doc says what the column holds (tables only).
	Doc string `json:"doc,omitempty"`
}

// Table is one table the engine offers.
type Table struct {
	Name    string   `json:"name"`
	Doc     string   `json:"doc"`
	Columns []Column `json:"columns"`
	// Indexed names the columns whose predicates are answered by the
	// store's own indexes (equality, and ranges where noted in Doc).
	Indexed []string `json:"indexed"`
}

// Result is one statement's answer.
type Result struct {
	// Statement is the statement's text as run.
	Statement string   `json:"statement"`
	Columns   []Column `json:"columns"`
	// Rows hold JSON-ready values: string, int64, float64, bool, nil;
	// times as RFC 3339 strings with nanoseconds, JSON columns as
	// decoded JSON; binary values (BLOB, VARBINARY, BINARY, x'00ff',
	// UNHEX(...)) as []byte, which encoding/json writes as base64 and
	// CBOR as a byte string. A []byte variable binds as a binary value.
	Rows [][]any `json:"rows"`
	// Truncated says the rows were cut at Limits.ResultRows or
	// Limits.ResultBytes; TruncatedBy says which: "rows" or "bytes" (""
	// when not cut).
	Truncated   bool   `json:"truncated"`
	TruncatedBy string `json:"truncated_by,omitempty"`
	// RowsRead is how many rows the statement read from the store.
	RowsRead int           `json:"rows_read"`
	Duration time.Duration `json:"-"`
	// Err is a failed statement's error; the statements after a failed one
	// are not run (their results are absent).
	Err *fault.Error `json:"-"`
}

// Help texts.
const (
	helpInvalid  = "list the tables with SHOW TABLES and a table's columns with DESCRIBE <table> (their comments with SHOW FULL COLUMNS FROM <table> or SELECT column_name, column_comment FROM information_schema.columns WHERE table_name = '<table>'); the dialect is MySQL's"
	helpReadOnly = "the SQL console only reads: change memory through REST, MCP or the CLI"
	helpTooLarge = "narrow the statement with WHERE on an indexed column (an id, a room_id, an entity_id; see SHOW INDEX FROM <table>), add LIMIT, steer a join with a hint (SELECT /*+ JOIN_ORDER(e, m) LOOKUP_JOIN(e, m) */ ...), or raise db.max_scan_rows"
	helpTimeout  = "narrow the query with WHERE on an indexed column, or raise db.query_timeout_secs"
)

// runKey carries a query's run on its context.
type runKey struct{}

// run is one query's state: the store's view every statement reads, and
// the statement being run's counters. The view is not for concurrent use,
// and nothing here uses it concurrently: the engine executes a
// statement's plan on the calling goroutine (go-mysql-server v0.20.0 has
// no parallel exchange), every table reads the store in its iterator's
// Next, and a visitor without a resume point runs as a coroutine
// (visitPages, iter.Pull) that only runs while that Next waits for it.
type run struct {
	ctx    context.Context
	r      store.Reader
	limits Limits
	// rows is how many rows the statement has read; fail is the fault a
	// table or a limit raised (the engine may wrap errors).
	rows int
	fail *fault.Error
	// names caches wing and room names by id for the query.
	names map[string]string
	// budget is the statement's memory budget.
	budget *heapBudget
	// profile is the serving embedding profile (drawers.embedded); ""
	// when none is recorded.
	profile string
	// pulls are the stop funcs of the statement's store visitors that
	// run as coroutines (visitPages) and are still open, by id; lastPull
	// numbers them.
	pulls    map[uint64]func()
	lastPull uint64
	// extras are the rows of the extra tables the statement has read,
	// by table (each read once per statement).
	extras map[string][]sql.Row
}

// register records the stop func of a visitor the statement holds open.
func (q *run) register(stop func()) uint64 {
	if q.pulls == nil {
		q.pulls = map[uint64]func(){}
	}
	q.lastPull++
	q.pulls[q.lastPull] = stop
	return q.lastPull
}

// unregister forgets a stopped visitor.
func (q *run) unregister(id uint64) { delete(q.pulls, id) }

// stopPulls stops every visitor still open: the statement has ended (run
// to its end, failed, timed out or cut at a limit), so none may outlive
// it and hold the view's reads open past the view. The row iterators
// stop theirs when they are closed; this catches any the engine did not
// close.
func (q *run) stopPulls() {
	for _, stop := range q.pulls {
		stop()
	}
	clear(q.pulls)
}

// metaServing is the operational record where the vectors' owner keeps
// the serving embedding profile, as "<name>|<identity>".
const metaServing = "embedding/serving"

func runOf(ctx *sql.Context) (*run, error) {
	q, ok := ctx.Value(runKey{}).(*run)
	if !ok {
		return nil, errors.New("sqlview: a table read outside a query")
	}
	return q, nil
}

// read counts n rows read from the store and fails past the scan limit.
func (q *run) read(n int) error {
	q.rows += n
	if q.limits.ScanRows > 0 && q.rows > q.limits.ScanRows {
		if q.fail == nil {
			q.fail = fault.Newf(fault.DBTooLarge, helpTooLarge,
				"the statement read more than %d rows from the store (db.max_scan_rows) and was stopped", q.limits.ScanRows)
		}
		return q.fail
	}
	return nil
}

// storeErr is a store read's failure (or the context's end) as the
// statement's error.
func (q *run) storeErr(err error) error {
	if q.fail != nil {
		return q.fail
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) || q.ctx.Err() != nil {
		return err
	}
	var fe *fault.Error
	if errors.As(err, &fe) {
		q.fail = fe
		return fe
	}
	q.fail = fault.Wrap(fault.StoreBackendFailed, err, "reading the store failed: "+err.Error(), "see the daemon's log; the store may be closing")
	return q.fail
}

func (q *run) wingName(id string) any {
	if n, ok := q.names[id]; ok {
		return str(n)
	}
	n := ""
	if w, err := q.r.Wing(id); err == nil && w != nil {
		n = w.Name
	}
	q.names[id] = n
	return str(n)
}

func (q *run) roomName(id string) any {
	if n, ok := q.names[id]; ok {
		return str(n)
	}
	n := ""
	if r, err := q.r.Room(id); err == nil && r != nil {
		n = r.Name
	}
	q.names[id] = n
	return str(n)
}

// Query runs one or more statements (separated by ';', split by the
// engine's own parser) against one consistent view of the store, in order,
// with vars as user variables (@name). A statement's failure (an invalid
// or refused statement, a limit, the timeout) is in its Result, and the
// statements after it are not run. The error is for the query as a whole:
// nothing to run, or the store's view could not be opened.
func (e *Engine) Query(ctx context.Context, sqlText string, vars map[string]any) ([]Result, error) {
	pieces, err := sqlparser.SplitStatementToPieces(sqlText)
	if err != nil {
		return nil, fault.New(fault.DBQueryInvalid, err.Error(), helpInvalid)
	}
	var stmts []string
	for _, p := range pieces {
		if p = strings.TrimSpace(p); p != "" && p != ";" {
			stmts = append(stmts, p)
		}
	}
	if len(stmts) == 0 {
		return nil, fault.New(fault.DBQueryInvalid, "no statement to run", helpInvalid)
	}
	if e.limits.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, e.limits.Timeout)
		defer cancel()
	}
	var results []Result
	profile := ""
	if raw, ok, err := e.db.GetMeta(ctx, metaServing); err == nil && ok {
		profile, _, _ = strings.Cut(raw, "|")
	}
	verr := e.db.View(ctx, func(r store.Reader) error {
		q := &run{ctx: ctx, r: r, limits: e.limits, names: map[string]string{}, profile: profile}
		sctx := e.context(ctx, q)
		for name, v := range vars {
			if err := setVar(sctx, name, v); err != nil {
				results = append(results, Result{Statement: "SET @" + name, Err: fault.Newf(fault.DBQueryInvalid, helpInvalid, "variable %s: %v", name, err)})
				return nil
			}
		}
		for _, st := range stmts {
			res := e.statement(sctx, q, st)
			results = append(results, res)
			if res.Err != nil {
				break
			}
		}
		return nil
	})
	if verr != nil {
		if len(results) > 0 {
			return results, nil
		}
		if errors.Is(ctx.Err(), context.Canceled) {
			return nil, canceled()
		}
		if ctx.Err() != nil {
			return nil, fault.Wrap(fault.DBTimeout, verr, "the query ended before it could read the store: "+ctx.Err().Error(), helpTimeout)
		}
		return nil, fault.Wrap(fault.StoreBackendFailed, verr, "the store's view could not be read: "+verr.Error(), "see the daemon's log")
	}
	return results, nil
}

// context is a query's engine context: its own session (variables live for
// the query), its own memory manager (the statement's memory budget) and
// the run on the context the tables read.
func (e *Engine) context(ctx context.Context, q *run) *sql.Context {
	budget := e.limits.MemoryBytes
	if budget <= 0 {
		budget = DefaultMemoryBytes
	}
	sess := memory.NewSession(sql.NewBaseSession(), e.pro)
	q.budget = newHeapBudget(uint64(budget))
	sctx := sql.NewContext(context.WithValue(ctx, runKey{}, q), sql.WithSession(sess),
		sql.WithMemoryManager(sql.NewMemoryManager(q.budget)))
	sctx.SetCurrentDatabase(Database)
	readOnlySession(sctx)
	return sctx
}

// statement runs one statement to its end (or to the result limit).
func (e *Engine) statement(sctx *sql.Context, q *run, st string) (res Result) {
	start := time.Now()
	q.rows, q.fail, q.extras = 0, nil, nil
	res.Statement = st
	defer func() {
		q.stopPulls()
		res.RowsRead = q.rows
		res.Duration = time.Since(start)
		if res.Err != nil {
			res.Rows, res.Columns = nil, nil
		}
	}()
	if ferr := guard(st); ferr != nil {
		res.Err = ferr
		return res
	}
	q.budget.reset()
	schema, iter, _, err := e.gms.QueryWithBindings(sctx, planText(st), nil, nil, nil)
	if err != nil {
		res.Err = q.fault(err)
		return res
	}
	defer iter.Close(sctx)
	for _, c := range schema {
		res.Columns = append(res.Columns, Column{Name: c.Name, Type: strings.ToUpper(c.Type.String())})
	}
	res.Rows = [][]any{}
	maxBytes := e.limits.ResultBytes
	if maxBytes <= 0 {
		maxBytes = DefaultResultBytes
	}
	var size int64
	for {
		row, err := iter.Next(sctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			res.Err = q.fault(err)
			return res
		}
		if len(schema) == 0 {
			// SET and USE: no columns, no rows.
			continue
		}
		if e.limits.ResultRows > 0 && len(res.Rows) >= e.limits.ResultRows {
			res.Truncated, res.TruncatedBy = true, "rows"
			break
		}
		out := make([]any, len(row))
		var n int64
		for i, v := range row {
			var typ sql.Type
			if i < len(schema) {
				typ = schema[i].Type
			}
			out[i] = jsonValue(v, typ)
			n += approxSize(out[i])
		}
		if n > maxBytes {
			res.Err = rowTooLarge(n, maxBytes)
			return res
		}
		if size+n > maxBytes {
			res.Truncated, res.TruncatedBy = true, "bytes"
			break
		}
		size += n
		res.Rows = append(res.Rows, out)
	}
	return res
}

// fault is an engine error as the statement's fault.
func (q *run) fault(err error) *fault.Error {
	if q.fail != nil {
		return q.fail
	}
	var fe *fault.Error
	switch {
	case errors.As(err, &fe):
		return fe
	case errors.Is(q.ctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded):
		return fault.Newf(fault.DBTimeout, helpTimeout, "the query ran past its time limit (db.query_timeout_secs) and was stopped")
	case errors.Is(err, context.Canceled) || q.ctx.Err() != nil:
		return canceled()
	case sql.ErrNoMemoryAvailable.Is(err):
		return fault.Newf(fault.DBTooLarge, "add LIMIT, narrow the statement with WHERE on an indexed column, or sort, group and join fewer rows",
			"the statement needed more than its memory budget (the rows a sort, a grouping, a DISTINCT or a join keeps) and was stopped")
	case sql.ErrReadOnly.Is(err):
		return fault.New(fault.DBReadOnly, "the statement would change the palace: refused", helpReadOnly)
	}
	return invalid(err)
}

// setVar defines a user variable of the query.
func setVar(ctx *sql.Context, name string, v any) error {
	name = strings.TrimPrefix(name, "@")
	if name == "" {
		return errors.New("a variable needs a name")
	}
	var typ sql.Type
	switch x := v.(type) {
	case nil:
		typ = types.Null
	case string:
		typ = types.LongText
	case []byte:
		typ = types.LongBlob
	case bool:
		typ, v = types.Boolean, boolv(x)
	case int:
		typ, v = types.Int64, int64(x)
	case int64:
		typ = types.Int64
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			typ, v = types.Int64, int64(x)
		} else {
			typ = types.Float64
		}
	default:
		typ, v = types.JSON, types.JSONDocument{Val: v}
	}
	return ctx.SetUserVariable(ctx, name, v, typ)
}

// jsonValue is an engine value as JSON-ready data.
func jsonValue(v any, typ sql.Type) any {
	switch x := v.(type) {
	case nil:
		return nil
	case string:
		if isBinary(typ) {
			return []byte(x)
		}
		return x
	case []byte:
		return binaryValue(x, typ)
	case bool:
		return x
	case int8:
		if typ != nil && types.IsBoolean(typ) {
			return x != 0
		}
		return int64(x)
	case int16:
		return int64(x)
	case int32:
		return int64(x)
	case int64:
		return x
	case int:
		return int64(x)
	case uint8:
		return int64(x)
	case uint16:
		return int64(x)
	case uint32:
		return int64(x)
	case uint64:
		if x > math.MaxInt64 {
			return fmt.Sprint(x)
		}
		return int64(x)
	case float32:
		return jsonFloat(float64(x))
	case float64:
		return jsonFloat(x)
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano)
	case sql.JSONWrapper:
		j, err := x.ToInterface()
		if err != nil {
			return nil
		}
		return j
	case fmt.Stringer:
		// decimals, TIME spans, enums and sets: their text.
		return x.String()
	}
	return fmt.Sprint(v)
}

// approxSize is about the bytes a value takes in a JSON answer.
func approxSize(v any) int64 {
	switch x := v.(type) {
	case string:
		return int64(len(x)) + 3
	case []byte:
		return int64(len(x))*4/3 + 6
	case map[string]any:
		n := int64(2)
		for k, e := range x {
			n += int64(len(k)) + 4 + approxSize(e)
		}
		return n
	case []any:
		n := int64(2)
		for _, e := range x {
			n += 1 + approxSize(e)
		}
		return n
	}
	return 8
}

func jsonFloat(f float64) any {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return fmt.Sprint(f)
	}
	return f
}

// heapBudget is the memory reporter of a statement: go-mysql-server asks
// it before every row a sort, a grouping, a DISTINCT or a join cache keeps
// (sql.MemoryManager's caches), and fails the statement with
// sql.ErrNoMemoryAvailable once the process's heap has grown by more than
// the budget since the statement began. Reading the heap costs little
// (runtime/metrics, no stop of the world) but is done every 256 rows kept.
type heapBudget struct {
	max   uint64
	base  atomic.Uint64
	calls atomic.Uint64
	last  atomic.Uint64
}

func newHeapBudget(max uint64) *heapBudget {
	b := &heapBudget{max: max}
	b.reset()
	return b
}

// heapBytes is the heap's objects now (live and not yet collected).
func heapBytes() uint64 { return readMetric("/memory/classes/heap/objects:bytes") }

// liveBytes is the heap that was live at the last collection.
func liveBytes() uint64 { return readMetric("/gc/heap/live:bytes") }

func readMetric(name string) uint64 {
	s := []metrics.Sample{{Name: name}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// reset starts the budget from the heap live at the last collection (not
// the heap now, which may hold garbage another part of the daemon made):
// the budget errs strict, and garbage counted against it is dropped by the
// collection the engine forces before it gives up (releaseMemoryIfNeeded
// runs the GC and asks again).
func (b *heapBudget) reset() {
	base := liveBytes()
	if base == 0 {
		base = heapBytes()
	}
	b.base.Store(base)
	b.calls.Store(0)
	b.last.Store(0)
}

// MaxMemory is the budget as the engine sees it: the heap at the
// statement's start plus the budget.
func (b *heapBudget) MaxMemory() uint64 { return b.base.Load() + b.max }

// UsedMemory is the heap now (read every 256 calls, and at every call
// once past the budget so that a collection's relief is seen).
func (b *heapBudget) UsedMemory() uint64 {
	n := b.calls.Add(1)
	last := b.last.Load()
	if n%256 == 1 || last >= b.MaxMemory() {
		last = heapBytes()
		b.last.Store(last)
	}
	return last
}

// Tables lists the tables with their columns (types as the engine names
// them) and the columns the store's indexes answer.
func (e *Engine) Tables() []Table {
	db := newDatabase(e.defs)
	out := make([]Table, 0, len(e.defs))
	for _, d := range e.defs {
		t := Table{Name: d.name, Doc: d.doc, Indexed: []string{}}
		for _, c := range db.tables[d.name].schema {
			t.Columns = append(t.Columns, Column{Name: c.Name, Type: strings.ToUpper(c.Type.String()), Doc: c.Comment})
		}
		seen := map[string]bool{}
		for _, ix := range d.indexes {
			for _, c := range ix.cols {
				if !seen[c] {
					seen[c] = true
					t.Indexed = append(t.Indexed, c)
				}
			}
		}
		out = append(out, t)
	}
	return out
}
