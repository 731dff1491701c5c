package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/store"
)

// tx is a transaction of the backend: a reader (View) or the writer's
// transaction (Update). Every family's methods live in a file of their
// own and go through the helpers below: exec counts each write (Writes)
// before it runs; row and rows read, stopping on the context.
type tx struct {
	db    *DB
	q     pgx.Tx
	ctx   context.Context
	write bool
	now   time.Time

	// writes counts row writes (Writes).
	writes uint64
	// seq is the last change-log sequence this transaction logged (or the
	// log's end when it began logging); firstSeq the log's end then.
	seq, firstSeq uint64
	seqRead       bool
	// spSeq and spSeqRead are seq and seqRead at the last savepoint.
	spSeq     uint64
	spSeqRead bool
	// counted is what this transaction's writes add to the kept counts
	// (counts.go); spCounted is it at the last savepoint.
	counted, spCounted store.Counts
	// cancelled is the context's error once a statement stopped on it.
	cancelled error
	// graph is what a write transaction read of the knowledge graph
	// (graph.go); a rollback to a savepoint forgets it.
	graph *graphCache
}

var (
	_ store.Tx          = (*tx)(nil)
	_ store.Savepointer = (*tx)(nil)
)

// Now is the transaction's clock.
func (t *tx) Now() time.Time { return t.now }

// Writes counts the row writes made so far.
func (t *tx) Writes() uint64 { return t.writes }

// check remembers a context that ended (the transaction then fails with
// it, whatever the caller made of the error) and passes err on.
func (t *tx) check(err error) error {
	if err == nil {
		return nil
	}
	if cerr := t.ctx.Err(); cerr != nil {
		if t.cancelled == nil {
			t.cancelled = cerr
		}
		return cerr
	}
	return t.db.fail(err)
}

// interrupted is the context's error once it ended (remembered).
func (t *tx) interrupted() error {
	if t.cancelled != nil {
		return t.cancelled
	}
	if err := t.ctx.Err(); err != nil {
		t.cancelled = err
		return err
	}
	return nil
}

// exec runs a statement that writes, counted in Writes before it runs.
// Writing in a read transaction is a programming error.
func (t *tx) exec(sql string, args ...any) error {
	if err := t.writing(); err != nil {
		return err
	}
	_, err := t.q.Exec(t.ctx, sql, args...)
	return t.check(err)
}

// rowWritten runs a statement that writes and answers a row (RETURNING,
// or a select over data-modifying CTEs) into dest, counted in Writes
// before it runs; false when it answered none.
func (t *tx) rowWritten(sql string, args []any, dest ...any) (bool, error) {
	if err := t.writing(); err != nil {
		return false, err
	}
	return t.row(sql, args, dest...)
}

// writing counts a statement that writes, about to run (Writes); writing
// in a read transaction is a programming error.
func (t *tx) writing() error {
	if !t.write {
		return fault.New(fault.ServerFailed, "a read transaction tried to write", "report it: this is a bug in loci")
	}
	if err := t.interrupted(); err != nil {
		return err
	}
	t.writes++
	return nil
}

// putCounted runs an upsert that answers whether it inserted the row
// (RETURNING xmax = 0) and, when it did, adds c to the kept counts.
func (t *tx) putCounted(sql string, args []any, c store.Counts) error {
	var inserted bool
	if _, err := t.rowWritten(sql, args, &inserted); err != nil {
		return err
	}
	if inserted {
		t.addCounts(c)
	}
	return nil
}

// deleteCounted deletes table's row whose id column is id (one statement
// that answers how many it deleted) and adds count(n) of them to the kept
// counts.
func (t *tx) deleteCounted(table, id string, count func(n int) store.Counts) error {
	var n int64
	if _, err := t.rowWritten("WITH gone AS (DELETE FROM "+table+" WHERE id = $1 RETURNING 1) SELECT count(*) FROM gone",
		[]any{id}, &n); err != nil {
		return err
	}
	if n != 0 {
		t.addCounts(count(int(n)))
	}
	return nil
}

// row reads one row into dest; false when there is none.
func (t *tx) row(sql string, args []any, dest ...any) (bool, error) {
	if err := t.interrupted(); err != nil {
		return false, err
	}
	err := t.q.QueryRow(t.ctx, sql, args...).Scan(dest...)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, t.check(err)
	}
	return true, nil
}

// rows visits the rows of a query, scanning each with scan, until scan
// returns false; it stops on the context between rows.
func (t *tx) rows(sql string, args []any, scan func(pgx.Rows) (bool, error)) error {
	if err := t.interrupted(); err != nil {
		return err
	}
	rs, err := t.q.Query(t.ctx, sql, args...)
	if err != nil {
		return t.check(err)
	}
	defer rs.Close()
	for rs.Next() {
		if err := t.interrupted(); err != nil {
			return err
		}
		more, err := scan(rs)
		if err != nil {
			return err
		}
		if !more {
			return nil
		}
	}
	return t.check(rs.Err())
}

// strings is a query's single text column.
func (t *tx) strings(sql string, args ...any) ([]string, error) {
	var out []string
	err := t.rows(sql, args, func(r pgx.Rows) (bool, error) {
		var s string
		if err := r.Scan(&s); err != nil {
			return false, t.check(err)
		}
		out = append(out, s)
		return true, nil
	})
	return out, err
}

// enc is a record as stored in a rec column (JSON).
func enc(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fault.Wrap(fault.ServerFailed, err, "a record could not be encoded", "report it: this is a bug in loci")
	}
	return b, nil
}

// dec reads a rec column into v; a row that does not decode is
// loci::store::malformed.
func dec(b []byte, v any) error {
	if err := json.Unmarshal(b, v); err != nil {
		return fault.Wrap(fault.StoreMalformed, err, fmt.Sprintf("a stored %T row does not decode", v),
			"the database was changed by something other than loci; restore it from a backup")
	}
	return nil
}

// get reads one rec column into a new T; nil when there is no row.
func get[T any](t *tx, sql string, args ...any) (*T, error) {
	var b []byte
	ok, err := t.row(sql, args, &b)
	if err != nil || !ok {
		return nil, err
	}
	v := new(T)
	if err := dec(b, v); err != nil {
		return nil, err
	}
	return v, nil
}

// each visits the rec column of a query's rows as T until fn returns false.
// The rows are open while fn runs: fn must not read the transaction (a
// connection runs one query at a time); a visitor whose caller may read
// pages its rows (pages.go).
func each[T any](t *tx, sql string, args []any, fn func(*T) bool) error {
	return t.rows(sql, args, func(r pgx.Rows) (bool, error) {
		var b []byte
		if err := r.Scan(&b); err != nil {
			return false, t.check(err)
		}
		v := new(T)
		if err := dec(b, v); err != nil {
			return false, err
		}
		return fn(v), nil
	})
}

// all is the rec column of every row of a query, as T.
func all[T any](t *tx, sql string, args ...any) ([]T, error) {
	var out []T
	if err := each(t, sql, args, func(v *T) bool { out = append(out, *v); return true }); err != nil {
		return nil, err
	}
	return out, nil
}

// Savepoints: the writer marks one before each function of a batch.

// Savepoint marks the transaction's state.
func (t *tx) Savepoint() error {
	if err := t.interrupted(); err != nil {
		return err
	}
	if _, err := t.q.Exec(t.ctx, "SAVEPOINT fn"); err != nil {
		return t.check(err)
	}
	t.spSeq, t.spSeqRead, t.spCounted = t.seq, t.seqRead, t.counted
	return nil
}

// RollbackToSavepoint undoes the writes since the last savepoint.
func (t *tx) RollbackToSavepoint() error {
	if _, err := t.q.Exec(t.ctx, "ROLLBACK TO SAVEPOINT fn"); err != nil {
		return t.check(err)
	}
	t.seq, t.seqRead, t.counted = t.spSeq, t.spSeqRead, t.spCounted
	t.graph = nil
	return nil
}

// ReleaseSavepoint keeps the writes since the last savepoint.
func (t *tx) ReleaseSavepoint() error {
	if _, err := t.q.Exec(t.ctx, "RELEASE SAVEPOINT fn"); err != nil {
		return t.check(err)
	}
	return nil
}
