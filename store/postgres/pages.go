package postgres

import (
	"strconv"

	"github.com/jackc/pgx/v5"
)

// Page sizes of a paged listing: the first page is small (a claim reads
// one job, a lookup stops early), later ones grow.
const (
	pagedFirst = 16
	pagedLast  = 1024
)

// paged visits the rows of a keyset-paged query, a page at a time, until
// fn returns false. query is the SQL and arguments of the page after the
// row whose key columns were last (nil: the first page), at most limit
// rows; it selects one value (rec) and then nkeys key columns, ordered by
// them. Each page is read whole, and its rows closed, before fn sees them:
// fn may read the transaction again (a connection runs one query at a
// time), which a streamed scan would refuse.
func paged(t *tx, nkeys int, query func(last []any, limit int) (string, []any), fn func(rec []byte) (bool, error)) error {
	type row struct {
		rec  []byte
		keys []any
	}
	var last []any
	for limit := pagedFirst; ; limit = min(limit*4, pagedLast) {
		sql, args := query(last, limit)
		var page []row
		err := t.rows(sql, args, func(r pgx.Rows) (bool, error) {
			v := row{keys: make([]any, nkeys)}
			dest := make([]any, 1+nkeys)
			dest[0] = &v.rec
			for i := range v.keys {
				dest[1+i] = &v.keys[i]
			}
			if err := r.Scan(dest...); err != nil {
				return false, t.check(err)
			}
			page = append(page, v)
			return true, nil
		})
		if err != nil {
			return err
		}
		for _, v := range page {
			if err := t.interrupted(); err != nil {
				return err
			}
			more, err := fn(v.rec)
			if err != nil || !more {
				return err
			}
		}
		if len(page) < limit {
			return nil
		}
		last = page[len(page)-1].keys
	}
}

// pagedRecs is paged decoding each rec as T.
func pagedRecs[T any](t *tx, nkeys int, query func(last []any, limit int) (string, []any), fn func(*T) bool) error {
	return paged(t, nkeys, query, func(b []byte) (bool, error) {
		v := new(T)
		if err := dec(b, v); err != nil {
			return false, err
		}
		return fn(v), nil
	})
}

// after is a page's SQL: base (a SELECT up to its WHERE conditions, or
// "WHERE true"), then cond on the last page's keys when there was one
// (its parameters numbered from first), then order and the limit.
func after(base, cond, order string, args, last []any, limit int) (string, []any) {
	sql := base
	if last != nil {
		sql += " AND " + cond
		args = append(append([]any(nil), args...), last...)
	}
	return sql + " ORDER BY " + order + " LIMIT " + strconv.Itoa(limit), args
}
