package store

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/store/dedup"
	"github.com/loci-dev/loci/store/graph"
)

// Importing records of another palace (an export's), keeping their ids.
//
// Each record is compared with what the palace holds under its id: the
// same record changes nothing (unchanged), another one under the same id is
// a conflict, reported and never overwritten. A drawer kept current here
// that the file shows closed (superseded or invalidated since an earlier
// import) is closed (updated), and so are an entity's aliases the file adds.
// A wing or room whose name this palace already holds under another id takes
// the import (merged): the records after it are filed there. A drawer is
// judged by the palace's duplicate rules, as a new drawer of its kind
// would be (an unnamed exact copy of a current drawer of its scope that
// starts no chain is not stored: a duplicate, its id then standing for the
// drawer it copies), and so is an entity's name (an entity of the same name
// and kind takes the import: merged). The records that name a merged or
// duplicate record are filed against the one that took it.

// ImportOutcome is what importing one record did, or would do.
type ImportOutcome string

// Import outcomes.
const (
	ImportCreated   ImportOutcome = "created"
	ImportUnchanged ImportOutcome = "unchanged"
	// ImportUpdated: a current drawer closed as the file shows it, or an
	// entity's aliases grown.
	ImportUpdated ImportOutcome = "updated"
	// ImportMerged: a wing, room or entity of the same name (and kind)
	// under another id took the record.
	ImportMerged ImportOutcome = "merged"
	// ImportConflict: the same id holds another record here (or the
	// record contradicts what the palace holds); nothing was written.
	ImportConflict ImportOutcome = "conflict"
	// ImportDuplicate: a drawer the palace's duplicate rules do not store
	// (an exact copy of a current drawer of its scope).
	ImportDuplicate ImportOutcome = "duplicate"
	// ImportSkipped: a record left out (a vector of another embedding
	// profile; a record naming a record that was not imported).
	ImportSkipped ImportOutcome = "skipped"
)

// Imported is the outcome of one record: what happened, the id of the
// record here that took it (merged, duplicate) and why (conflict,
// skipped).
type Imported struct {
	Outcome ImportOutcome
	// Target is the palace's record that took a merged or duplicate one.
	Target string
	// Reason says why a record conflicts or was skipped.
	Reason string
	// Similar counts the similar_to links a created drawer made.
	Similar int
}

// ImportProfile is the embedding profile whose vectors an import keeps:
// its name and the identity of what makes its vectors. A vector of any
// other identity is skipped (its drawer is embedded again).
type ImportProfile struct {
	Name                      string
	Provider, Model, Pipeline string
	Dimension                 int
}

// Importer applies imported records to a palace (Apply's writes in a
// transaction of the writer) or judges them without writing (a dry run:
// Tx nil). It remembers which ids of the file stand for another record
// here (merged wings, rooms and entities; duplicate drawers): Begin before
// each transaction's first record and Commit once it committed, since a
// transaction may run more than once.
type Importer struct {
	// Dedup is the palace's duplicate rules.
	Dedup Dedup
	// Profile is the active embedding profile; zero keeps no vector.
	Profile ImportProfile
	// CheckOnly, in a dry run, only applies the palace's rules to each
	// record (names, content, kinds): what it would create is not
	// remembered, so its memory stays flat whatever the file's size, and
	// its outcomes are not a report.
	CheckOnly bool

	mapped  map[string]string // file id -> palace id (committed)
	pending map[string]string // this transaction's additions
	// seen holds the ids a dry run would have created, so that the
	// records after them find them.
	seen map[string]bool
	// rooms are the rooms read in this transaction (drawers come by the
	// thousand per room).
	rooms map[string]*Room
}

// ImportTarget is where records are imported: R reads (the transaction,
// or a read view in a dry run), W writes (nil in a dry run).
type ImportTarget struct {
	R Reader
	W Tx
}

// Begin starts a transaction's records: what an earlier run of the same
// transaction mapped is forgotten.
func (im *Importer) Begin() { im.pending, im.rooms = nil, nil }

// room reads a room once per transaction.
func (im *Importer) room(r Reader, id string) (*Room, error) {
	if rm, ok := im.rooms[id]; ok {
		return rm, nil
	}
	rm, err := r.Room(id)
	if err != nil {
		return nil, err
	}
	if im.rooms == nil {
		im.rooms = map[string]*Room{}
	}
	im.rooms[id] = rm
	return rm, nil
}

// Commit keeps what the transaction's records mapped (call once it
// committed).
func (im *Importer) Commit() {
	if im.mapped == nil {
		im.mapped = map[string]string{}
	}
	for k, v := range im.pending {
		im.mapped[k] = v
	}
	im.pending = nil
}

// Mapped is the palace's id of a file's id: the record that took it, or
// the id itself.
func (im *Importer) Mapped(id string) string {
	if v, ok := im.pending[id]; ok {
		return v
	}
	if v, ok := im.mapped[id]; ok {
		return v
	}
	return id
}

// Remember records that a file's id stands for another record here (a
// resumed import rebuilds what its committed part mapped).
func (im *Importer) Remember(fileID, palaceID string) {
	if im.mapped == nil {
		im.mapped = map[string]string{}
	}
	im.mapped[fileID] = palaceID
}

// ForgetDry forgets what a dry run would have created (after a replay of
// a resumed import's committed records).
func (im *Importer) ForgetDry() { im.seen = nil }

func (im *Importer) mapTo(fileID, palaceID string) {
	if im.pending == nil {
		im.pending = map[string]string{}
	}
	im.pending[fileID] = palaceID
}

// made notes an id a dry run would create.
func (im *Importer) made(t ImportTarget, id string) {
	if t.W == nil && !im.CheckOnly {
		if im.seen == nil {
			im.seen = map[string]bool{}
		}
		im.seen[id] = true
	}
}

func (im *Importer) dryMade(t ImportTarget, id string) bool { return t.W == nil && im.seen[id] }

func conflict(format string, args ...any) Imported {
	return Imported{Outcome: ImportConflict, Reason: fmt.Sprintf(format, args...)}
}

func skipped(format string, args ...any) Imported {
	return Imported{Outcome: ImportSkipped, Reason: fmt.Sprintf(format, args...)}
}

// sameTime compares instants (a decoded time and a stored one differ in
// their location only).
func sameTime(a, b time.Time) bool { return a.Equal(b) }

func sameTimePtr(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Equal(*b)
}

// Wing imports a wing (its name already mapped by the caller).
func (im *Importer) Wing(t ImportTarget, w Wing) (Imported, error) {
	if err := CheckPlace("wing", w.Name); err != nil {
		return Imported{}, err
	}
	have, err := t.R.Wing(w.ID)
	if err != nil {
		return Imported{}, err
	}
	if have != nil {
		if have.Name == w.Name && have.Description == w.Description && sameTime(have.CreatedAt, w.CreatedAt) {
			return Imported{Outcome: ImportUnchanged}, nil
		}
		return conflict("wing %s is %q here, %q in the file", w.ID, have.Name, w.Name), nil
	}
	if im.dryMade(t, w.ID) {
		return Imported{Outcome: ImportUnchanged}, nil
	}
	byName, err := t.R.WingByName(w.Name)
	if err != nil {
		return Imported{}, err
	}
	if byName != nil {
		im.mapTo(w.ID, byName.ID)
		return Imported{Outcome: ImportMerged, Target: byName.ID}, nil
	}
	im.made(t, w.ID)
	if t.W != nil {
		if err := t.W.PutWing(&w); err != nil {
			return Imported{}, err
		}
		if err := t.W.Log(ChangeWing, ActionCreated, w.ID); err != nil {
			return Imported{}, err
		}
	}
	return Imported{Outcome: ImportCreated}, nil
}

// wingHere reports whether a wing (a palace id) exists.
func (im *Importer) wingHere(t ImportTarget, id string) (bool, error) {
	if im.dryMade(t, id) {
		return true, nil
	}
	w, err := t.R.Wing(id)
	return w != nil, err
}

// Room imports a room into its wing (the wing's id as the file gives it).
func (im *Importer) Room(t ImportTarget, rm Room) (Imported, error) {
	if err := CheckPlace("room", rm.Name); err != nil {
		return Imported{}, err
	}
	rm.WingID = im.Mapped(rm.WingID)
	if ok, err := im.wingHere(t, rm.WingID); err != nil || !ok {
		return skipped("room %s: its wing %s is not in the palace", rm.ID, rm.WingID), err
	}
	have, err := t.R.Room(rm.ID)
	if err != nil {
		return Imported{}, err
	}
	if have != nil {
		if have.WingID == rm.WingID && have.Name == rm.Name && have.Description == rm.Description && sameTime(have.CreatedAt, rm.CreatedAt) {
			return Imported{Outcome: ImportUnchanged}, nil
		}
		return conflict("room %s is %q (wing %s) here, %q (wing %s) in the file", rm.ID, have.Name, have.WingID, rm.Name, rm.WingID), nil
	}
	if im.dryMade(t, rm.ID) {
		return Imported{Outcome: ImportUnchanged}, nil
	}
	if !im.dryMade(t, rm.WingID) {
		byName, err := t.R.RoomByName(rm.WingID, rm.Name)
		if err != nil {
			return Imported{}, err
		}
		if byName != nil {
			im.mapTo(rm.ID, byName.ID)
			return Imported{Outcome: ImportMerged, Target: byName.ID}, nil
		}
	}
	im.made(t, rm.ID)
	delete(im.rooms, rm.ID)
	if t.W != nil {
		if err := t.W.PutRoom(&rm); err != nil {
			return Imported{}, err
		}
		if err := t.W.Log(ChangeRoom, ActionCreated, rm.ID); err != nil {
			return Imported{}, err
		}
	}
	return Imported{Outcome: ImportCreated}, nil
}

// sameDrawer compares two versions of a drawer record field by field.
func sameDrawer(a, b *Drawer) bool {
	return a.ID == b.ID && a.WingID == b.WingID && a.RoomID == b.RoomID && a.Name == b.Name && a.Content == b.Content &&
		slices.Equal(a.Tags, b.Tags) && a.Source.Kind == b.Source.Kind && a.Source.URI == b.Source.URI &&
		a.Source.Agent == b.Source.Agent && sameJSON(a.Source.Origin, b.Source.Origin) && a.Provenance == b.Provenance &&
		sameTime(a.ValidFrom, b.ValidFrom) && sameTimePtr(a.ValidTo, b.ValidTo) && sameTime(a.CreatedAt, b.CreatedAt) &&
		a.SupersededBy == b.SupersededBy && a.Supersedes == b.Supersedes && a.Diary == b.Diary
}

// sameJSON compares two JSON values by meaning (key order and spacing
// aside).
func sameJSON(a, b []byte) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return string(a) == string(b)
	}
	return reflect.DeepEqual(x, y)
}

// closedVersion reports that have (current here) is d closed: every field
// equal but its end of validity and successor, which d sets.
func closedVersion(have, d *Drawer) bool {
	if !have.Current() || d.Current() || have.SupersededBy != "" {
		return false
	}
	c := *have
	c.ValidTo, c.SupersededBy = d.ValidTo, d.SupersededBy
	return sameDrawer(&c, d)
}

// mined reports a drawer filed as a chunk of a mined document (mining
// stores exact copies, linked).
func mined(d *Drawer) bool {
	_, chunk := ChunkPlace(d.Source)
	return chunk > 0
}

// checkImportedDrawer applies the palace's rules to a drawer's fields.
func checkImportedDrawer(d *Drawer) error {
	if err := CheckContent("content", d.Content); err != nil {
		return err
	}
	tags, err := CheckTags(d.Tags)
	if err != nil {
		return err
	}
	d.Tags = tags
	if d.Name != "" {
		if err := CheckDrawerName(d.Name); err != nil {
			return err
		}
	}
	if err := CheckSourceKind(d.Source.Kind); err != nil {
		return err
	}
	if d.ValidTo != nil && d.ValidTo.Before(d.ValidFrom) {
		return fault.Invalid("valid_to", "is before valid_from")
	}
	if d.SupersededBy != "" && d.ValidTo == nil {
		return fault.Invalid("superseded_by", "is set on a drawer still valid (no valid_to)")
	}
	return nil
}

// PrepareImport is the CPU-heavy part of importing a drawer, done
// outside the writer (and in parallel): the duplicate signature of its
// content. Nil for a drawer that is not current (only current drawers
// are judged).
func PrepareImport(content string, current bool) *Prepared {
	if !current {
		return nil
	}
	norm := dedup.Normalize(content)
	return &Prepared{Hash: dedup.Hash(content), Fingerprint: dedup.Fingerprint(norm), NormLen: utf8.RuneCountInString(norm),
		Norm: norm, Sketch: dedup.MakeSketch(norm)}
}

// Drawer imports a drawer with its id, validity, creation time and chain
// links (its wing and room as the file gives them). Versions come oldest
// first: a drawer it supersedes is here already.
func (im *Importer) Drawer(t ImportTarget, d Drawer) (Imported, error) {
	return im.DrawerPrepared(t, d, nil)
}

// DrawerPrepared is Drawer with its content's signature computed before
// (PrepareImport; nil: computed here).
func (im *Importer) DrawerPrepared(t ImportTarget, d Drawer, p *Prepared) (Imported, error) {
	if err := checkImportedDrawer(&d); err != nil {
		return Imported{}, err
	}
	d.WingID, d.RoomID = im.Mapped(d.WingID), im.Mapped(d.RoomID)
	if d.Supersedes != "" {
		d.Supersedes = im.Mapped(d.Supersedes)
	}
	var rm *Room
	if !im.dryMade(t, d.RoomID) {
		var err error
		if rm, err = im.room(t.R, d.RoomID); err != nil {
			return Imported{}, err
		}
		if rm == nil {
			return skipped("drawer %s: its room %s is not in the palace", d.ID, d.RoomID), nil
		}
		if rm.WingID != d.WingID {
			return conflict("drawer %s: its room %s is in wing %s here, not %s", d.ID, d.RoomID, rm.WingID, d.WingID), nil
		}
	}
	have, err := t.R.Drawer(d.ID)
	if err != nil {
		return Imported{}, err
	}
	if have != nil {
		switch {
		case sameDrawer(have, &d):
			return Imported{Outcome: ImportUnchanged}, nil
		case closedVersion(have, &d):
			return im.closeDrawer(t, have, d.ValidTo, d.SupersededBy)
		}
		return conflict("drawer %s differs from the palace's drawer of that id", d.ID), nil
	}
	if im.dryMade(t, d.ID) {
		return Imported{Outcome: ImportUnchanged}, nil
	}
	if d.SupersededBy != "" {
		if ok, err := t.R.HasDrawer(d.SupersededBy); err != nil || ok {
			// Its successor is here without it: the chain here differs.
			if err == nil {
				return conflict("drawer %s: its successor %s is in the palace already", d.ID, d.SupersededBy), nil
			}
			return Imported{}, err
		}
	}
	var prev *Drawer
	if d.Supersedes != "" && !im.dryMade(t, d.Supersedes) {
		if prev, err = t.R.Drawer(d.Supersedes); err != nil {
			return Imported{}, err
		}
		switch {
		case prev == nil:
			return conflict("drawer %s supersedes drawer %s, which is not in the palace", d.ID, d.Supersedes), nil
		case prev.RoomID != d.RoomID:
			return conflict("drawer %s supersedes drawer %s of another room", d.ID, d.Supersedes), nil
		case prev.SupersededBy == d.ID:
			prev = nil // the chain as the file gives it
		case prev.SupersededBy != "" || !prev.Current():
			return conflict("drawer %s supersedes drawer %s, which is closed here with another successor", d.ID, d.Supersedes), nil
		}
		// else: prev is current here; the file continues its chain.
	}
	out := Imported{Outcome: ImportCreated}
	var rec *DedupRecord
	var links []Link
	if d.Current() {
		if d.Name != "" && rm != nil {
			holder, err := t.R.DrawerByName(rm.ID, d.Name)
			if err != nil {
				return Imported{}, err
			}
			if holder != nil && holder.ID != d.Supersedes {
				if holder.Content == d.Content {
					im.mapTo(d.ID, holder.ID)
					return Imported{Outcome: ImportDuplicate, Target: holder.ID}, nil
				}
				return conflict("drawer %s: its name %q is held here by drawer %s with other content", d.ID, d.Name, holder.ID), nil
			}
		}
		if im.Dedup.Enabled && rm != nil {
			if p != nil {
				rec = p.record(&d)
			} else {
				rec = newDedupRecord(&d)
			}
			var r Reader = t.R
			if d.Supersedes != "" {
				r = skipDrawer{t.R, d.Supersedes}
			}
			ids, err := r.DedupByHash(rec.Scope, rec.Hash)
			if err != nil {
				return Imported{}, err
			}
			copyIsDuplicate := d.Name == "" && d.Supersedes == "" && !mined(&d)
			if copyIsDuplicate {
				// An exact copy decides it alone: the near-duplicate
				// search is for a drawer that is stored.
				exact, err := firstExact(r, &d, ids)
				if err != nil {
					return Imported{}, err
				}
				if exact != nil {
					im.mapTo(d.ID, exact.ID)
					return Imported{Outcome: ImportDuplicate, Target: exact.ID}, nil
				}
			}
			_, found, err := duplicatesOf(r, &d, rec, im.Dedup.Threshold, nil, ids)
			if err != nil {
				return Imported{}, err
			}
			links = found
		}
	}
	im.made(t, d.ID)
	if t.W == nil {
		out.Similar = min(len(links), maxLinks)
		return out, nil
	}
	tx := t.W
	if prev != nil {
		// The file continues a chain the palace holds current: close it
		// as the file's successor opens.
		if _, err := im.closeDrawer(t, prev, &d.ValidFrom, d.ID); err != nil {
			return Imported{}, err
		}
	}
	if err := tx.PutDrawer(&d, nil); err != nil {
		return Imported{}, err
	}
	if err := tx.Log(ChangeDrawer, ActionCreated, d.ID); err != nil {
		return Imported{}, err
	}
	if rec != nil {
		if err := tx.PutDedup(rec); err != nil {
			return Imported{}, err
		}
		if links, err = admitLinks(tx, links, maxLinks, olderEnd); err != nil {
			return Imported{}, err
		}
		for i := range links {
			links[i].Newer, links[i].CreatedAt = d.ID, tx.Now()
			if err := tx.PutLink(&links[i]); err != nil {
				return Imported{}, err
			}
			if err := tx.Log(ChangeLink, ActionCreated, links[i].ID); err != nil {
				return Imported{}, err
			}
		}
		out.Similar = len(links)
	}
	return out, nil
}

// closeDrawer ends a current drawer's validity at the instant the file
// gives, with its successor (if any), and drops its dedup keys.
func (im *Importer) closeDrawer(t ImportTarget, have *Drawer, validTo *time.Time, successor string) (Imported, error) {
	if t.W == nil {
		return Imported{Outcome: ImportUpdated}, nil
	}
	prev := *have
	next := *have
	to := *validTo
	next.ValidTo, next.SupersededBy = &to, successor
	if err := t.W.PutDrawer(&next, &prev); err != nil {
		return Imported{}, err
	}
	if err := t.W.Log(ChangeDrawer, ActionUpdated, next.ID); err != nil {
		return Imported{}, err
	}
	if rec, err := t.W.DedupRecord(next.ID); err != nil {
		return Imported{}, err
	} else if rec != nil {
		if err := t.W.DeleteDedup(rec); err != nil {
			return Imported{}, err
		}
	}
	return Imported{Outcome: ImportUpdated}, nil
}

// drawerHere is the palace's id of a file's drawer, "" when it is not
// here (not imported).
func (im *Importer) drawerHere(t ImportTarget, id string) (string, error) {
	id = im.Mapped(id)
	if im.dryMade(t, id) {
		return id, nil
	}
	ok, err := t.R.HasDrawer(id)
	if err != nil || !ok {
		return "", err
	}
	return id, nil
}

// Entity imports an entity with its aliases.
func (im *Importer) Entity(t ImportTarget, e Entity) (Imported, error) {
	if err := CheckEntityName("name", e.Name); err != nil {
		return Imported{}, err
	}
	if !graph.CheckKind(e.Kind) {
		return Imported{}, fault.Invalid("kind", fmt.Sprintf("%q is not one of the entity kinds", e.Kind))
	}
	for _, a := range e.Aliases {
		if err := CheckEntityName("aliases", a); err != nil {
			return Imported{}, err
		}
	}
	e.Key = graph.Key(e.Name)
	have, err := t.R.Entity(e.ID)
	if err != nil {
		return Imported{}, err
	}
	if have == nil && !im.dryMade(t, e.ID) {
		ids, err := t.R.EntityIDs(EntityByName, e.Name)
		if err != nil {
			return Imported{}, err
		}
		for _, id := range ids {
			o, err := t.R.Entity(id)
			if err != nil {
				return Imported{}, err
			}
			if o != nil && o.Name == e.Name && o.Kind == e.Kind {
				im.mapTo(e.ID, o.ID)
				res, err := im.addAliases(t, o, e.Aliases)
				if err != nil {
					return Imported{}, err
				}
				res.Outcome, res.Target = ImportMerged, o.ID
				return res, nil
			}
		}
		im.made(t, e.ID)
		if t.W != nil {
			if err := t.W.PutEntity(&e, nil); err != nil {
				return Imported{}, err
			}
			if err := t.W.Log(ChangeEntity, ActionCreated, e.ID); err != nil {
				return Imported{}, err
			}
		}
		return Imported{Outcome: ImportCreated}, nil
	}
	if have == nil {
		return Imported{Outcome: ImportUnchanged}, nil
	}
	if have.Name != e.Name || have.Kind != e.Kind {
		return conflict("entity %s is %q (%s) here, %q (%s) in the file", e.ID, have.Name, have.Kind, e.Name, e.Kind), nil
	}
	return im.addAliases(t, have, e.Aliases)
}

// addAliases adds the spellings an entity lacks (updated), else changes
// nothing (unchanged).
func (im *Importer) addAliases(t ImportTarget, have *Entity, aliases []string) (Imported, error) {
	var add []string
	for _, a := range aliases {
		if a != have.Name && !slices.Contains(have.Aliases, a) && !slices.Contains(add, a) {
			add = append(add, a)
		}
	}
	if len(add) == 0 {
		return Imported{Outcome: ImportUnchanged}, nil
	}
	if t.W != nil {
		prev := *have
		next := *have
		next.Aliases = append(slices.Clone(have.Aliases), add...)
		if err := t.W.PutEntity(&next, &prev); err != nil {
			return Imported{}, err
		}
		if err := t.W.Log(ChangeEntity, ActionUpdated, next.ID); err != nil {
			return Imported{}, err
		}
	}
	return Imported{Outcome: ImportUpdated}, nil
}

func (im *Importer) entityHere(t ImportTarget, id string) (string, error) {
	id = im.Mapped(id)
	if im.dryMade(t, id) {
		return id, nil
	}
	e, err := t.R.Entity(id)
	if err != nil || e == nil {
		return "", err
	}
	return id, nil
}

// Mention imports a drawer's mention of an entity (the first mention of a
// pair is kept, as the palace keeps it).
func (im *Importer) Mention(t ImportTarget, m Mention) (Imported, error) {
	d, err := im.drawerHere(t, m.Drawer)
	if err != nil || d == "" {
		return skipped("mention of %s by drawer %s: the drawer is not in the palace", m.Entity, m.Drawer), err
	}
	e, err := im.entityHere(t, m.Entity)
	if err != nil || e == "" {
		return skipped("mention of %s by drawer %s: the entity is not in the palace", m.Entity, m.Drawer), err
	}
	m.Drawer, m.Entity = d, e
	if !im.dryMade(t, d) {
		have, err := t.R.Mention(d, e)
		if err != nil {
			return Imported{}, err
		}
		if have != nil {
			return Imported{Outcome: ImportUnchanged}, nil
		}
	}
	if t.W != nil {
		if err := t.W.PutMention(&m); err != nil {
			return Imported{}, err
		}
	}
	return Imported{Outcome: ImportCreated}, nil
}

// sameFact compares two versions of a fact record.
func sameFact(a, b *Relationship) bool {
	return a.ID == b.ID && a.Subject == b.Subject && a.Predicate == b.Predicate && a.Object == b.Object &&
		a.Confidence == b.Confidence && sameTime(a.ValidFrom, b.ValidFrom) && sameTimePtr(a.ValidTo, b.ValidTo) &&
		sameTime(a.RecordedAt, b.RecordedAt) && sameTimePtr(a.RetractedAt, b.RetractedAt) && a.Drawer == b.Drawer &&
		a.Job == b.Job && a.Extractor == b.Extractor && a.SupersededBy == b.SupersededBy && a.Reason == b.Reason &&
		a.ClosedBy == b.ClosedBy && slices.EqualFunc(a.Evidence, b.Evidence, func(x, y Evidence) bool {
		return x.ID == y.ID && x.Drawer == y.Drawer && x.Job == y.Job && x.Extractor == y.Extractor &&
			x.Confidence == y.Confidence && sameTime(x.RecordedAt, y.RecordedAt)
	})
}

// Fact imports a fact with both time axes and its decisions (superseded
// by, reason, closing evidence), its entities and drawers mapped.
func (im *Importer) Fact(t ImportTarget, f Relationship) (Imported, error) {
	if !graph.CheckPredicate(f.Predicate) {
		return Imported{}, fault.Invalid("predicate", fmt.Sprintf("%q is not one of the predicates", f.Predicate))
	}
	if f.Confidence < 0 || f.Confidence > 1 {
		return Imported{}, fault.Invalid("confidence", "must be between 0 and 1")
	}
	for _, ref := range []*string{&f.Subject, &f.Object} {
		id, err := im.entityHere(t, *ref)
		if err != nil || id == "" {
			return skipped("fact %s: its entity %s is not in the palace", f.ID, *ref), err
		}
		*ref = id
	}
	f.Drawer, f.ClosedBy = im.Mapped(f.Drawer), im.Mapped(f.ClosedBy)
	f.Evidence = slices.Clone(f.Evidence)
	for i := range f.Evidence {
		f.Evidence[i].Drawer = im.Mapped(f.Evidence[i].Drawer)
	}
	have, err := t.R.Relationship(f.ID)
	if err != nil {
		return Imported{}, err
	}
	if have != nil {
		if sameFact(have, &f) {
			return Imported{Outcome: ImportUnchanged}, nil
		}
		return conflict("fact %s differs from the palace's fact of that id", f.ID), nil
	}
	if im.dryMade(t, f.ID) {
		return Imported{Outcome: ImportUnchanged}, nil
	}
	im.made(t, f.ID)
	if t.W != nil {
		if err := t.W.PutRelationship(&f, nil); err != nil {
			return Imported{}, err
		}
		if err := t.W.Log(ChangeRelationship, ActionCreated, f.ID); err != nil {
			return Imported{}, err
		}
	}
	return Imported{Outcome: ImportCreated}, nil
}

// FactLink imports a lifecycle link between facts (confirms, contradicts,
// refines).
func (im *Importer) FactLink(t ImportTarget, l RelationshipLink) (Imported, error) {
	if !slices.Contains(graph.LinkKinds, l.Kind) {
		return Imported{}, fault.Invalid("kind", fmt.Sprintf("%q is not one of the fact link kinds", l.Kind))
	}
	for _, id := range []string{l.From, l.To} {
		if im.dryMade(t, id) {
			continue
		}
		f, err := t.R.Relationship(id)
		if err != nil || f == nil {
			return skipped("fact link %s: its fact %s is not in the palace", l.ID, id), err
		}
	}
	l.Drawer = im.Mapped(l.Drawer)
	if !im.dryMade(t, l.From) {
		links, err := t.R.RelationshipLinks(l.From)
		if err != nil {
			return Imported{}, err
		}
		for _, h := range links {
			if h.ID == l.ID {
				if h.From == l.From && h.To == l.To && h.Kind == l.Kind && h.Reason == l.Reason && h.Drawer == l.Drawer && h.Job == l.Job {
					return Imported{Outcome: ImportUnchanged}, nil
				}
				return conflict("fact link %s differs from the palace's link of that id", l.ID), nil
			}
		}
	}
	if t.W != nil {
		if err := t.W.PutRelationshipLink(&l); err != nil {
			return Imported{}, err
		}
	}
	return Imported{Outcome: ImportCreated}, nil
}

// Source imports a source's state in a wing (the wing's id as the file
// gives it): its identity, without a cursor (the palace mines it from the
// start, and its documents' revisions make unchanged documents no-ops),
// under its key made again for the wing it lands in (Key: the file's
// key, mapped to the palace's).
func (im *Importer) Source(t ImportTarget, s SourceState) (Imported, error) {
	s.WingID = im.Mapped(s.WingID)
	if ok, err := im.wingHere(t, s.WingID); err != nil || !ok {
		return skipped("source %s: its wing %s is not in the palace", s.Identity.Locator, s.WingID), err
	}
	fileKey := s.Key
	s.Key = TargetKey(s.Identity.Key(), s.WingID)
	if fileKey != "" && fileKey != s.Key {
		im.mapTo(fileKey, s.Key)
	}
	have, err := t.R.Source(s.Key)
	if err != nil {
		return Imported{}, err
	}
	if have != nil {
		// The palace mines it already: its own cursor and documents are
		// kept (a cursor is the adapter's own data, never imported).
		return Imported{Outcome: ImportUnchanged}, nil
	}
	if im.dryMade(t, s.Key) {
		return Imported{Outcome: ImportUnchanged}, nil
	}
	im.made(t, s.Key)
	if t.W != nil {
		s.Cursor = nil
		s.Documents = 0 // counted as its documents are imported
		if err := t.W.PutSource(&s); err != nil {
			return Imported{}, err
		}
	}
	return Imported{Outcome: ImportCreated}, nil
}

// Document imports a document's identity and last filed revision under
// its source (d.Source: the file's key of a source imported before it),
// its chunks' drawers mapped and recorded as its chunks.
func (im *Importer) Document(t ImportTarget, d DocumentState) (Imported, error) {
	d.WingID = im.Mapped(d.WingID)
	d.Source = im.Mapped(d.Source)
	st, err := t.R.Source(d.Source)
	if err != nil {
		return Imported{}, err
	}
	if st == nil && !im.dryMade(t, d.Source) {
		return skipped("document %s: its source is not in the palace", d.ID), nil
	}
	d.Chunks = slices.Clone(d.Chunks)
	for i := range d.Chunks {
		d.Chunks[i].Drawer = im.Mapped(d.Chunks[i].Drawer)
	}
	have, err := t.R.SourceDocument(d.Source, d.ID)
	if err != nil {
		return Imported{}, err
	}
	if have != nil {
		if have.WingID == d.WingID && have.Revision == d.Revision && have.Meta == d.Meta && slices.Equal(have.Chunks, d.Chunks) {
			return Imported{Outcome: ImportUnchanged}, nil
		}
		return conflict("document %s of source %s has another revision here", d.ID, d.Source), nil
	}
	if t.W != nil {
		if err := t.W.PutSourceDocument(&d); err != nil {
			return Imported{}, err
		}
		for _, c := range d.Chunks {
			if ok, err := t.R.HasDrawer(c.Drawer); err != nil {
				return Imported{}, err
			} else if ok {
				if err := t.W.PutChunkOwner(c.Drawer, d.Source, d.ID); err != nil {
					return Imported{}, err
				}
			}
		}
		next := *st
		next.Documents++
		if err := t.W.PutSource(&next); err != nil {
			return Imported{}, err
		}
	}
	return Imported{Outcome: ImportCreated}, nil
}

// Vector imports a drawer's vector when it was made as the active
// profile makes its vectors (stored under that profile); any other is
// skipped, and the drawer is embedded again.
func (im *Importer) Vector(t ImportTarget, e Embedding) (Imported, error) {
	p := im.Profile
	if p.Name == "" || e.Provider != p.Provider || e.Model != p.Model || e.Pipeline != p.Pipeline || e.Dimension != p.Dimension {
		return skipped("vector of drawer %s: made by another embedding profile", e.DrawerID), nil
	}
	if len(e.Vector) != e.Dimension {
		return Imported{}, fault.Invalid("vector", fmt.Sprintf("has %d numbers; its dimension is %d", len(e.Vector), e.Dimension))
	}
	if mapped := im.Mapped(e.DrawerID); mapped != e.DrawerID {
		return skipped("vector of drawer %s: the drawer was a duplicate of %s", e.DrawerID, mapped), nil
	}
	d, err := im.drawerHere(t, e.DrawerID)
	if err != nil || d == "" {
		return skipped("vector of drawer %s: the drawer is not in the palace", e.DrawerID), err
	}
	e.Profile = p.Name
	if !im.dryMade(t, d) {
		have, err := t.R.Embedding(d, p.Name)
		if err != nil {
			return Imported{}, err
		}
		if have != nil {
			return Imported{Outcome: ImportUnchanged}, nil
		}
	}
	if t.W != nil {
		if err := t.W.PutEmbedding(&e); err != nil {
			return Imported{}, err
		}
	}
	return Imported{Outcome: ImportCreated}, nil
}

// EntityLink imports a link between entities (possibly_same_as), both
// mapped.
func (im *Importer) EntityLink(t ImportTarget, l EntityLink) (Imported, error) {
	for _, ref := range []*string{&l.From, &l.To} {
		id, err := im.entityHere(t, *ref)
		if err != nil || id == "" {
			return skipped("entity link %s: its entity %s is not in the palace", l.ID, *ref), err
		}
		*ref = id
	}
	if l.From == l.To {
		return skipped("entity link %s: both ends are entity %s here", l.ID, l.From), nil
	}
	if !im.dryMade(t, l.From) {
		links, err := t.R.EntityLinks(l.From)
		if err != nil {
			return Imported{}, err
		}
		for _, h := range links {
			if h.ID == l.ID || (h.From == l.From && h.To == l.To && h.Kind == l.Kind) {
				return Imported{Outcome: ImportUnchanged}, nil
			}
		}
	}
	if t.W != nil {
		if err := t.W.PutEntityLink(&l); err != nil {
			return Imported{}, err
		}
	}
	return Imported{Outcome: ImportCreated}, nil
}
