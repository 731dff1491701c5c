package postgres

import (
	"encoding/json"
	"time"

	"github.com/loci-dev/loci/store"
)

// Sources (schema/40_sources.sql): a source's state in a wing (sources,
// keyed by store.TargetKey), its documents' filed revisions
// (source_documents), the document each chunk drawer came from
// (chunk_owners) and the documents to file again (stale_documents). Each
// write is one statement.

// sourceRow is a source's state as stored in rec: its cursor omitted when
// it has none, so that none reads back as none. Like jobRow, it is this
// backend's own format, not badgerdb's sourceRecord.
type sourceRow struct {
	Key       string          `json:"key"`
	Adapter   string          `json:"adapter"`
	Account   string          `json:"account,omitempty"`
	Locator   string          `json:"locator"`
	WingID    string          `json:"wing_id,omitempty"`
	Cursor    json.RawMessage `json:"cursor,omitempty"`
	Documents int             `json:"documents,omitempty"`
	LastJob   string          `json:"last_job,omitempty"`
	LastRun   time.Time       `json:"last_run"`
}

func (r *sourceRow) state() *store.SourceState {
	return &store.SourceState{Key: r.Key, Identity: store.SourceIdentity{Adapter: r.Adapter, Account: r.Account, Locator: r.Locator},
		WingID: r.WingID, Cursor: r.Cursor, Documents: r.Documents, LastJob: r.LastJob, LastRun: r.LastRun}
}

// Source is a source's state by key; nil when it was never mined.
func (t *tx) Source(key string) (*store.SourceState, error) {
	r, err := get[sourceRow](t, "SELECT rec FROM sources WHERE key = $1", key)
	if r == nil || err != nil {
		return nil, err
	}
	return r.state(), nil
}

// Sources visits every source state, by key, until fn returns false.
func (t *tx) Sources(fn func(*store.SourceState) bool) error {
	return pagedRecs(t, 1, func(last []any, limit int) (string, []any) {
		return after("SELECT rec, key FROM sources WHERE true", "key > $1", "key", nil, last, limit)
	}, func(r *sourceRow) bool { return fn(r.state()) })
}

// SourceDocument is a document's last filed revision; nil when none.
func (t *tx) SourceDocument(source, id string) (*store.DocumentState, error) {
	return get[store.DocumentState](t, "SELECT rec FROM source_documents WHERE source = $1 AND id = $2", source, id)
}

// CountSourceDocuments counts a state's documents.
func (t *tx) CountSourceDocuments(source string) (int, error) {
	var n int64
	_, err := t.row("SELECT count(*) FROM source_documents WHERE source = $1", []any{source}, &n)
	return int(n), err
}

// SourceDocuments visits a state's documents, by id, until fn returns
// false.
func (t *tx) SourceDocuments(source string, fn func(*store.DocumentState) bool) error {
	return pagedRecs(t, 1, func(last []any, limit int) (string, []any) {
		return after("SELECT rec, id FROM source_documents WHERE source = $1", "id > $2", "id", []any{source}, last, limit)
	}, fn)
}

// ChunkOwner is the state key and document a drawer was filed from; ""
// when none.
func (t *tx) ChunkOwner(drawer string) (source, doc string, err error) {
	_, err = t.row("SELECT source, doc FROM chunk_owners WHERE drawer = $1", []any{drawer}, &source, &doc)
	return source, doc, err
}

// StaleDocuments visits, by id, a state's documents marked to file again
// until fn returns false.
func (t *tx) StaleDocuments(source string, fn func(doc string) bool) error {
	return paged(t, 1, func(last []any, limit int) (string, []any) {
		return after("SELECT doc, doc FROM stale_documents WHERE source = $1", "doc > $2", "doc", []any{source}, last, limit)
	}, func(b []byte) (bool, error) { return fn(string(b)), nil })
}

// PutSource stores a source's state, replacing it.
func (t *tx) PutSource(s *store.SourceState) error {
	rec, err := enc(&sourceRow{Key: s.Key, Adapter: s.Identity.Adapter, Account: s.Identity.Account, Locator: s.Identity.Locator,
		WingID: s.WingID, Cursor: s.Cursor, Documents: s.Documents, LastJob: s.LastJob, LastRun: s.LastRun})
	if err != nil {
		return err
	}
	return t.exec(`INSERT INTO sources (key, wing_id, rec) VALUES ($1, $2, $3)
ON CONFLICT (key) DO UPDATE SET wing_id = EXCLUDED.wing_id, rec = EXCLUDED.rec`, s.Key, s.WingID, rec)
}

// PutSourceDocument stores a document's filed revision, replacing it.
func (t *tx) PutSourceDocument(d *store.DocumentState) error {
	rec, err := enc(d)
	if err != nil {
		return err
	}
	return t.exec(`INSERT INTO source_documents (source, id, rec) VALUES ($1, $2, $3)
ON CONFLICT (source, id) DO UPDATE SET rec = EXCLUDED.rec`, d.Source, d.ID, rec)
}

// DeleteSource forgets a source's state (its documents' states are
// deleted on their own, as the embedded store does).
func (t *tx) DeleteSource(key string) error {
	return t.exec("DELETE FROM sources WHERE key = $1", key)
}

// DeleteSourceDocument forgets a document's filed revision.
func (t *tx) DeleteSourceDocument(source, id string) error {
	return t.exec("DELETE FROM source_documents WHERE source = $1 AND id = $2", source, id)
}

// PutChunkOwner records the state and document a drawer was filed from.
func (t *tx) PutChunkOwner(drawer, source, doc string) error {
	return t.exec(`INSERT INTO chunk_owners (drawer, source, doc) VALUES ($1, $2, $3)
ON CONFLICT (drawer) DO UPDATE SET source = EXCLUDED.source, doc = EXCLUDED.doc`, drawer, source, doc)
}

// DeleteChunkOwner forgets where a drawer was filed from.
func (t *tx) DeleteChunkOwner(drawer string) error {
	return t.exec("DELETE FROM chunk_owners WHERE drawer = $1", drawer)
}

// PutStaleDocument marks a document to file again.
func (t *tx) PutStaleDocument(source, doc string) error {
	return t.exec("INSERT INTO stale_documents (source, doc) VALUES ($1, $2) ON CONFLICT DO NOTHING", source, doc)
}

// DeleteStaleDocument removes a document's mark.
func (t *tx) DeleteStaleDocument(source, doc string) error {
	return t.exec("DELETE FROM stale_documents WHERE source = $1 AND doc = $2", source, doc)
}
