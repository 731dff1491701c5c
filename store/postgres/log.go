package postgres

import (
	"github.com/loci-dev/loci/store"
)

// The change log. Every Update holds the writer lock from its first
// statement to its commit, so the transactions that log commit one after
// another: a transaction reads the log's end under the lock and numbers
// its entries from there (no gaps), and the next one can read that end only
// after this one's commit is visible (PostgreSQL releases a transaction's
// locks after it marks it committed). A reader's snapshot that holds entry
// n+1 therefore holds entry n: no reader ever passes an entry that commits
// later with a lower sequence.

// Changes visits the entries after seq in order until fn returns false.
// It reads a page of entries at a time and closes it before fn sees them:
// a follower reads the transaction again inside fn (a connection runs one
// query at a time).
func (t *tx) Changes(after uint64, fn func(store.Change) bool) error {
	type row struct {
		seq int64
		c   store.Change
	}
	return pages(t, changePages, func(last *row, limit int) (string, []any) {
		if last != nil {
			after = uint64(last.seq)
		}
		return "SELECT seq, at, kind, action, id, origin FROM changes WHERE seq > $1 ORDER BY seq LIMIT $2", []any{int64(after), limit}
	}, func(x *row) []any {
		return []any{&x.seq, &x.c.At, &x.c.Kind, &x.c.Action, &x.c.ID, &x.c.Origin}
	}, func(x *row) (bool, error) {
		x.c.Seq = uint64(x.seq)
		x.c.At = x.c.At.UTC()
		return fn(x.c), nil
	})
}

// LastSeq is the log's last sequence (0 when empty).
func (t *tx) LastSeq() (uint64, error) {
	if t.seqRead {
		return t.seq, nil
	}
	var seq int64
	if _, err := t.row("SELECT coalesce(max(seq), 0) FROM changes", nil, &seq); err != nil {
		return 0, err
	}
	return uint64(seq), nil
}

// Log appends an entry, numbered after the log's end as this transaction
// (holding the writer lock) sees it.
func (t *tx) Log(kind, action, id string) error {
	if !t.seqRead {
		seq, err := t.LastSeq()
		if err != nil {
			return err
		}
		t.seq, t.firstSeq, t.seqRead = seq, seq, true
	}
	seq := t.seq + 1
	if err := t.exec("INSERT INTO changes(seq, at, kind, action, id, origin) VALUES ($1, $2, $3, $4, $5, $6)",
		int64(seq), t.now, kind, action, id, t.db.origin); err != nil {
		return err
	}
	t.seq = seq
	return nil
}
