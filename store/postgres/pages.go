package postgres

import (
	"strconv"

	"github.com/jackc/pgx/v5"
)

// pageSize is how many rows each page of a paged scan reads: first, then
// grow times the page before, at most most.
type pageSize struct{ first, grow, most int }

// next is the size of the page after one of n rows.
func (s pageSize) next(n int) int { return min(n*s.grow, s.most) }

// The page sizes of the families' paged scans: the first page is small (a
// visitor often stops early), later ones grow.
var (
	// recPages: listings of records (jobs, sources, triggers); a claim
	// reads one job.
	recPages = pageSize{first: 16, grow: 4, most: 1024}
	// palacePages: drawers and vectors; most listings stop after a
	// screenful.
	palacePages = pageSize{first: 64, grow: 4, most: 256}
	// graphPages: entities, mentions and facts.
	graphPages = pageSize{first: 64, grow: 2, most: 1024}
	// changePages: the change log; a follower reads on to its end.
	changePages = pageSize{first: 64, grow: 4, most: 4096}
)

// pages visits the rows of a keyset-paged query, a page at a time, until
// visit returns false: the one paging loop every family's scans use.
// query is the statement and arguments of the page of at most limit rows
// after the row last (nil: the first page), in the order of its key; each
// row is scanned into the destinations dest gives for a new R. Each page is
// read whole, and its rows closed, before visit sees them: visit may read
// the transaction again (a connection runs one query at a time), which a
// streamed scan would refuse. The context is checked before each row is
// visited and when the scan ends: a scan that ends after its context
// ended fails with the context's error.
func pages[R any](t *tx, size pageSize, query func(last *R, limit int) (string, []any), dest func(*R) []any,
	visit func(*R) (bool, error)) error {
	var last *R
	for limit := size.first; ; limit = size.next(limit) {
		sql, args := query(last, limit)
		var page []R
		err := t.rows(sql, args, func(r pgx.Rows) (bool, error) {
			var v R
			if err := r.Scan(dest(&v)...); err != nil {
				return false, t.check(err)
			}
			page = append(page, v)
			return true, nil
		})
		if err != nil {
			return err
		}
		for i := range page {
			if err := t.interrupted(); err != nil {
				return err
			}
			more, err := visit(&page[i])
			if err != nil || !more {
				return err
			}
		}
		if len(page) < limit {
			return t.interrupted()
		}
		last = &page[len(page)-1]
	}
}

// visitRec decodes a rec column as T and visits it.
func visitRec[T any](rec []byte, fn func(*T) bool) (bool, error) {
	v := new(T)
	if err := dec(rec, v); err != nil {
		return false, err
	}
	return fn(v), nil
}

// idRec is a row of a scan paged by one text key: the key, then rec.
type idRec struct {
	id  string
	rec []byte
}

func (x *idRec) dest() []any { return []any{&x.id, &x.rec} }

// lastID is the key a page after last starts from ("" for the first).
func lastID(last *idRec) string {
	if last == nil {
		return ""
	}
	return last.id
}

// keyedRec is a row of a paged listing of records: its rec, then its key
// columns.
type keyedRec struct {
	rec  []byte
	keys []any
}

// paged is pages over a query that selects one value (rec) and then nkeys
// key columns, ordered by them, read in recPages; query is given the last
// page's keys (nil: the first page).
func paged(t *tx, nkeys int, query func(last []any, limit int) (string, []any), fn func(rec []byte) (bool, error)) error {
	return pages(t, recPages, func(last *keyedRec, limit int) (string, []any) {
		if last == nil {
			return query(nil, limit)
		}
		return query(last.keys, limit)
	}, func(v *keyedRec) []any {
		v.keys = make([]any, nkeys)
		dest := make([]any, 1+nkeys)
		dest[0] = &v.rec
		for i := range v.keys {
			dest[1+i] = &v.keys[i]
		}
		return dest
	}, func(v *keyedRec) (bool, error) { return fn(v.rec) })
}

// pagedRecs is paged decoding each rec as T.
func pagedRecs[T any](t *tx, nkeys int, query func(last []any, limit int) (string, []any), fn func(*T) bool) error {
	return paged(t, nkeys, query, func(b []byte) (bool, error) { return visitRec(b, fn) })
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
