package sqlview

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
)

// database is the one database ("palace") of read-only tables. It offers
// no creation, alteration or deletion interface: the engine has nothing to
// write through.
type database struct {
	tables map[string]*table
	names  []string
}

func newDatabase(defs []*tableDef) *database {
	db := &database{tables: map[string]*table{}}
	for _, d := range defs {
		t := &table{def: d}
		t.schema = make(sql.Schema, len(d.cols))
		for i, c := range d.cols {
			t.schema[i] = &sql.Column{Name: c.name, Type: c.typ, Nullable: c.nullable, Source: d.name, DatabaseSource: Database, Comment: c.doc}
		}
		for i := range d.indexes {
			t.indexes = append(t.indexes, &index{table: t, def: &d.indexes[i]})
		}
		db.tables[d.name] = t
		db.names = append(db.names, d.name)
	}
	return db
}

func (db *database) Name() string { return Database }

func (db *database) GetTableInsensitive(_ *sql.Context, name string) (sql.Table, bool, error) {
	t, ok := db.tables[strings.ToLower(name)]
	if !ok {
		return nil, false, nil
	}
	return t, true, nil
}

func (db *database) GetTableNames(*sql.Context) ([]string, error) { return db.names, nil }

// table is a tableDef as the engine sees it: a scan, or (through
// IndexedAccess) the rows of an index lookup.
type table struct {
	def     *tableDef
	schema  sql.Schema
	indexes []*index
	// lookup is set on the table IndexedAccess returns.
	lookup *sql.IndexLookup
	// pnames is the columns the engine said it needs (WithProjections);
	// nil for all. Rows stay full width (the engine's plan addresses our
	// rows by the full schema's positions), so the projection is a hint:
	// a drawers scan that needs only ids and names reads keys, not
	// records.
	pnames []string
}

var (
	_ sql.Table                 = (*table)(nil)
	_ sql.IndexAddressableTable = (*table)(nil)
	_ sql.IndexedTable          = (*table)(nil)
	_ sql.CommentedTable        = (*table)(nil)
	_ sql.ProjectedTable        = (*table)(nil)
)

// WithProjections is the table knowing which columns the statement
// needs: a drawers scan that needs no more than ids and names reads the
// rooms' key indexes only (keysOnly).
func (t *table) WithProjections(cols []string) sql.Table {
	c := *t
	c.pnames = cols
	return &c
}

// Projections is the columns asked for; nil for all.
func (t *table) Projections() []string { return t.pnames }

// needs reports whether the statement needs the column (every column
// when the engine gave no projection).
func (t *table) needs(col string) bool {
	if t.pnames == nil {
		return true
	}
	for _, n := range t.pnames {
		if strings.EqualFold(n, col) {
			return true
		}
	}
	return false
}

// keysOnly reports whether the projection needs only columns the def's
// keys-only reads give.
func (t *table) keysOnly() bool {
	if t.pnames == nil || t.def.keyCols == nil {
		return false
	}
	for _, n := range t.pnames {
		if !t.def.keyCols[strings.ToLower(n)] {
			return false
		}
	}
	return true
}

func (t *table) Name() string               { return t.def.name }
func (t *table) String() string             { return t.def.name }
func (t *table) Schema() sql.Schema         { return t.schema }
func (t *table) Collation() sql.CollationID { return sql.Collation_Default }
func (t *table) Comment() string            { return t.def.doc }
func (t *table) PreciseMatch() bool         { return false }
func (t *table) GetIndexes(*sql.Context) ([]sql.Index, error) {
	out := make([]sql.Index, len(t.indexes))
	for i, ix := range t.indexes {
		out[i] = ix
	}
	return out, nil
}

// IndexedAccess is the table reading one index's lookup.
func (t *table) IndexedAccess(_ *sql.Context, lookup sql.IndexLookup) sql.IndexedTable {
	if _, ok := lookup.Index.(*index); !ok {
		return nil
	}
	c := *t
	c.lookup = &lookup
	return &c
}

// partition is the whole table (ix nil) or one key of an index.
type partition struct {
	ix   *index
	key  string
	span *timeSpan
}

func (p *partition) Key() []byte {
	if p.ix == nil {
		return []byte("all")
	}
	return []byte(p.ix.def.name + "/" + p.key)
}

func (t *table) Partitions(*sql.Context) (sql.PartitionIter, error) {
	if t.lookup != nil {
		return t.lookupPartitions(*t.lookup)
	}
	return sql.PartitionsToPartitionIter(&partition{}), nil
}

func (t *table) LookupPartitions(_ *sql.Context, lookup sql.IndexLookup) (sql.PartitionIter, error) {
	return t.lookupPartitions(lookup)
}

func (t *table) lookupPartitions(lookup sql.IndexLookup) (sql.PartitionIter, error) {
	ix, ok := lookup.Index.(*index)
	if !ok {
		return nil, fmt.Errorf("sqlview: a lookup on a foreign index %s", lookup.Index.ID())
	}
	if lookup.IsEmptyRange {
		return sql.PartitionsToPartitionIter(), nil
	}
	keys, ok := ix.points(lookup.Ranges)
	if !ok {
		return nil, fmt.Errorf("sqlview: index %s.%s cannot answer %s", t.def.name, ix.def.name, lookup.Ranges)
	}
	parts := make([]sql.Partition, len(keys))
	for i := range keys {
		parts[i] = &partition{ix: ix, key: keys[i].key, span: keys[i].span}
	}
	return sql.PartitionsToPartitionIter(parts...), nil
}

func (t *table) PartitionRows(ctx *sql.Context, p sql.Partition) (sql.RowIter, error) {
	q, err := runOf(ctx)
	if err != nil {
		return nil, err
	}
	pt, _ := p.(*partition)
	it := &rowIter{q: q, embedded: t.def.name == "drawers" && q.profile != "" && t.needs("embedded")}
	keys := t.keysOnly()
	switch {
	case (pt == nil || pt.ix == nil) && keys:
		it.p = t.def.keysScan(q)
	case pt == nil || pt.ix == nil:
		it.p = t.def.scan(q)
	case keys && pt.ix.def.keysLookup != nil && (pt.span == nil || pt.span.since == nil && pt.span.until == nil):
		it.p = pt.ix.def.keysLookup(q, pt.key)
	default:
		it.p = pt.ix.def.lookup(q, pt.key, pt.span)
	}
	return it, nil
}

// rowIter hands the engine a pager's rows one at a time, reading the next
// page only when the last is spent, and counts every row against the
// statement's scan limit. It stops its pager (ending the store visitors
// the pager holds open) as soon as it will read no more: at the last
// page, on an error, a cancelled context or the scan limit, and when the
// engine closes it (a LIMIT reached, a join or a subquery done with it,
// the statement cut at its result limit).
type rowIter struct {
	q    *run
	p    pager[sql.Row]
	buf  []sql.Row
	done bool
	// err is the error that ended the iterator, returned again if asked.
	err error
	// embedded: fill drawers.embedded (a vector read per row).
	embedded bool
}

func (it *rowIter) Next(ctx *sql.Context) (sql.Row, error) {
	if it.err != nil {
		return nil, it.err
	}
	for len(it.buf) == 0 {
		if it.done {
			return nil, io.EOF
		}
		if err := ctx.Err(); err != nil {
			return nil, it.fail(err)
		}
		rows, done, err := it.p.next()
		if err != nil {
			return nil, it.fail(it.q.storeErr(err))
		}
		it.buf, it.done = rows, done
		if done {
			it.p.close()
		}
	}
	row := it.buf[0]
	it.buf = it.buf[1:]
	if err := it.q.read(1); err != nil {
		return nil, it.fail(err)
	}
	if it.embedded {
		v, err := it.q.r.Embedding(row[0].(string), it.q.profile)
		if err != nil {
			return nil, it.fail(it.q.storeErr(err))
		}
		row[embeddedCol] = boolv(v != nil)
	}
	return row, nil
}

// fail ends the iterator with err: its pager is stopped.
func (it *rowIter) fail(err error) error {
	it.Close(nil)
	it.err = err
	return err
}

// Close stops the pager; the iterator reads nothing more.
func (it *rowIter) Close(*sql.Context) error {
	it.p.close()
	it.buf, it.done = nil, true
	return nil
}

// index is an indexDef as the engine sees it.
type index struct {
	table *table
	def   *indexDef
}

var _ sql.Index = (*index)(nil)

func (ix *index) ID() string       { return ix.def.name }
func (ix *index) Database() string { return Database }
func (ix *index) Table() string    { return ix.table.def.name }
func (ix *index) Expressions() []string {
	out := make([]string, len(ix.def.cols))
	for i, c := range ix.def.cols {
		out[i] = ix.table.def.name + "." + c
	}
	return out
}
func (ix *index) IsUnique() bool    { return ix.def.unique }
func (ix *index) IsSpatial() bool   { return false }
func (ix *index) IsFullText() bool  { return false }
func (ix *index) IsVector() bool    { return false }
func (ix *index) Comment() string   { return "the store's own index" }
func (ix *index) IndexType() string { return "BTREE" }
func (ix *index) IsGenerated() bool { return false }
func (ix *index) ColumnExpressionTypes() []sql.ColumnExpressionType {
	out := make([]sql.ColumnExpressionType, len(ix.def.cols))
	for i, c := range ix.def.cols {
		out[i] = sql.ColumnExpressionType{Expression: ix.table.def.name + "." + c, Type: ix.table.schema[ix.table.schema.IndexOfColName(c)].Type}
	}
	return out
}
func (ix *index) CanSupportOrderBy(sql.Expression) bool { return false }
func (ix *index) PrefixLengths() []uint16               { return nil }

// CanSupport accepts ranges whose first column is one value (the store's
// indexes answer equality) and, on the room's time index, whose second
// column is any range of times.
func (ix *index) CanSupport(_ *sql.Context, ranges ...sql.Range) bool {
	_, ok := ix.points(sql.MySQLRangeCollection(toMySQL(ranges)))
	return ok
}

func toMySQL(rs []sql.Range) []sql.MySQLRange {
	out := make([]sql.MySQLRange, 0, len(rs))
	for _, r := range rs {
		m, ok := r.(sql.MySQLRange)
		if !ok {
			return nil
		}
		out = append(out, m)
	}
	return out
}

// point is one key of a lookup, with the time span of a two-column index.
type point struct {
	key  string
	span *timeSpan
}

// points is the keys a lookup's ranges ask for; false when a range is not
// one value of the first column.
func (ix *index) points(rc sql.RangeCollection) ([]point, bool) {
	mc, ok := rc.(sql.MySQLRangeCollection)
	if !ok || len(mc) == 0 {
		return nil, false
	}
	var out []point
	for _, r := range mc {
		if len(r) == 0 || len(r) > len(ix.def.cols) {
			return nil, false
		}
		lo, ok1 := r[0].LowerBound.(sql.Below)
		hi, ok2 := r[0].UpperBound.(sql.Above)
		if !ok1 || !ok2 {
			return nil, false
		}
		k1, ok1 := keyString(lo.Key)
		k2, ok2 := keyString(hi.Key)
		if !ok1 || !ok2 || k1 != k2 {
			return nil, false
		}
		p := point{key: k1}
		if len(r) == 2 {
			span, ok := timeRange(r[1])
			if !ok {
				return nil, false
			}
			p.span = span
		}
		out = append(out, p)
	}
	return out, true
}

// keyString is a range key as the store's string keys.
func keyString(k any) (string, bool) {
	switch v := k.(type) {
	case string:
		return v, true
	case []byte:
		return string(v), true
	case nil:
		return "", false
	default:
		return fmt.Sprint(v), true
	}
}

// timeRange is a created_at range as [since, until) of the store's
// times; false when its bounds are not times. Rows show times cut to
// microseconds (DATETIME(6)), so "after k" starts at the next microsecond
// and "up to k" ends before it.
func timeRange(r sql.MySQLRangeColumnExpr) (*timeSpan, bool) {
	s := &timeSpan{}
	switch b := r.LowerBound.(type) {
	case sql.Below:
		t, ok := b.Key.(time.Time)
		if !ok {
			return nil, false
		}
		s.since = &t
	case sql.Above:
		t, ok := b.Key.(time.Time)
		if !ok {
			return nil, false
		}
		t = t.Truncate(time.Microsecond).Add(time.Microsecond)
		s.since = &t
	case sql.BelowNull, sql.AboveNull:
	default:
		return nil, false
	}
	switch b := r.UpperBound.(type) {
	case sql.Above:
		t, ok := b.Key.(time.Time)
		if !ok {
			return nil, false
		}
		t = t.Truncate(time.Microsecond).Add(time.Microsecond)
		s.until = &t
	case sql.Below:
		t, ok := b.Key.(time.Time)
		if !ok {
			return nil, false
		}
		s.until = &t
	case sql.AboveAll:
	default:
		return nil, false
	}
	return s, true
}

var _ sql.StatisticsTable = (*table)(nil)

// unknownRows is the planner's estimate of a family the store keeps no
// count of (entities, mentions, facts, jobs, ...): large, so that a join
// into it goes by its index rather than reading it whole per row.
const unknownRows = 100_000

// RowCount is the store's kept count for the families that have one, an
// estimate for the others: the planner's costing only (inexact, so never
// used as a count(*)'s answer).
func (t *table) RowCount(ctx *sql.Context) (uint64, bool, error) {
	q, err := runOf(ctx)
	if err != nil {
		return unknownRows, false, nil
	}
	c, err := q.r.Counts()
	if err != nil {
		return unknownRows, false, nil
	}
	switch t.def.name {
	case "drawers":
		return uint64(c.DrawersStored), false, nil
	case "rooms":
		return uint64(c.Rooms), false, nil
	case "wings":
		return uint64(c.Wings), false, nil
	case "similar":
		return uint64(c.Links), false, nil
	}
	return unknownRows, false, nil
}

// DataLength is not known.
func (t *table) DataLength(*sql.Context) (uint64, error) { return 0, nil }
