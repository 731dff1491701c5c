package store

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/loci-dev/loci/fault"
)

// SourceIdentity names a source: its adapter, the account it reads as
// ("" when none) and the locator, spelled canonically by the adapter.
type SourceIdentity struct {
	Adapter string
	Account string
	Locator string
}

// Key is the identity as a fixed-length store key: the first 16 bytes of
// the SHA-256 of its three parts, in hex.
func (s SourceIdentity) Key() string {
	sum := sha256.Sum256([]byte(s.Adapter + "\x00" + s.Account + "\x00" + s.Locator))
	return hex.EncodeToString(sum[:16])
}

// TargetKey is the key of what mining keeps for a source mined into a
// wing (its cursor and its documents' states): the first 16 bytes of the
// SHA-256 of the source's key and the wing's id, in hex. A source mined
// into two wings has two cursors; a wing deleted and made again is a new
// wing, mined from the start.
func TargetKey(source, wingID string) string {
	sum := sha256.Sum256([]byte(source + "\x00" + wingID))
	return hex.EncodeToString(sum[:16])
}

// SourceState is what the store keeps per source and wing: the adapter's
// cursor (its own JSON, opaque here) and the last job and time that
// advanced it. Key is TargetKey(Identity.Key(), WingID); a state written
// before cursors were per wing has no WingID and Identity.Key() as its key
// (data step 4 moves it).
type SourceState struct {
	Key      string
	Identity SourceIdentity
	// WingID is the wing the source is mined into.
	WingID string
	Cursor json.RawMessage
	// Documents counts the documents' states (kept as they are written
	// and pruned, so that a mine need not count them).
	Documents int
	LastJob   string
	LastRun   time.Time
}

// DocumentState is the last revision of a document filed from a source
// into a wing, with its chunks' drawers.
type DocumentState struct {
	Source string // the state's key: TargetKey of the source and the wing
	ID     string // the document's id within the source
	// WingID is the wing its chunks were filed in.
	WingID string
	// Revision is the hash of the document's normalised text, Meta the
	// hash of its metadata: a change of either files it again.
	Revision, Meta string
	Chunks         []ChunkState
}

// ChunkState is one chunk of a filed document: its drawer and the hash of
// its text.
type ChunkState struct {
	Drawer string
	Hash   string
}

// ContentHash is the hash mining compares texts by (SHA-256, hex).
func ContentHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// MinedDocument is one read, normalised and chunked document to file.
type MinedDocument struct {
	SourceKey string
	// Target is the state's key (TargetKey of SourceKey and the wing's
	// id) when the wing existed as the job began, "" otherwise: what
	// PrepareDocument compares with. FileDocument works it out itself.
	Target string
	ID     string
	// Name is the first chunk's drawer name (the document's name).
	Name string
	// Source is every chunk's source; its origin gets the chunk's index.
	Source Source
	// Meta is the metadata whose change files the document again.
	Meta      string
	Revision  string
	Chunks    []string
	Wing      string
	Room      string
	JobID     string
	Requested string
	// Redactions is how many secrets were replaced in the chunks.
	Redactions int
	// Prepared is, per chunk, the dedup work done outside the writer
	// (PrepareDocument); nil entries are judged by the writer.
	Prepared []*Prepared
}

// PrepareDocument does the CPU-heavy part of filing a document's new
// chunks outside the writer, against a read view (Prepare): chunks its
// last revision already holds, and every chunk of an unchanged revision,
// are left alone.
func PrepareDocument(r Reader, in *MinedDocument, dd Dedup) {
	if !dd.Enabled {
		return
	}
	var prev *DocumentState
	if in.Target != "" {
		var err error
		if prev, err = r.SourceDocument(in.Target, in.ID); err != nil || (prev != nil && prev.Revision == in.Revision && prev.Meta == in.Meta) {
			return
		}
	}
	in.Prepared = make([]*Prepared, len(in.Chunks))
	for i, text := range in.Chunks {
		if prev != nil && i < len(prev.Chunks) && prev.Meta == in.Meta && prev.Chunks[i].Hash == ContentHash(text) {
			continue
		}
		in.Prepared[i] = Prepare(r, NewDrawer{Wing: in.Wing, Room: in.Room, Content: text}, dd)
	}
}

// MinedResult is what filing one document changed.
type MinedResult struct {
	Unchanged bool
	// New: no revision of the document was filed from the source into
	// the wing before (the state's document count grows by one).
	New        bool
	Created    int
	Superseded int
	Retired    int
	Similar    int
	// Redacted counts the secrets replaced in what was filed.
	Redacted int
}

// Changed reports a document that changed the palace.
func (r MinedResult) Changed() bool { return r.Created+r.Superseded+r.Retired > 0 }

// ChunkDrawerID is a chunk drawer's id, derived from the job, source,
// document, chunk index and text hash, so that a job run again after a
// crash writes the same ids.
func ChunkDrawerID(jobID, sourceKey, docID string, index int, hash string) string {
	ns, err := uuid.Parse(jobID)
	if err != nil {
		ns = uuid.NameSpaceOID
	}
	return uuid.NewSHA1(ns, []byte(fmt.Sprintf("chunk/%s/%s/%d/%s", sourceKey, docID, index, hash))).String()
}

// FileDocument files a document's chunks against its last revision filed
// from the source into the wing: an unchanged revision (same text and
// metadata, its drawers still current) changes nothing; otherwise
// unchanged chunks are kept, changed ones superseded, new ones created and
// those past a shorter document's end closed. Only the first chunk carries
// the document's name; a current drawer of the room holding that name
// with other content from the same file (an earlier version the state
// lost track of) is superseded rather than left current beside it. The
// document's state, and which document each new chunk drawer belongs to,
// are written in the same transaction. A source kind outside the spec's
// list is stored as other (StoredSourceKind).
func FileDocument(tx Tx, in MinedDocument, dd Dedup) (MinedResult, error) {
	var res MinedResult
	// A source's own kind outside the spec's list is stored as other,
	// never a refusal that would fail the batch.
	in.Source.Kind = StoredSourceKind(in.Source.Kind)
	wing, _, err := EnsureWing(tx, in.Wing, "")
	if err != nil {
		return res, err
	}
	room, _, err := EnsureRoom(tx, wing, in.Room, "")
	if err != nil {
		return res, err
	}
	target := TargetKey(in.SourceKey, wing.ID)
	prev, err := tx.SourceDocument(target, in.ID)
	if err != nil {
		return res, err
	}
	res.New = prev == nil
	// The drawers of the last revision that are still current, by chunk;
	// a revision filed in another wing is not this one's.
	var old []*Drawer
	if prev != nil && prev.WingID == wing.ID {
		ids := make([]string, len(prev.Chunks))
		for i, c := range prev.Chunks {
			ids[i] = c.Drawer
		}
		if old, err = tx.DrawersByID(ids); err != nil {
			return res, err
		}
		for i, d := range old {
			if d != nil && (!d.Current() || d.RoomID != room.ID) {
				old[i] = nil
			}
		}
	}
	if prev != nil && len(old) == len(in.Chunks) && prev.Revision == in.Revision && prev.Meta == in.Meta &&
		!slices.Contains(old, nil) {
		res.Unchanged = true
		return res, nil
	}
	metaSame := prev != nil && prev.Meta == in.Meta
	next := &DocumentState{Source: target, ID: in.ID, WingID: wing.ID, Revision: in.Revision, Meta: in.Meta,
		Chunks: make([]ChunkState, len(in.Chunks))}
	for i, text := range in.Chunks {
		hash := ContentHash(text)
		id := ChunkDrawerID(in.JobID, in.SourceKey, in.ID, i, hash)
		next.Chunks[i] = ChunkState{Drawer: id, Hash: hash}
		var was *Drawer
		if i < len(old) {
			was = old[i]
		}
		name := ""
		if i == 0 {
			name = in.Name
		}
		if was != nil && metaSame && prev.Chunks[i].Hash == hash && was.Name == name {
			next.Chunks[i].Drawer = was.ID // kept
			continue
		}
		src := in.Source
		src.Origin = chunkOrigin(in.Source.Origin, i)
		if was != nil {
			content := text
			r, err := Supersede(tx, Supersession{DrawerID: was.ID, Content: &content, RequestedBy: in.Requested,
				ReplacementID: id, Source: &src, JobID: in.JobID}, dd)
			if err != nil {
				return res, err
			}
			res.Superseded++
			res.Similar += len(r.Similar)
			continue
		}
		nd := NewDrawer{ID: id, Wing: wing.ID, Room: room.ID, Name: name, Content: text, Tags: []string{},
			Source: src, Provenance: Provenance{RequestedBy: in.Requested, JobID: in.JobID}, Policy: ExactStoredLinked}
		if i < len(in.Prepared) {
			nd.Prepared = in.Prepared[i]
		}
		w, err := CreateDrawer(tx, nd, dd)
		if fault.Is(err, fault.PalaceDrawerNameTaken) {
			holder, herr := tx.DrawerByName(room.ID, name)
			if herr != nil {
				return res, herr
			}
			if holder != nil && in.Source.URI != "" && holder.Source.Kind == in.Source.Kind && holder.Source.URI == in.Source.URI {
				// An earlier version of this very file: superseded, so that
				// the wing holds one current version of it.
				content := text
				r, err := Supersede(tx, Supersession{DrawerID: holder.ID, Content: &content, RequestedBy: in.Requested,
					ReplacementID: id, Source: &src, JobID: in.JobID}, dd)
				if err != nil {
					return res, err
				}
				res.Superseded++
				res.Similar += len(r.Similar)
				continue
			}
			// Another document of the wing holds the name (two roots mined
			// into one wing): this one is filed without it.
			nd.Name = ""
			w, err = CreateDrawer(tx, nd, dd)
		}
		if err != nil {
			return res, err
		}
		next.Chunks[i].Drawer = w.Drawer.ID
		if w.Created {
			res.Created++
			res.Similar += len(w.Similar)
		}
	}
	for i := len(in.Chunks); i < len(old); i++ {
		if old[i] == nil {
			continue
		}
		if _, err := Supersede(tx, Supersession{DrawerID: old[i].ID, RequestedBy: in.Requested, JobID: in.JobID}, dd); err != nil {
			return res, err
		}
		res.Retired++
	}
	if res.Changed() {
		res.Redacted = in.Redactions
	}
	for i, c := range next.Chunks {
		if prev != nil && i < len(prev.Chunks) && prev.Chunks[i].Drawer == c.Drawer {
			continue // kept: already recorded
		}
		if err := tx.PutChunkOwner(c.Drawer, target, in.ID); err != nil {
			return res, err
		}
	}
	return res, tx.PutSourceDocument(next)
}

// forgetChunk is DeleteDrawer's part for mining: a deleted drawer that is
// a chunk of a document's last filed revision marks the document stale,
// so that the next mine of its source into the wing files it again.
func forgetChunk(tx Tx, drawer string) error {
	target, doc, err := tx.ChunkOwner(drawer)
	if err != nil || target == "" {
		return err
	}
	if err := tx.DeleteChunkOwner(drawer); err != nil {
		return err
	}
	st, err := tx.SourceDocument(target, doc)
	if err != nil || st == nil {
		return err
	}
	for _, c := range st.Chunks {
		if c.Drawer == drawer {
			return tx.PutStaleDocument(target, doc)
		}
	}
	return nil
}

// ForgetSomeMined removes up to limit records of what was mined into a
// wing (document states and stale marks), and each state left with none;
// it reports how many it removed and whether any are left. Deleting a wing
// calls it after the wing's drawers are gone, a transaction at a time as
// for the drawers: a wing made again later is mined from the start.
func ForgetSomeMined(tx Tx, wingID string, limit int) (removed int, more bool, err error) {
	var states []string
	if err := tx.Sources(func(s *SourceState) bool {
		if s.WingID == wingID {
			states = append(states, s.Key)
		}
		return true
	}); err != nil {
		return 0, false, err
	}
	for _, key := range states {
		var docs, stale []string
		budget := limit - removed
		if err := tx.SourceDocuments(key, func(d *DocumentState) bool {
			docs = append(docs, d.ID)
			return len(docs) < budget
		}); err != nil {
			return removed, false, err
		}
		if len(docs) < budget {
			if err := tx.StaleDocuments(key, func(doc string) bool {
				stale = append(stale, doc)
				return len(docs)+len(stale) < budget
			}); err != nil {
				return removed, false, err
			}
		}
		for _, d := range docs {
			if err := tx.DeleteSourceDocument(key, d); err != nil {
				return removed, false, err
			}
		}
		for _, d := range stale {
			if err := tx.DeleteStaleDocument(key, d); err != nil {
				return removed, false, err
			}
		}
		removed += len(docs) + len(stale)
		if removed >= limit {
			return removed, true, nil
		}
		if err := tx.DeleteSource(key); err != nil {
			return removed, false, err
		}
	}
	return removed, false, nil
}

// chunkOrigin is a chunk's origin: the document's, with the chunk's index.
func chunkOrigin(doc json.RawMessage, index int) json.RawMessage {
	m := map[string]any{}
	_ = json.Unmarshal(doc, &m)
	m["chunk"] = index
	b, _ := json.Marshal(m)
	return b
}

// CheckSourceKey refuses a key that is not one SourceIdentity.Key makes.
func CheckSourceKey(key string) error {
	if b, err := hex.DecodeString(key); err != nil || len(b) != 16 {
		return fault.Invalid("source", "is not a source key")
	}
	return nil
}

// TriggerState is what the daemon remembers about a trigger between runs.
type TriggerState struct {
	Name string
	// Due is a running schedule's next slot; nil while the trigger is not
	// running, so that enabling it again never fires at once.
	Due *time.Time
	// Counters.
	Fired, Coalesced, Failed, Deliveries int64
	// LastFired and LastJob are the last request that queued or joined a
	// job; LastError the last failure ("" after a success); Failures the
	// consecutive failures (a poll backs off by them).
	LastFired *time.Time
	LastJob   string
	LastError string
	Failures  int
	// Claimed is when a daemon last claimed a watch change or a poll of
	// the trigger: the daemons that run it (several on a shared store)
	// ask once per signal, the first to claim it.
	Claimed *time.Time
}

// Delivery is an accepted webhook delivery: remembered by its delivery id
// (seven days) so that a repeat is not run again. Job is empty from its
// acceptance until its run was asked for: such a delivery is recovered.
type Delivery struct {
	Trigger    string
	ID         string
	AcceptedAt time.Time
	Job        string
}

// PruneDocument closes the current drawers of a document's last filed
// revision (a document gone from its source) and forgets its state; the
// drawers stay for history and as_of. It reports how many drawers it
// closed and whether the document had a state to forget.
func PruneDocument(tx Tx, target, doc, requestedBy, jobID string, dd Dedup) (closed int, found bool, err error) {
	st, err := tx.SourceDocument(target, doc)
	if err != nil || st == nil {
		return 0, false, err
	}
	ids := make([]string, len(st.Chunks))
	for i, c := range st.Chunks {
		ids[i] = c.Drawer
	}
	ds, err := tx.DrawersByID(ids)
	if err != nil {
		return 0, true, err
	}
	for _, d := range ds {
		if d == nil || !d.Current() {
			continue
		}
		if _, err := Supersede(tx, Supersession{DrawerID: d.ID, RequestedBy: requestedBy, JobID: jobID}, dd); err != nil {
			return closed, true, err
		}
		closed++
	}
	if err := tx.DeleteStaleDocument(target, doc); err != nil {
		return closed, true, err
	}
	return closed, true, tx.DeleteSourceDocument(target, doc)
}
