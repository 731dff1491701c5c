package export

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"hash"
	"io"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/store"
)

// Options select what an export holds.
type Options struct {
	// Wings are the wings exported, by name (empty: every wing). An
	// unknown name is refused before anything is written.
	Wings []string
	// Since, when set, exports what was created or changed at or after it
	// (the rule of each record type: docs/EXPORT.md), with what it needs
	// to be imported: its wing and room, the whole supersession chain of
	// a drawer, the entities of a mention or a fact.
	Since time.Time
	// Vectors exports the vectors of Profiles.
	Vectors bool
	// Profiles are the embedding profiles whose vectors are exported
	// with Vectors (the daemon's configured ones).
	Profiles []string
	// Generator names the program in the header, e.g. "loci 1.4.0".
	Generator string
	// Now is the header's created_at (time.Now where zero).
	Now time.Time
}

// Summary is what an export wrote: its records (the end record
// excluded), per type, its bytes and its digest.
type Summary struct {
	Records int64          `json:"records"`
	Counts  map[string]int `json:"counts"`
	Bytes   int64          `json:"bytes"`
	Digest  string         `json:"digest"`
	// PalaceID is the exported palace's identity.
	PalaceID string `json:"palace_id"`
	// Orphans counts the drawers left out because their room or wing is
	// gone (loci audit finds them, loci repair removes them).
	Orphans int `json:"orphans,omitempty"`
}

// flushEvery is how many records go between checks of the context.
const checkEvery = 1024

// writer is one export being written.
type writer struct {
	ctx    context.Context
	r      store.Reader
	o      Options
	since  bool
	out    *bufio.Writer
	digest hash.Hash
	buf    bytes.Buffer
	enc    *json.Encoder
	sum    Summary

	wingIDs  map[string]bool // the selected wings (nil: every wing)
	wingsOut map[string]bool
	roomsOut map[string]string // room id -> its wing's id
	entsOut  map[string]bool
	entOrder []string
	factsOut map[string]bool
	facts    []string

	orphans  map[string]bool   // drawers left out
	chain    []*store.Drawer   // reused by visit
	mentions [][]store.Mention // reused by visit
}

// Write writes an export of db to w from one consistent read view: the
// header, the selected records, and the end record. Nothing is written
// when a wing is unknown. Secrets never are: no token, credential, auth
// state, job, configuration or source cursor is part of the format.
func Write(ctx context.Context, db store.DB, w io.Writer, o Options) (Summary, error) {
	palaceID, err := store.PalaceID(ctx, db)
	if err != nil {
		return Summary{}, err
	}
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	var sum Summary
	err = db.View(ctx, func(r store.Reader) error {
		x := &writer{ctx: ctx, r: r, o: o, since: !o.Since.IsZero(), out: bufio.NewWriterSize(w, 256<<10), digest: sha256.New(),
			sum:     Summary{Counts: map[string]int{}, PalaceID: palaceID},
			orphans: map[string]bool{}, wingsOut: map[string]bool{}, roomsOut: map[string]string{}, entsOut: map[string]bool{}, factsOut: map[string]bool{}}
		x.enc = json.NewEncoder(&x.buf)
		x.enc.SetEscapeHTML(false)
		if err := x.run(palaceID); err != nil {
			return err
		}
		sum = x.sum
		return nil
	})
	return sum, err
}

func (x *writer) run(palaceID string) error {
	all, err := x.r.Wings()
	if err != nil {
		return err
	}
	wings := all
	if len(x.o.Wings) > 0 {
		x.wingIDs = map[string]bool{}
		wings = nil
		for _, name := range x.o.Wings {
			i := slices.IndexFunc(all, func(w store.Wing) bool { return w.Name == name })
			if i < 0 {
				return fault.Newf(fault.PalaceWingNotFound, "list the wings (loci wing list, GET /api/wings) and export one of them", "no wing named %q", name)
			}
			if !x.wingIDs[all[i].ID] {
				x.wingIDs[all[i].ID] = true
				wings = append(wings, all[i])
			}
		}
	}
	sel := Selection{Wings: []string{}, Vectors: x.o.Vectors}
	for _, w := range wings {
		if x.wingIDs != nil {
			sel.Wings = append(sel.Wings, w.Name)
		}
	}
	if x.since {
		t := x.o.Since.UTC()
		sel.Since = &t
	}
	if x.o.Vectors {
		sel.Profiles = append([]string{}, x.o.Profiles...)
	}
	if err := x.emit(TypeHeader, &Header{Type: TypeHeader, Format: Format, Version: Version, CreatedAt: x.o.Now.UTC(),
		PalaceID: palaceID, Generator: x.o.Generator, Selection: sel}); err != nil {
		return err
	}
	for _, w := range wings {
		if !x.since || x.changed(w.CreatedAt) {
			if err := x.wing(&w); err != nil {
				return err
			}
		}
		rooms, err := x.r.Rooms(w.ID)
		if err != nil {
			return err
		}
		for _, rm := range rooms {
			if !x.since || x.changed(rm.CreatedAt) {
				if err := x.room(&rm); err != nil {
					return err
				}
			}
			if x.wingIDs != nil {
				// Some wings: their rooms' drawers, room by room (the
				// read is the wings', not the palace's).
				if err := x.drawers(&rm); err != nil {
					return err
				}
			}
		}
	}
	if x.wingIDs == nil {
		// Every wing: the drawers in the store's order, which reads each
		// stored block once.
		var err error
		if cerr := x.r.EachDrawer(func(d *store.Drawer) bool {
			err = x.visit(d, nil)
			return err == nil
		}); cerr != nil {
			return cerr
		}
		if err != nil {
			return err
		}
	}
	if err := x.sources(); err != nil {
		return err
	}
	if err := x.entitiesAndFacts(); err != nil {
		return err
	}
	return x.end()
}

// changed reports an instant at or after Since.
func (x *writer) changed(t time.Time) bool { return !t.Before(x.o.Since) }

// emit writes one record as a line.
func (x *writer) emit(typ string, v any) error {
	x.buf.Reset()
	if err := x.enc.Encode(v); err != nil {
		return fault.Wrap(fault.SerializationFailed, err, "an export record could not be encoded", "report it")
	}
	b := x.buf.Bytes()
	x.digest.Write(b)
	if _, err := x.out.Write(b); err != nil {
		return err
	}
	x.sum.Bytes += int64(len(b))
	x.sum.Records++
	x.sum.Counts[typ]++
	if x.sum.Records%checkEvery == 0 {
		return x.ctx.Err()
	}
	return nil
}

func (x *writer) end() error {
	x.sum.Digest = "sha256:" + hex.EncodeToString(x.digest.Sum(nil))
	counts := make(map[string]int, len(x.sum.Counts))
	for k, v := range x.sum.Counts {
		counts[k] = v
	}
	x.buf.Reset()
	if err := x.enc.Encode(&End{Type: TypeEnd, Records: x.sum.Records, Digest: x.sum.Digest, Counts: counts}); err != nil {
		return err
	}
	if _, err := x.out.Write(x.buf.Bytes()); err != nil {
		return err
	}
	x.sum.Bytes += int64(x.buf.Len())
	return x.out.Flush()
}

func (x *writer) wing(w *store.Wing) error {
	if x.wingsOut[w.ID] {
		return nil
	}
	x.wingsOut[w.ID] = true
	return x.emit(TypeWing, &Wing{Type: TypeWing, ID: w.ID, Name: w.Name, Description: w.Description, CreatedAt: w.CreatedAt.UTC()})
}

func (x *writer) wingByID(id string) error {
	if x.wingsOut[id] {
		return nil
	}
	w, err := x.r.Wing(id)
	if err != nil {
		return err
	}
	if w == nil {
		return fault.Newf(fault.StoreMalformed, "run loci doctor", "wing %s is named but not stored", id)
	}
	return x.wing(w)
}

// wingStored reports whether a wing is stored.
func (x *writer) wingStored(id string) bool {
	w, err := x.r.Wing(id)
	return err == nil && w != nil
}

func (x *writer) room(rm *store.Room) error {
	if _, done := x.roomsOut[rm.ID]; done {
		return nil
	}
	if err := x.wingByID(rm.WingID); err != nil {
		return err
	}
	x.roomsOut[rm.ID] = rm.WingID
	return x.emit(TypeRoom, &Room{Type: TypeRoom, ID: rm.ID, WingID: rm.WingID, Name: rm.Name, Description: rm.Description, CreatedAt: rm.CreatedAt.UTC()})
}

// drawers writes a room's drawers chain by chain.
func (x *writer) drawers(rm *store.Room) error {
	var err error
	if cerr := x.r.Drawers(rm.ID, false, func(d *store.Drawer) bool {
		err = x.visit(d, rm)
		return err == nil
	}); cerr != nil {
		return cerr
	}
	return err
}

// mentionsByEntity reports an export of everything: its mentions are
// written after its drawers, entity by entity (one read an entity), not
// read drawer by drawer (one read a drawer, most finding none).
func (x *writer) mentionsByEntity() bool { return x.wingIDs == nil && !x.since }

// visit writes the chain d is the first version of, each version oldest
// first and followed by its mentions and vectors, when the selection
// takes it; a later version is written with its chain's first. rm is
// d's room when the caller has it.
func (x *writer) visit(d *store.Drawer, rm *store.Room) error {
	if d.Supersedes != "" {
		// A later version: written with the first of its chain, unless
		// that one is gone (or names another successor).
		prev, err := x.r.Drawer(d.Supersedes)
		if err != nil {
			return err
		}
		if prev != nil && prev.SupersededBy == d.ID && prev.RoomID == d.RoomID {
			return nil
		}
	}
	chain := x.chain[:0]
	for cur := d; ; {
		chain = append(chain, cur)
		if cur.SupersededBy == "" {
			break
		}
		next, err := x.r.Drawer(cur.SupersededBy)
		if err != nil {
			return err
		}
		if next == nil || next.Supersedes != cur.ID || next.RoomID != cur.RoomID || len(chain) > maxChain {
			// The successor is gone: the chain ends here.
			c := *cur
			c.SupersededBy = ""
			chain[len(chain)-1] = &c
			break
		}
		cur = next
	}
	x.chain = chain
	if d.Supersedes != "" {
		c := *chain[0]
		c.Supersedes = ""
		chain[0] = &c
	}
	selected := !x.since
	mentions := x.mentions[:0]
	for _, v := range chain {
		var ms []store.Mention
		if !x.mentionsByEntity() {
			var err error
			if ms, err = x.r.DrawerMentions(v.ID); err != nil {
				return err
			}
		}
		mentions = append(mentions, ms)
		if x.since && (x.changed(v.CreatedAt) || v.ValidTo != nil && x.changed(*v.ValidTo)) {
			selected = true
		}
		for _, m := range ms {
			if x.since && x.changed(m.CreatedAt) {
				selected = true
			}
		}
	}
	x.mentions = mentions
	if !selected {
		return nil
	}
	wing, ok := x.roomsOut[d.RoomID]
	if !ok {
		if rm == nil {
			var err error
			if rm, err = x.r.Room(d.RoomID); err != nil {
				return err
			}
		}
		if rm != nil && (x.wingsOut[rm.WingID] || x.wingStored(rm.WingID)) {
			if err := x.room(rm); err != nil {
				return err
			}
			wing, ok = rm.WingID, true
		}
	}
	if !ok || wing != d.WingID {
		// An orphan (its room or wing is gone, or its room is another
		// wing's: loci audit finds them): not importable, left out and
		// counted.
		x.sum.Orphans += len(chain)
		for _, v := range chain {
			x.orphans[v.ID] = true
		}
		return nil
	}
	for i, v := range chain {
		if err := x.drawer(v, mentions[i]); err != nil {
			return err
		}
	}
	return nil
}

// maxChain bounds a chain followed (a loop in damaged data ends there).
const maxChain = 100_000

func (x *writer) drawer(d *store.Drawer, ms []store.Mention) error {
	rec := Drawer{Type: TypeDrawer, ID: d.ID, WingID: d.WingID, RoomID: d.RoomID, Name: d.Name, Content: d.Content,
		Tags: d.Tags, Source: Source{Kind: d.Source.Kind, URI: d.Source.URI, Agent: d.Source.Agent, Origin: d.Source.Origin},
		Provenance: Provenance{RequestedBy: d.Provenance.RequestedBy, JobID: d.Provenance.JobID},
		ValidFrom:  d.ValidFrom.UTC(), ValidTo: utcp(d.ValidTo), CreatedAt: d.CreatedAt.UTC(),
		Supersedes: d.Supersedes, SupersededBy: d.SupersededBy, Diary: d.Diary}
	if rec.Tags == nil {
		rec.Tags = []string{}
	}
	if err := x.emit(TypeDrawer, &rec); err != nil {
		return err
	}
	for i := range ms {
		if err := x.entityByID(ms[i].Entity); err != nil {
			return err
		}
		if err := x.emitMention(&ms[i]); err != nil {
			return err
		}
	}
	if !x.o.Vectors {
		return nil
	}
	for _, p := range x.o.Profiles {
		e, err := x.r.Embedding(d.ID, p)
		if err != nil {
			return err
		}
		if e == nil {
			continue
		}
		if err := x.emit(TypeVector, &Vector{Type: TypeVector, DrawerID: e.DrawerID, Profile: e.Profile, Provider: e.Provider, Model: e.Model,
			Dimension: len(e.Vector), Pipeline: e.Pipeline, CreatedAt: e.CreatedAt.UTC(), Vector: e.Vector}); err != nil {
			return err
		}
	}
	return nil
}

func (x *writer) emitMention(m *store.Mention) error {
	return x.emit(TypeMention, &Mention{Type: TypeMention, DrawerID: m.Drawer, EntityID: m.Entity, Name: m.Name, Rule: m.Rule,
		Confidence: m.Confidence, Extractor: m.Extractor, Origin: m.Origin, CreatedAt: m.CreatedAt.UTC()})
}

func utcp(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

func (x *writer) entity(e *store.Entity) error {
	if x.entsOut[e.ID] {
		return nil
	}
	x.entsOut[e.ID] = true
	x.entOrder = append(x.entOrder, e.ID)
	aliases := e.Aliases
	if aliases == nil {
		aliases = []string{}
	}
	return x.emit(TypeEntity, &Entity{Type: TypeEntity, ID: e.ID, Name: e.Name, Kind: e.Kind, Key: e.Key, Aliases: aliases, CreatedAt: e.CreatedAt.UTC()})
}

func (x *writer) entityByID(id string) error {
	if x.entsOut[id] {
		return nil
	}
	e, err := x.r.Entity(id)
	if err != nil {
		return err
	}
	if e == nil {
		return fault.Newf(fault.StoreMalformed, "run loci doctor", "entity %s is named but not stored", id)
	}
	return x.entity(e)
}

// sources writes the mined sources of the selected wings and their
// documents (with Since: those run at or after it).
func (x *writer) sources() error {
	var err error
	visit := func(s *store.SourceState) bool {
		if s.WingID == "" || (x.wingIDs != nil && !x.wingIDs[s.WingID]) || (x.since && !x.changed(s.LastRun)) {
			return true
		}
		w, e := x.r.Wing(s.WingID)
		if e != nil || w == nil { // a state of a wing deleted since
			err = e
			return e == nil
		}
		if err = x.wing(w); err != nil {
			return false
		}
		if err = x.emit(TypeSource, &SourceState{Type: TypeSource, Key: s.Key, Adapter: s.Identity.Adapter, Account: s.Identity.Account,
			Locator: scrubLocator(s.Identity.Locator), WingID: s.WingID, Documents: s.Documents, LastJob: s.LastJob, LastRun: s.LastRun.UTC()}); err != nil {
			return false
		}
		if cerr := x.r.SourceDocuments(s.Key, func(d *store.DocumentState) bool {
			chunks := make([]Chunk, len(d.Chunks))
			for i, c := range d.Chunks {
				chunks[i] = Chunk{DrawerID: c.Drawer, Hash: c.Hash}
			}
			err = x.emit(TypeDocument, &Document{Type: TypeDocument, Source: s.Key, ID: d.ID, WingID: s.WingID, Revision: d.Revision, Meta: d.Meta, Chunks: chunks})
			return err == nil
		}); cerr != nil {
			err = cerr
		}
		return err == nil
	}
	if cerr := x.r.Sources(visit); cerr != nil {
		return cerr
	}
	return err
}

// scrubLocator drops a password a URL locator may carry.
func scrubLocator(loc string) string {
	if !strings.Contains(loc, "@") || !strings.Contains(loc, "://") {
		return loc
	}
	u, err := url.Parse(loc)
	if err != nil || u.User == nil {
		return loc
	}
	if _, has := u.User.Password(); has {
		u.User = url.User(u.User.Username())
		return u.String()
	}
	return loc
}

// entitiesAndFacts writes the entities not written yet (every wing: all
// of them; with Since, those created at or after it), then the facts,
// their decisions and the entity links between written entities.
func (x *writer) entitiesAndFacts() error {
	var err error
	var subjects []string
	if cerr := x.r.Entities(func(e *store.Entity) bool {
		subjects = append(subjects, e.ID)
		if x.wingIDs == nil && (!x.since || x.changed(e.CreatedAt)) {
			if err = x.entity(e); err != nil {
				return false
			}
		}
		if x.mentionsByEntity() {
			err = x.entityMentions(e.ID)
		}
		return err == nil
	}); cerr != nil {
		return cerr
	}
	if err != nil {
		return err
	}
	for _, id := range subjects {
		if cerr := x.r.EntityRelationships(id, func(f *store.Relationship) bool {
			if f.Subject != id || x.factsOut[f.ID] {
				return true
			}
			var ok bool
			if ok, err = x.factSelected(f); err != nil || !ok {
				return err == nil
			}
			err = x.fact(f)
			return err == nil
		}); cerr != nil {
			return cerr
		}
		if err != nil {
			return err
		}
	}
	for _, id := range x.facts {
		links, err := x.r.RelationshipLinks(id)
		if err != nil {
			return err
		}
		for _, l := range links {
			if l.From != id || !x.factsOut[l.To] {
				continue
			}
			if err := x.emit(TypeDecision, &Decision{Type: TypeDecision, ID: l.ID, From: l.From, To: l.To, Kind: l.Kind, Reason: l.Reason,
				DrawerID: l.Drawer, JobID: l.Job, CreatedAt: l.CreatedAt.UTC()}); err != nil {
				return err
			}
		}
	}
	for _, id := range x.entOrder {
		links, err := x.r.EntityLinks(id)
		if err != nil {
			return err
		}
		for _, l := range links {
			if l.From != id || !x.entsOut[l.To] || (x.since && !x.changed(l.CreatedAt)) {
				continue
			}
			if err := x.emit(TypeEntityLink, &EntityLink{Type: TypeEntityLink, ID: l.ID, From: l.From, To: l.To, Kind: l.Kind, CreatedAt: l.CreatedAt.UTC()}); err != nil {
				return err
			}
		}
	}
	return nil
}

// entityMentions writes an entity's mentions of the drawers written.
func (x *writer) entityMentions(id string) error {
	var err error
	if cerr := x.r.Mentions(id, func(m *store.Mention) bool {
		if x.orphans[m.Drawer] {
			return true
		}
		var ok bool
		if ok, err = x.r.HasDrawer(m.Drawer); err != nil || !ok {
			return err == nil
		}
		err = x.emitMention(m)
		return err == nil
	}); cerr != nil {
		return cerr
	}
	return err
}

// factSelected applies the selection to a fact: with wings, its first
// evidence drawer is in one of them; with Since, it was recorded,
// retracted, asserted again or superseded at or after it.
func (x *writer) factSelected(f *store.Relationship) (bool, error) {
	if x.wingIDs != nil {
		if f.Drawer == "" {
			return false, nil
		}
		d, err := x.r.Drawer(f.Drawer)
		if err != nil || d == nil || !x.wingIDs[d.WingID] {
			return false, err
		}
	}
	if !x.since || x.changed(f.RecordedAt) || (f.RetractedAt != nil && x.changed(*f.RetractedAt)) {
		return true, nil
	}
	for _, e := range f.Evidence {
		if x.changed(e.RecordedAt) {
			return true, nil
		}
	}
	if f.SupersededBy != "" {
		next, err := x.r.Relationship(f.SupersededBy)
		if err != nil || next == nil {
			return false, err
		}
		return x.changed(next.RecordedAt), nil
	}
	return false, nil
}

func (x *writer) fact(f *store.Relationship) error {
	if err := x.entityByID(f.Subject); err != nil {
		return err
	}
	if err := x.entityByID(f.Object); err != nil {
		return err
	}
	ev := make([]Evidence, len(f.Evidence))
	for i, e := range f.Evidence {
		ev[i] = Evidence{ID: e.ID, DrawerID: e.Drawer, JobID: e.Job, Extractor: e.Extractor, Confidence: e.Confidence, RecordedAt: e.RecordedAt.UTC()}
	}
	x.factsOut[f.ID] = true
	x.facts = append(x.facts, f.ID)
	return x.emit(TypeFact, &Fact{Type: TypeFact, ID: f.ID, Subject: f.Subject, Predicate: f.Predicate, Object: f.Object, Confidence: f.Confidence,
		ValidFrom: f.ValidFrom.UTC(), ValidTo: utcp(f.ValidTo), RecordedAt: f.RecordedAt.UTC(), RetractedAt: utcp(f.RetractedAt),
		DrawerID: f.Drawer, JobID: f.Job, Extractor: f.Extractor, SupersededBy: f.SupersededBy, Reason: f.Reason, ClosedBy: f.ClosedBy, Evidence: ev})
}
