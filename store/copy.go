package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/store/dedup"
)

// Moving a palace between stores (`loci migrate --to`): Copy walks every
// record of every family of one store through its Reader and writes it
// through the other's Tx, in batches of bounded size, each batch one
// transaction that also records how far the copy got (in the target's
// operational records, with the source's identity): a copy killed part way
// continues where it stopped when run again. Then it verifies: the records
// of each family, counted and digested (SHA-256 over a canonical encoding
// of each record, in the walk's fixed order) on both sides, must be equal,
// and so must the kept counts.
//
// The families are walked in an order where a record never names one not
// copied yet: wings, rooms, drawers, then what names drawers (vectors,
// deduplication, links), jobs and their facts, mining's state, triggers,
// the knowledge graph, and last the change log, copied as it is (same
// sequences, times, kinds and ids): the lexical and vector indexes a
// daemon rebuilds from the copy follow that log from its end, the vector
// index is rebuilt in its order (HNSW's graph depends on it), and the
// positions clients and the extract cursor hold stay valid.

// CopyReader is what a backend's reader offers for a copy besides Reader:
// the families Reader cannot enumerate, each in a fixed order.
type CopyReader interface {
	// CopyEmbeddings visits every stored vector, by profile then drawer
	// id, until fn returns false.
	CopyEmbeddings(fn func(*Embedding) bool) error
	// CopyJobFacts visits every checkpoint fact, by job id then index,
	// until fn returns false.
	CopyJobFacts(fn func(job string, index int, fact json.RawMessage) bool) error
	// CopyStaleDocuments visits every document marked to be filed again,
	// by state key then document id, until fn returns false.
	CopyStaleDocuments(fn func(source, doc string) bool) error
}

// CopyWriter is what a backend's write transaction offers for a copy
// besides Tx: records written as they are.
type CopyWriter interface {
	// PutChange writes a change-log entry as it is (its sequence, time,
	// kind, action and id), replacing an entry of that sequence.
	PutChange(c Change) error
	// TruncateChanges removes the change-log entries after seq (what a
	// copied vector logged beyond the copied log's end).
	TruncateChanges(after uint64) error
	// PutCopyMeta writes an operational record in the transaction.
	PutCopyMeta(key, value string) error
}

// MetaLister is what a backend offers for a copy besides Meta: the keys of
// its operational records (without the backend's own internal ones).
type MetaLister interface {
	MetaKeys(ctx context.Context) ([]string, error)
}

// MetaCopyProgress is the target's operational record of a copy: the
// source's identity and how far the copy got.
const MetaCopyProgress = "migrate/copy"

// copySkipMeta are the operational records that belong to a store, not
// to the palace it holds: never copied, never digested.
var copySkipMeta = map[string]bool{metaSchemaHash: true, metaDataVersion: true, metaLock: true, "migrated_at": true,
	metaPalaceID: true, MetaCopyProgress: true, "counts": true}

// CopyOptions bound a copy's batches.
type CopyOptions struct {
	// Batch bounds the records of one transaction (default 500).
	Batch int
	// BatchBytes bounds the encoded size of one transaction's records
	// (default 4 MiB).
	BatchBytes int
	// AfterBatch, when set, is called after each committed batch with the
	// batches committed by this run, the family and the records of it
	// copied so far.
	AfterBatch func(batches int, family string, copied int)
}

// FamilyDigest is one family's records counted and digested.
type FamilyDigest struct {
	Family string `json:"family"`
	Count  int    `json:"count"`
	Digest string `json:"digest"`
}

// CopyReport is what a copy did.
type CopyReport struct {
	// Source is the source's identity (its palace id and change-log end).
	Source string `json:"source"`
	// Resumed says the copy continued one a killed run began.
	Resumed bool `json:"resumed"`
	// Batches is the transactions this run committed.
	Batches int `json:"batches"`
	// Families is each family's count and digest, equal on both sides.
	Families []FamilyDigest `json:"families"`
	// Counts is the palace's kept counts, equal on both sides.
	Counts Counts `json:"counts"`
}

// copyProgress is MetaCopyProgress's value.
type copyProgress struct {
	Source string `json:"source"`
	Family string `json:"family"`
	Copied int    `json:"copied"`
	Done   bool   `json:"done"`
	// At is when the copy was completed (its last batch committed).
	At time.Time `json:"at,omitzero"`
}

// family is one kind of record: its walk over a store, in a fixed order,
// and its write.
type family struct {
	name string
	walk func(w *walker, fn func(key string, rec any) bool) error
	put  func(tx Tx, cw CopyWriter, rec any) error
}

// walker reads one store for a walk.
type walker struct {
	ctx context.Context
	db  DB
	r   Reader
	cr  CopyReader
	// drawers is the palace's drawer ids in walk order, read once.
	drawers []string
	err     error
}

// metaRec is an operational record.
type metaRec struct{ Key, Value string }

// dedupRec is a drawer's deduplication record with its sketch.
type dedupRec struct {
	Record *DedupRecord
	Mins   []uint16
	Norm   string
}

// jobFact is a checkpoint fact.
type jobFact struct {
	Job   string
	Index int
	Fact  json.RawMessage
}

// chunkOwner is the document a drawer was filed as a chunk of.
type chunkOwner struct{ Drawer, Source, Doc string }

// staleDoc is a document marked to be filed again.
type staleDoc struct{ Source, Doc string }

// drawerIDs is every stored drawer's id: by wing id, room id, drawer id.
func (w *walker) drawerIDs() ([]string, error) {
	if w.drawers != nil {
		return w.drawers, nil
	}
	ids := []string{}
	err := w.rooms(func(rm *Room) bool {
		var got []string
		got, w.err = w.r.DrawerIDs(rm.ID)
		slices.Sort(got)
		ids = append(ids, got...)
		return w.err == nil
	})
	if err == nil {
		err = w.err
	}
	w.drawers = ids
	return ids, err
}

func (w *walker) wings() ([]Wing, error) {
	ws, err := w.r.Wings()
	slices.SortFunc(ws, func(a, b Wing) int { return strings.Compare(a.ID, b.ID) })
	return ws, err
}

func (w *walker) rooms(fn func(*Room) bool) error {
	ws, err := w.wings()
	if err != nil {
		return err
	}
	for _, wg := range ws {
		rs, err := w.r.Rooms(wg.ID)
		if err != nil {
			return err
		}
		slices.SortFunc(rs, func(a, b Room) int { return strings.Compare(a.ID, b.ID) })
		for i := range rs {
			if !fn(&rs[i]) {
				return nil
			}
		}
	}
	return nil
}

// eachDrawer visits the drawers in walk order, read in chunks.
func (w *walker) eachDrawer(fn func(*Drawer) bool) error {
	ids, err := w.drawerIDs()
	if err != nil {
		return err
	}
	for i := 0; i < len(ids); i += 256 {
		ds, err := w.r.DrawersByID(ids[i:min(i+256, len(ids))])
		if err != nil {
			return err
		}
		for _, d := range ds {
			if d != nil && !fn(d) {
				return nil
			}
		}
		if err := w.ctx.Err(); err != nil {
			return err
		}
	}
	return nil
}

// entities is every entity, by id.
func (w *walker) entities() ([]*Entity, error) {
	var es []*Entity
	err := w.r.Entities(func(e *Entity) bool { es = append(es, e); return true })
	slices.SortFunc(es, func(a, b *Entity) int { return strings.Compare(a.ID, b.ID) })
	return es, err
}

// relationships is every fact, by its subject's id then its id.
func (w *walker) relationships(fn func(*Relationship) bool) error {
	es, err := w.entities()
	if err != nil {
		return err
	}
	for _, e := range es {
		var rs []*Relationship
		if err := w.r.EntityRelationships(e.ID, func(r *Relationship) bool {
			if r.Subject == e.ID {
				rs = append(rs, r)
			}
			return true
		}); err != nil {
			return err
		}
		slices.SortFunc(rs, func(a, b *Relationship) int { return strings.Compare(a.ID, b.ID) })
		for _, r := range rs {
			if !fn(r) {
				return nil
			}
		}
	}
	return nil
}

func sortedBy[T any](xs []T, key func(T) string) []T {
	slices.SortFunc(xs, func(a, b T) int { return strings.Compare(key(a), key(b)) })
	return xs
}

// families is every family, in copy order.
var families = []family{
	{name: "meta", walk: func(w *walker, fn func(string, any) bool) error {
		ml, ok := w.db.(MetaLister)
		if !ok {
			return errors.New("the " + w.db.Backend() + " store cannot list its operational records")
		}
		keys, err := ml.MetaKeys(w.ctx)
		if err != nil {
			return err
		}
		slices.Sort(keys)
		for _, k := range keys {
			if copySkipMeta[k] || strings.HasPrefix(k, "migrate/") {
				continue
			}
			v, ok, err := w.db.GetMeta(w.ctx, k)
			if err != nil {
				return err
			}
			if ok && !fn(k, metaRec{k, v}) {
				return nil
			}
		}
		return nil
	}, put: func(_ Tx, cw CopyWriter, rec any) error { m := rec.(metaRec); return cw.PutCopyMeta(m.Key, m.Value) }},
	{name: "auth", walk: func(w *walker, fn func(string, any) bool) error {
		a, err := w.r.AuthState()
		if err == nil && a != nil {
			fn("auth", a)
		}
		return err
	}, put: func(tx Tx, _ CopyWriter, rec any) error { return tx.PutAuthState(rec.(*AuthState)) }},
	{name: "wings", walk: func(w *walker, fn func(string, any) bool) error {
		ws, err := w.wings()
		for i := range ws {
			if !fn(ws[i].ID, &ws[i]) {
				break
			}
		}
		return err
	}, put: func(tx Tx, _ CopyWriter, rec any) error { return tx.PutWing(rec.(*Wing)) }},
	{name: "rooms", walk: func(w *walker, fn func(string, any) bool) error {
		return w.rooms(func(r *Room) bool { return fn(r.ID, r) })
	}, put: func(tx Tx, _ CopyWriter, rec any) error { return tx.PutRoom(rec.(*Room)) }},
	{name: "drawers", walk: func(w *walker, fn func(string, any) bool) error {
		return w.eachDrawer(func(d *Drawer) bool { return fn(d.ID, d) })
	}, put: func(tx Tx, _ CopyWriter, rec any) error { return tx.PutDrawer(rec.(*Drawer), nil) }},
	{name: "embeddings", walk: func(w *walker, fn func(string, any) bool) error {
		return w.cr.CopyEmbeddings(func(e *Embedding) bool { return fn(e.Profile+"/"+e.DrawerID, e) })
	}, put: func(tx Tx, _ CopyWriter, rec any) error { return tx.PutEmbedding(rec.(*Embedding)) }},
	{name: "dedup", walk: func(w *walker, fn func(string, any) bool) error {
		ids, err := w.drawerIDs()
		if err != nil {
			return err
		}
		for _, id := range ids {
			r, err := w.r.DedupRecord(id)
			if err != nil {
				return err
			}
			if r == nil {
				continue
			}
			mins, norm, err := w.r.DedupSketch(id)
			if err != nil {
				return err
			}
			// Only the stored part: the near index's bands and bag are
			// derived from the sketch when written.
			rec := &DedupRecord{DrawerID: r.DrawerID, Scope: r.Scope, Hash: r.Hash, Fingerprint: r.Fingerprint, NormLen: r.NormLen, Distinct: r.Distinct}
			if !fn(id, dedupRec{Record: rec, Mins: mins, Norm: norm}) {
				return nil
			}
		}
		return nil
	}, put: func(tx Tx, _ CopyWriter, rec any) error {
		d := rec.(dedupRec)
		r := *d.Record
		if d.Mins != nil {
			sk := dedup.MakeSketch(d.Norm)
			r.Bands, r.Bag = sk.Bands, sk.Bag
			r.Mins, r.Norm = d.Mins, d.Norm
		}
		return tx.PutDedup(&r)
	}},
	{name: "links", walk: func(w *walker, fn func(string, any) bool) error {
		ids, err := w.drawerIDs()
		if err != nil {
			return err
		}
		for _, id := range ids {
			ls, err := w.r.Links(id)
			if err != nil {
				return err
			}
			for _, l := range sortedBy(ls, func(l Link) string { return l.ID }) {
				if l.Newer == id && !fn(l.ID, &l) {
					return nil
				}
			}
		}
		return nil
	}, put: func(tx Tx, _ CopyWriter, rec any) error { return tx.PutLink(rec.(*Link)) }},
	{name: "jobs", walk: func(w *walker, fn func(string, any) bool) error {
		var js []*Job
		if err := w.r.Jobs(func(j *Job) bool { js = append(js, j); return true }); err != nil {
			return err
		}
		for _, j := range sortedBy(js, func(j *Job) string { return j.ID }) {
			in, err := w.r.JobInput(j.ID)
			if err != nil {
				return err
			}
			j.Input = in
			if !fn(j.ID, j) {
				return nil
			}
		}
		return nil
	}, put: func(tx Tx, _ CopyWriter, rec any) error { return tx.PutJob(rec.(*Job), nil) }},
	{name: "job_facts", walk: func(w *walker, fn func(string, any) bool) error {
		return w.cr.CopyJobFacts(func(job string, i int, f json.RawMessage) bool {
			return fn(job+"/"+strconv.Itoa(i), jobFact{job, i, f})
		})
	}, put: func(tx Tx, _ CopyWriter, rec any) error {
		f := rec.(jobFact)
		return tx.PutJobFact(f.Job, f.Index, f.Fact)
	}},
	{name: "sources", walk: func(w *walker, fn func(string, any) bool) error {
		var ss []*SourceState
		if err := w.r.Sources(func(s *SourceState) bool { ss = append(ss, s); return true }); err != nil {
			return err
		}
		for _, s := range sortedBy(ss, func(s *SourceState) string { return s.Key }) {
			if !fn(s.Key, s) {
				return nil
			}
		}
		return nil
	}, put: func(tx Tx, _ CopyWriter, rec any) error { return tx.PutSource(rec.(*SourceState)) }},
	{name: "source_documents", walk: func(w *walker, fn func(string, any) bool) error {
		var keys []string
		if err := w.r.Sources(func(s *SourceState) bool { keys = append(keys, s.Key); return true }); err != nil {
			return err
		}
		slices.Sort(keys)
		stop := false
		for _, k := range keys {
			if err := w.r.SourceDocuments(k, func(d *DocumentState) bool {
				stop = !fn(d.Source+"/"+d.ID, d)
				return !stop
			}); err != nil || stop {
				return err
			}
		}
		return nil
	}, put: func(tx Tx, _ CopyWriter, rec any) error { return tx.PutSourceDocument(rec.(*DocumentState)) }},
	{name: "chunk_owners", walk: func(w *walker, fn func(string, any) bool) error {
		ids, err := w.drawerIDs()
		if err != nil {
			return err
		}
		for _, id := range ids {
			src, doc, err := w.r.ChunkOwner(id)
			if err != nil {
				return err
			}
			if src != "" && !fn(id, chunkOwner{id, src, doc}) {
				return nil
			}
		}
		return nil
	}, put: func(tx Tx, _ CopyWriter, rec any) error {
		c := rec.(chunkOwner)
		return tx.PutChunkOwner(c.Drawer, c.Source, c.Doc)
	}},
	{name: "stale_documents", walk: func(w *walker, fn func(string, any) bool) error {
		return w.cr.CopyStaleDocuments(func(src, doc string) bool { return fn(src+"/"+doc, staleDoc{src, doc}) })
	}, put: func(tx Tx, _ CopyWriter, rec any) error {
		s := rec.(staleDoc)
		return tx.PutStaleDocument(s.Source, s.Doc)
	}},
	{name: "trigger_states", walk: func(w *walker, fn func(string, any) bool) error {
		var ts []*TriggerState
		if err := w.r.TriggerStates(func(t *TriggerState) bool { ts = append(ts, t); return true }); err != nil {
			return err
		}
		for _, t := range sortedBy(ts, func(t *TriggerState) string { return t.Name }) {
			if !fn(t.Name, t) {
				return nil
			}
		}
		return nil
	}, put: func(tx Tx, _ CopyWriter, rec any) error { return tx.PutTriggerState(rec.(*TriggerState)) }},
	{name: "deliveries", walk: func(w *walker, fn func(string, any) bool) error {
		var ds []*Delivery
		if err := w.r.Deliveries(func(d *Delivery) bool { ds = append(ds, d); return true }); err != nil {
			return err
		}
		for _, d := range sortedBy(ds, func(d *Delivery) string { return d.Trigger + "\x00" + d.ID }) {
			if !fn(d.Trigger+"/"+d.ID, d) {
				return nil
			}
		}
		return nil
	}, put: func(tx Tx, _ CopyWriter, rec any) error { return tx.PutDelivery(rec.(*Delivery)) }},
	{name: "entities", walk: func(w *walker, fn func(string, any) bool) error {
		es, err := w.entities()
		for _, e := range es {
			if !fn(e.ID, e) {
				break
			}
		}
		return err
	}, put: func(tx Tx, _ CopyWriter, rec any) error { return tx.PutEntity(rec.(*Entity), nil) }},
	{name: "entity_links", walk: func(w *walker, fn func(string, any) bool) error {
		es, err := w.entities()
		if err != nil {
			return err
		}
		for _, e := range es {
			ls, err := w.r.EntityLinks(e.ID)
			if err != nil {
				return err
			}
			for _, l := range sortedBy(ls, func(l EntityLink) string { return l.ID }) {
				if l.From == e.ID && !fn(l.ID, &l) {
					return nil
				}
			}
		}
		return nil
	}, put: func(tx Tx, _ CopyWriter, rec any) error { return tx.PutEntityLink(rec.(*EntityLink)) }},
	{name: "mentions", walk: func(w *walker, fn func(string, any) bool) error {
		es, err := w.entities()
		if err != nil {
			return err
		}
		for _, e := range es {
			var ms []*Mention
			if err := w.r.Mentions(e.ID, func(m *Mention) bool { ms = append(ms, m); return true }); err != nil {
				return err
			}
			for _, m := range sortedBy(ms, func(m *Mention) string { return m.Drawer }) {
				if !fn(m.Entity+"/"+m.Drawer, m) {
					return nil
				}
			}
		}
		return nil
	}, put: func(tx Tx, _ CopyWriter, rec any) error { return tx.PutMention(rec.(*Mention)) }},
	{name: "relationships", walk: func(w *walker, fn func(string, any) bool) error {
		return w.relationships(func(r *Relationship) bool { return fn(r.ID, r) })
	}, put: func(tx Tx, _ CopyWriter, rec any) error { return tx.PutRelationship(rec.(*Relationship), nil) }},
	{name: "relationship_links", walk: func(w *walker, fn func(string, any) bool) error {
		var ids []string
		if err := w.relationships(func(r *Relationship) bool { ids = append(ids, r.ID); return true }); err != nil {
			return err
		}
		for _, id := range ids {
			ls, err := w.r.RelationshipLinks(id)
			if err != nil {
				return err
			}
			for _, l := range sortedBy(ls, func(l RelationshipLink) string { return l.ID }) {
				if l.From == id && !fn(l.ID, &l) {
					return nil
				}
			}
		}
		return nil
	}, put: func(tx Tx, _ CopyWriter, rec any) error { return tx.PutRelationshipLink(rec.(*RelationshipLink)) }},
	{name: "changes", walk: func(w *walker, fn func(string, any) bool) error {
		return w.r.Changes(0, func(c Change) bool {
			// The origin names the handle that logged it, not the palace;
			// its time is digested to the microsecond, what PostgreSQL's
			// timestamptz keeps of it.
			c.Origin = ""
			c.At = c.At.UTC().Truncate(time.Microsecond)
			return fn(strconv.FormatUint(c.Seq, 10), c)
		})
	}, put: func(_ Tx, cw CopyWriter, rec any) error { return cw.PutChange(rec.(Change)) }},
}

// Families lists the families a copy walks, in its order.
func Families() []string {
	out := make([]string, len(families))
	for i, f := range families {
		out[i] = f.name
	}
	return out
}

// walk runs fn over every record of the store from family index from on,
// in one read of it.
func walk(ctx context.Context, db DB, from int, fn func(f int, key string, rec any) bool) error {
	return db.View(ctx, func(r Reader) error {
		cr, ok := r.(CopyReader)
		if !ok {
			return errors.New("the " + db.Backend() + " store cannot enumerate every record for a copy")
		}
		w := &walker{ctx: ctx, db: db, r: r, cr: cr}
		for i := from; i < len(families); i++ {
			stop := false
			if err := families[i].walk(w, func(key string, rec any) bool {
				stop = !fn(i, key, rec)
				return !stop
			}); err != nil {
				return err
			}
			if stop {
				return nil
			}
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		return nil
	})
}

// canonical is a record's canonical encoding: its JSON with every object's
// keys sorted, no spaces and numbers as float64 (the same bytes whatever a
// backend did to JSON kept inside it).
func canonical(rec any) ([]byte, error) {
	b, err := json.Marshal(rec)
	if err != nil {
		return nil, err
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, err
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// Digest counts and digests every family of a store in one read: each
// record's key and canonical encoding, in the walk's fixed order, hashed
// with SHA-256 per family.
func Digest(ctx context.Context, db DB) ([]FamilyDigest, error) {
	hs := make([]interface {
		Write([]byte) (int, error)
		Sum([]byte) []byte
	}, len(families))
	out := make([]FamilyDigest, len(families))
	for i, f := range families {
		hs[i] = sha256.New()
		out[i].Family = f.name
	}
	var cerr error
	err := walk(ctx, db, 0, func(f int, key string, rec any) bool {
		b, err := canonical(rec)
		if err != nil {
			cerr = err
			return false
		}
		_, _ = hs[f].Write([]byte(key))
		_, _ = hs[f].Write([]byte{0})
		_, _ = hs[f].Write(b)
		out[f].Count++
		return true
	})
	if err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	for i := range out {
		out[i].Digest = hex.EncodeToString(hs[i].Sum(nil))
	}
	return out, nil
}

// CopyIdentity is a store's identity for a copy: its palace id (given
// one when it has none) and its change log's end. A source written to
// between two runs of a copy is another source.
func CopyIdentity(ctx context.Context, db DB) (string, error) {
	id, err := PalaceID(ctx, db)
	if err != nil {
		return "", err
	}
	var seq uint64
	if err := db.View(ctx, func(r Reader) error { seq, err = r.LastSeq(); return err }); err != nil {
		return "", err
	}
	return fmt.Sprintf("%s@%d", id, seq), nil
}

// Holds reports the first record a store holds (a family and a key), ""
// when it holds none: a copy's target must hold nothing.
func Holds(ctx context.Context, db DB) (string, error) {
	found := ""
	err := walk(ctx, db, 0, func(f int, key string, _ any) bool {
		found = families[f].name + " " + key
		return false
	})
	return found, err
}

func readProgress(ctx context.Context, db DB) (*copyProgress, error) {
	raw, ok, err := db.GetMeta(ctx, MetaCopyProgress)
	if err != nil || !ok {
		return nil, err
	}
	var p copyProgress
	if err := json.Unmarshal([]byte(raw), &p); err != nil {
		return nil, fault.Newf(fault.MigrateFailed, "nothing was changed; copy into a new database or directory",
			"the target's copy record %q is not readable", MetaCopyProgress)
	}
	return &p, nil
}

// Copy copies every record of from into to (an empty store, or one a
// killed copy of the same source began), in batches of bounded size, each
// one transaction recording the copy's progress, then verifies that both
// hold the same records (counts and digests per family, and kept counts).
// Nothing else may write to either meanwhile. A target that holds records
// and is not a copy of this source in progress is refused, unchanged
// (loci::migrate::failed); so is a copy whose verification differs,
// naming the families that differ.
func Copy(ctx context.Context, from, to DB, o CopyOptions) (CopyReport, error) {
	if o.Batch <= 0 {
		o.Batch = 500
	}
	if o.BatchBytes <= 0 {
		o.BatchBytes = 4 << 20
	}
	var rep CopyReport
	src, p, err := checkTarget(ctx, from, to)
	if err != nil {
		return rep, err
	}
	rep.Source, rep.Resumed = src, p != nil
	if p == nil {
		p = &copyProgress{Source: src, Family: families[0].name}
	}
	made := !p.Done
	if made {
		if err := copyRecords(ctx, from, to, p, o, &rep); err != nil {
			return rep, err
		}
	}
	return rep, verify(ctx, from, to, made, &rep)
}

// CheckTarget refuses (loci::migrate::failed) a copy of from into to when
// to holds records and is not a copy of from in progress or complete and
// unused since; resume reports that it is one, done that it is complete
// (only verified again). It writes nothing to to.
func CheckTarget(ctx context.Context, from, to DB) (resume, done bool, err error) {
	_, p, err := checkTarget(ctx, from, to)
	return p != nil, p != nil && p.Done, err
}

func checkTarget(ctx context.Context, from, to DB) (string, *copyProgress, error) {
	src, err := CopyIdentity(ctx, from)
	if err != nil {
		return "", nil, err
	}
	p, err := readProgress(ctx, to)
	if err != nil {
		return src, nil, err
	}
	switch {
	case p == nil:
		held, err := Holds(ctx, to)
		if err != nil {
			return src, nil, err
		}
		if held != "" {
			return src, nil, fault.Newf(fault.MigrateFailed, "nothing was changed; copy into a new, empty database or directory (the target may be a palace in use: it is not emptied)",
				"the target %s is not empty (it holds %s) and is not a copy of this palace in progress", to.Location(), held)
		}
		return src, nil, nil
	case p.Source != src:
		return src, nil, fault.New(fault.MigrateFailed,
			fmt.Sprintf("the target %s holds a copy of another palace, or of this one before it changed (copy of %s; this palace is %s)", to.Location(), p.Source, src),
			"nothing was changed; copy into a new database or directory (the target may be a palace in use: it is not emptied)")
	case p.Done:
		if served, err := servedSince(ctx, to, p); err != nil {
			return src, nil, err
		} else if served != "" {
			return src, nil, fault.New(fault.MigrateFailed,
				fmt.Sprintf("the target %s already holds this palace, copied at %s; daemons have served it since (%s)",
					to.Location(), p.At.Format(time.RFC3339), served),
				"nothing was changed; the palace was moved already: serve it from there, or copy it into a new database or directory")
		}
	}
	return src, p, nil
}

// servedSince says how a target holding a complete copy shows that it
// was used since the copy ("" when it was not): a daemon or `loci
// migrate` opened it (its migration time is after the copy's), or its
// change log moved past the copied one's end. It reads, never writes.
func servedSince(ctx context.Context, to DB, p *copyProgress) (string, error) {
	if at, ok, err := to.GetMeta(ctx, "migrated_at"); err != nil {
		return "", err
	} else if t, perr := time.Parse(time.RFC3339, at); ok && perr == nil && !p.At.IsZero() && t.After(p.At) {
		return "opened at " + t.UTC().Format(time.RFC3339), nil
	}
	_, end, _ := strings.Cut(p.Source, "@")
	copied, err := strconv.ParseUint(end, 10, 64)
	if err != nil {
		return "", nil
	}
	var last uint64
	if err := to.View(ctx, func(r Reader) (err error) { last, err = r.LastSeq(); return err }); err != nil {
		return "", err
	}
	if last != copied {
		return fmt.Sprintf("its change log is at %d, the copy's ended at %d", last, copied), nil
	}
	return "", nil
}

// batch is the records of one transaction, from a position of the walk
// on.
type batch struct {
	start copyProgress // the position before its first record
	fam   []int
	recs  []any
	bytes int
}

// after is the position after the batch's first h records.
func (b batch) after(h int) copyProgress {
	p := b.start
	if h == 0 {
		return p
	}
	f := b.fam[h-1]
	n := 0
	for _, g := range b.fam[:h] {
		if g == f {
			n++
		}
	}
	if families[f].name == p.Family {
		n += p.Copied
	}
	p.Family, p.Copied = families[f].name, n
	return p
}

func copyRecords(ctx context.Context, from, to DB, p *copyProgress, o CopyOptions, rep *CopyReport) error {
	start := slices.IndexFunc(families, func(f family) bool { return f.name == p.Family })
	if start < 0 {
		return fault.Newf(fault.MigrateFailed, "copy into a new database or directory", "the target's copy record names no family %q", p.Family)
	}
	skip := p.Copied
	var lastSeq uint64
	if err := from.View(ctx, func(r Reader) (err error) { lastSeq, err = r.LastSeq(); return err }); err != nil {
		return err
	}
	b := batch{start: *p}
	commit := func(final bool) error {
		next := b.after(len(b.recs))
		next.Done = final
		if err := putBatch(ctx, to, b, final, lastSeq); err != nil {
			return err
		}
		*p = next
		b = batch{start: next}
		rep.Batches++
		if o.AfterBatch != nil {
			o.AfterBatch(rep.Batches, p.Family, p.Copied)
		}
		return nil
	}
	var cerr error
	err := walk(ctx, from, start, func(f int, _ string, rec any) bool {
		if f == start && skip > 0 {
			skip--
			return true
		}
		n := 256
		if raw, err := json.Marshal(rec); err == nil {
			n = len(raw)
		}
		if len(b.recs) > 0 && (len(b.recs) >= o.Batch || b.bytes+n > o.BatchBytes) {
			if cerr = commit(false); cerr != nil {
				return false
			}
		}
		b.fam, b.recs, b.bytes = append(b.fam, f), append(b.recs, rec), b.bytes+n
		return true
	})
	if err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return commit(true)
}

// putBatch writes a batch and the position after it in one transaction
// (a batch too big for the backend is written in halves); the last one
// also cuts the change log at the source's end and marks the copy done.
func putBatch(ctx context.Context, to DB, b batch, final bool, lastSeq uint64) error {
	p := b.after(len(b.recs))
	p.Done = final
	if final {
		// Whole seconds, as the migration time a daemon's start records
		// (servedSince compares them).
		p.At = time.Now().UTC().Truncate(time.Second)
	}
	raw, _ := json.Marshal(p)
	err := to.Update(ctx, func(tx Tx) error {
		cw, ok := tx.(CopyWriter)
		if !ok {
			return errors.New("the " + to.Backend() + " store cannot be the target of a copy")
		}
		for i, rec := range b.recs {
			if err := families[b.fam[i]].put(tx, cw, rec); err != nil {
				return fmt.Errorf("copying a record of %s: %w", families[b.fam[i]].name, err)
			}
		}
		if final {
			if err := cw.TruncateChanges(lastSeq); err != nil {
				return err
			}
		}
		return cw.PutCopyMeta(MetaCopyProgress, string(raw))
	})
	if errors.Is(err, ErrTxnTooBig) && len(b.recs) > 1 {
		h := len(b.recs) / 2
		first := batch{start: b.start, fam: b.fam[:h], recs: b.recs[:h]}
		if err := putBatch(ctx, to, first, false, lastSeq); err != nil {
			return err
		}
		return putBatch(ctx, to, batch{start: b.after(h), fam: b.fam[h:], recs: b.recs[h:]}, final, lastSeq)
	}
	return err
}

// verify compares both stores' digests and kept counts; made says the
// target held nothing but this copy in progress when the run began.
func verify(ctx context.Context, from, to DB, made bool, rep *CopyReport) error {
	a, err := Digest(ctx, from)
	if err != nil {
		return err
	}
	b, err := Digest(ctx, to)
	if err != nil {
		return err
	}
	rep.Families = b
	var diffs []string
	for i := range a {
		if a[i] == b[i] {
			continue
		}
		if a[i].Count != b[i].Count {
			diffs = append(diffs, fmt.Sprintf("%s: %d records here, %d in the copy", a[i].Family, a[i].Count, b[i].Count))
		} else {
			diffs = append(diffs, fmt.Sprintf("%s: %d records on both sides, digests %.12s here, %.12s in the copy", a[i].Family, a[i].Count, a[i].Digest, b[i].Digest))
		}
	}
	var ca, cb, cr Counts
	if err := from.View(ctx, func(r Reader) (err error) { ca, err = r.Counts(); return err }); err != nil {
		return err
	}
	if err := to.View(ctx, func(r Reader) (err error) {
		if cb, err = r.Counts(); err != nil {
			return err
		}
		cr, err = r.Recount()
		return err
	}); err != nil {
		return err
	}
	rep.Counts = cb
	if ca != cb || cb != cr {
		diffs = append(diffs, fmt.Sprintf("counts: %s here, %s kept in the copy, %s counted in it", countsText(ca), countsText(cb), countsText(cr)))
	}
	if len(diffs) == 0 {
		return nil
	}
	help := "nothing may write to the palace or the target while the copy runs: find what wrote (a daemon, a `loci` command), stop it, and copy into a new database or directory"
	if made {
		help = "nothing may write to the palace or the target while the copy runs: find what wrote (a daemon, a `loci` command) and stop it; the target holds only this copy: drop it (dropdb, or remove the directory) and run the copy again"
	}
	return fault.New(fault.MigrateFailed, verifyMessage(diffs), help)
}

// verifyMessage is a failed verification's message: every difference,
// one a line, whole, within what a client receives (fault.MaxMsg); those
// beyond it are counted.
func verifyMessage(diffs []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "verification failed: %d differences between the palace and the copy:", len(diffs))
	for i, d := range diffs {
		more := ""
		if i+1 < len(diffs) {
			more = fmt.Sprintf("\n  and %d more", len(diffs)-i-1)
		}
		if b.Len()+3+len(d)+len(more) > fault.MaxMsg && i > 0 {
			fmt.Fprintf(&b, "\n  and %d more", len(diffs)-i)
			break
		}
		b.WriteString("\n  " + d)
	}
	return b.String()
}

// countsText is a palace's kept counts, short.
func countsText(c Counts) string {
	return fmt.Sprintf("%d wings, %d rooms, %d drawers (%d stored), %d links", c.Wings, c.Rooms, c.Drawers, c.DrawersStored, c.Links)
}

// HoldMigrationLock takes the migration lock of the runner's backend when
// its holder's crash releases it (a database's session lock) and returns
// its release; on a backend whose lock is a lease (the embedded store,
// which one process opens at a time anyway) it takes nothing.
func (m *Runner) HoldMigrationLock(ctx context.Context) (func(context.Context) error, error) {
	if m.Lock == nil {
		return func(context.Context) error { return nil }, nil
	}
	return m.Lock(ctx)
}
