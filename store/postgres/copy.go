package postgres

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"

	"github.com/loci-dev/loci/store"
)

// What a copy of a palace (store.Copy, `loci migrate --to`) needs besides
// the store contract: the families Reader cannot enumerate, in key order
// (byte order: the keys are COLLATE "C", as the embedded store orders
// them), and the change log and operational records written as they are.

var (
	_ store.CopyReader = (*tx)(nil)
	_ store.CopyWriter = (*tx)(nil)
	_ store.MetaLister = (*DB)(nil)
)

// MetaKeys lists the operational records' keys.
func (db *DB) MetaKeys(ctx context.Context) ([]string, error) {
	rows, err := db.pool.Query(ctx, "SELECT key FROM loci_meta ORDER BY key")
	if undefinedTable(err) {
		return nil, nil
	}
	if err != nil {
		return nil, db.fail(err)
	}
	keys, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return keys, db.fail(err)
}

// CopyEmbeddings visits every vector by profile, then drawer id.
func (t *tx) CopyEmbeddings(fn func(*store.Embedding) bool) error {
	type key struct{ profile, drawer string }
	var keys []key
	if err := t.rows(`SELECT profile, drawer_id FROM embeddings ORDER BY profile COLLATE "C", drawer_id COLLATE "C"`, nil,
		func(r pgx.Rows) (bool, error) {
			var k key
			if err := r.Scan(&k.profile, &k.drawer); err != nil {
				return false, t.check(err)
			}
			keys = append(keys, k)
			return true, nil
		}); err != nil {
		return err
	}
	for _, k := range keys {
		e, err := t.Embedding(k.drawer, k.profile)
		if err != nil {
			return err
		}
		if e != nil && !fn(e) {
			return nil
		}
	}
	return nil
}

// CopyJobFacts visits every checkpoint fact by job id, then index.
func (t *tx) CopyJobFacts(fn func(job string, index int, fact json.RawMessage) bool) error {
	return t.rows(`SELECT job_id, idx, fact FROM job_facts ORDER BY job_id COLLATE "C", idx`, nil, func(r pgx.Rows) (bool, error) {
		var job string
		var idx int
		var fact []byte
		if err := r.Scan(&job, &idx, &fact); err != nil {
			return false, t.check(err)
		}
		return fn(job, idx, json.RawMessage(fact)), nil
	})
}

// CopyStaleDocuments visits every document marked to be filed again, by
// state key, then document id.
func (t *tx) CopyStaleDocuments(fn func(source, doc string) bool) error {
	return t.rows(`SELECT source, doc FROM stale_documents ORDER BY source COLLATE "C", doc COLLATE "C"`, nil, func(r pgx.Rows) (bool, error) {
		var source, doc string
		if err := r.Scan(&source, &doc); err != nil {
			return false, t.check(err)
		}
		return fn(source, doc), nil
	})
}

// PutChange writes a change-log entry as it is (no origin: it was logged
// by no handle of this database), replacing one of its sequence.
func (t *tx) PutChange(c store.Change) error {
	if err := t.exec(`INSERT INTO changes(seq, at, kind, action, id, origin) VALUES ($1, $2, $3, $4, $5, '')
		ON CONFLICT (seq) DO UPDATE SET at = EXCLUDED.at, kind = EXCLUDED.kind, action = EXCLUDED.action, id = EXCLUDED.id, origin = ''`,
		int64(c.Seq), c.At.UTC(), c.Kind, c.Action, c.ID); err != nil {
		return err
	}
	if t.seqRead && c.Seq > t.seq {
		t.seq = c.Seq
	}
	return nil
}

// TruncateChanges removes the entries after seq.
func (t *tx) TruncateChanges(after uint64) error {
	if err := t.exec("DELETE FROM changes WHERE seq > $1", int64(after)); err != nil {
		return err
	}
	if t.seqRead && t.seq > after {
		t.seq = after
	}
	return nil
}

// PutCopyMeta writes an operational record in the transaction.
func (t *tx) PutCopyMeta(key, value string) error {
	return t.exec("INSERT INTO loci_meta(key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value", key, value)
}
