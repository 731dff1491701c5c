package sqlview

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"

	"github.com/loci-dev/loci/fault"
)

// Extra is a table whose rows come from the daemon rather than the store
// (the miners and the trigger definitions of the configuration file).
// Its rows are few: Rows is called once per statement that reads the
// table (not per scan: a self-join reads it once), at the statement's
// time, so they are not part of the store's snapshot the other tables
// read. Every row handed out counts in Result.RowsRead and against
// Limits.ScanRows; the table has no index, and nothing writes to it.
type Extra struct {
	// Name is the table's name: lowercase, not one of the store's tables.
	Name string
	// Doc says what the table holds.
	Doc string
	// Columns are the table's columns. Type is one of the Type*
	// constants; every column may hold NULL.
	Columns []Column
	// Rows are the table's rows now, each as wide as Columns: nil for
	// NULL; a TypeText or TypeID column takes a string; TypeInt an int,
	// int64 or *int; TypeBool a bool; TypeTime a time.Time or *time.Time;
	// TypeFloat a float64; TypeJSON any value encoding/json encodes.
	Rows func(ctx context.Context) ([][]any, error)
}

// The column types an Extra's columns may have, as the engine names them.
const (
	TypeID    = "VARCHAR(255)"
	TypeText  = "TEXT"
	TypeInt   = "BIGINT"
	TypeBool  = "TINYINT(1)"
	TypeTime  = "DATETIME(6)"
	TypeFloat = "DOUBLE"
	TypeJSON  = "JSON"
)

// extraTypes are the engine's types by their names.
var extraTypes = map[string]sql.Type{TypeID: tID, TypeText: tText, TypeInt: tInt, TypeBool: tBool,
	TypeTime: tTime, TypeFloat: tFloat, TypeJSON: tJSON}

// extraDef is an Extra as one of the engine's tables; it panics on a
// definition that cannot be served (a programming error of the daemon's
// wiring, caught by its first test).
func extraDef(x Extra, taken map[string]bool) *tableDef {
	if x.Name == "" || x.Name != strings.ToLower(x.Name) || taken[x.Name] {
		panic(fmt.Sprintf("sqlview: an extra table named %q (empty, not lowercase, or taken)", x.Name))
	}
	if x.Rows == nil || len(x.Columns) == 0 {
		panic(fmt.Sprintf("sqlview: the extra table %s has no columns or no rows", x.Name))
	}
	taken[x.Name] = true
	d := &tableDef{name: x.Name, doc: x.Doc, cols: make([]column, len(x.Columns))}
	seen := map[string]bool{}
	for i, c := range x.Columns {
		typ, ok := extraTypes[c.Type]
		if !ok || c.Name == "" || seen[strings.ToLower(c.Name)] {
			panic(fmt.Sprintf("sqlview: the extra table %s's column %q (type %q; unnamed, repeated or of no known type)", x.Name, c.Name, c.Type))
		}
		seen[strings.ToLower(c.Name)] = true
		d.cols[i] = ncol(c.Name, typ, c.Doc)
	}
	name, rows := x.Name, x.Rows
	d.scan = func(q *run) pager[sql.Row] {
		return once(func() ([]sql.Row, error) {
			cached, err := q.extraRows(name, rows, d.cols)
			if err != nil {
				return nil, err
			}
			// A copy per scan: the engine may hold or change a row it was
			// handed, and another scan of the statement reads the same.
			out := make([]sql.Row, len(cached))
			for i, r := range cached {
				out[i] = append(sql.Row(nil), r...)
			}
			return out, nil
		})
	}
	return d
}

// extraRows is an extra table's rows for the statement: read at its first
// scan, kept for the others.
func (q *run) extraRows(name string, rows func(context.Context) ([][]any, error), cols []column) ([]sql.Row, error) {
	if r, ok := q.extras[name]; ok {
		return r, nil
	}
	raw, err := rows(q.ctx)
	if err != nil {
		if fe, ok := err.(*fault.Error); ok {
			return nil, fe
		}
		return nil, fault.Wrap(fault.ServerFailed, err, "reading the table "+name+" failed: "+err.Error(), "see the daemon's log")
	}
	out := make([]sql.Row, len(raw))
	for i, r := range raw {
		if len(r) != len(cols) {
			return nil, fault.Newf(fault.ServerFailed, "report it", "the table %s gave a row of %d values for %d columns", name, len(r), len(cols))
		}
		row := make(sql.Row, len(r))
		for j, v := range r {
			cv, err := extraValue(q.ctx, cols[j].typ, v)
			if err != nil {
				return nil, fault.Newf(fault.ServerFailed, "report it", "the table %s's column %s: %v", name, cols[j].name, err)
			}
			row[j] = cv
		}
		out[i] = row
	}
	if q.extras == nil {
		q.extras = map[string][]sql.Row{}
	}
	q.extras[name] = out
	return out, nil
}

// extraValue is a value an Extra's Rows gave as the engine's value of typ.
func extraValue(ctx context.Context, typ sql.Type, v any) (any, error) {
	switch x := v.(type) {
	case nil:
		return nil, nil
	case *int:
		if x == nil {
			return nil, nil
		}
		v = int64(*x)
	case *time.Time:
		if x == nil {
			return nil, nil
		}
		return tm(*x), nil
	case time.Time:
		if typ == tTime {
			return tm(x), nil
		}
	case bool:
		if typ == tBool {
			return boolv(x), nil
		}
	}
	if typ == tJSON {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		var doc any
		if err := json.Unmarshal(b, &doc); err != nil {
			return nil, err
		}
		return types.JSONDocument{Val: doc}, nil
	}
	out, _, err := typ.Convert(ctx, v)
	if err != nil {
		return nil, fmt.Errorf("%v (%T) is not a %s", v, v, strings.ToUpper(typ.String()))
	}
	return out, nil
}
