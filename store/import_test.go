package store_test

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/loci-dev/loci/store"
	"github.com/loci-dev/loci/store/badgerdb"
)

// palaceRecords is every record of a palace an import carries, oldest
// version of a chain first: what an export holds.
type palaceRecords struct {
	Wings    []store.Wing
	Rooms    []store.Room
	Drawers  []store.Drawer
	Entities []store.Entity
	Mentions []store.Mention
	Facts    []store.Relationship
	Vectors  []store.Embedding
}

func readRecords(t *testing.T, db store.DB, profile string) palaceRecords {
	t.Helper()
	var out palaceRecords
	err := db.View(context.Background(), func(r store.Reader) error {
		wings, err := r.Wings()
		if err != nil {
			return err
		}
		out.Wings = wings
		for _, w := range wings {
			rooms, err := r.Rooms(w.ID)
			if err != nil {
				return err
			}
			out.Rooms = append(out.Rooms, rooms...)
			for _, rm := range rooms {
				var ds []store.Drawer
				if err := r.Drawers(rm.ID, false, func(d *store.Drawer) bool { ds = append(ds, *d); return true }); err != nil {
					return err
				}
				// Oldest first (Drawers visits newest first).
				for i := len(ds) - 1; i >= 0; i-- {
					out.Drawers = append(out.Drawers, ds[i])
				}
			}
		}
		if err := r.Entities(func(e *store.Entity) bool { out.Entities = append(out.Entities, *e); return true }); err != nil {
			return err
		}
		seenFact := map[string]bool{}
		for _, e := range out.Entities {
			if err := r.Mentions(e.ID, func(m *store.Mention) bool { out.Mentions = append(out.Mentions, *m); return true }); err != nil {
				return err
			}
			if err := r.EntityRelationships(e.ID, func(f *store.Relationship) bool {
				if !seenFact[f.ID] {
					seenFact[f.ID] = true
					out.Facts = append(out.Facts, *f)
				}
				return true
			}); err != nil {
				return err
			}
		}
		if profile != "" {
			return r.Embeddings(profile, func(e *store.Embedding) bool { out.Vectors = append(out.Vectors, *e); return true })
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// importAll imports every record in one transaction and counts the
// outcomes.
func importAll(t *testing.T, db store.DB, im *store.Importer, recs palaceRecords, dry bool) map[store.ImportOutcome]int {
	t.Helper()
	counts := map[store.ImportOutcome]int{}
	run := func(tgt store.ImportTarget) error {
		im.Begin()
		clear(counts)
		add := func(res store.Imported, err error) error {
			if err == nil {
				counts[res.Outcome]++
			}
			return err
		}
		for _, w := range recs.Wings {
			if err := add(im.Wing(tgt, w)); err != nil {
				return err
			}
		}
		for _, rm := range recs.Rooms {
			if err := add(im.Room(tgt, rm)); err != nil {
				return err
			}
		}
		for _, d := range recs.Drawers {
			if err := add(im.Drawer(tgt, d)); err != nil {
				return err
			}
		}
		for _, e := range recs.Entities {
			if err := add(im.Entity(tgt, e)); err != nil {
				return err
			}
		}
		for _, m := range recs.Mentions {
			if err := add(im.Mention(tgt, m)); err != nil {
				return err
			}
		}
		for _, f := range recs.Facts {
			if err := add(im.Fact(tgt, f)); err != nil {
				return err
			}
		}
		for _, v := range recs.Vectors {
			if err := add(im.Vector(tgt, v)); err != nil {
				return err
			}
		}
		return nil
	}
	var err error
	if dry {
		err = db.View(context.Background(), func(r store.Reader) error { return run(store.ImportTarget{R: r}) })
	} else {
		err = db.Update(context.Background(), func(tx store.Tx) error { return run(store.ImportTarget{R: tx, W: tx}) })
	}
	if err != nil {
		t.Fatal(err)
	}
	im.Commit()
	return counts
}

func lastSeq(t *testing.T, db store.DB) uint64 {
	t.Helper()
	var seq uint64
	if err := db.View(context.Background(), func(r store.Reader) (err error) { seq, err = r.LastSeq(); return err }); err != nil {
		t.Fatal(err)
	}
	return seq
}

// sourcePalace is a palace with a supersession chain, a diary entry, an
// entity with an alias, a mention, a fact with both time axes closed by a
// decision, and a vector.
func sourcePalace(t *testing.T) *badgerdb.DB {
	t.Helper()
	db := open(t)
	first := must(t, db, drawer("The deploy script lives in tools/deploy.sh and needs bash."))
	diary := drawer("Today I paired with Bob on the billing migration.")
	diary.Diary, diary.Source.Agent = true, "claude"
	must(t, db, diary)
	named := drawer("Staging runs on port 8080 behind the proxy.")
	named.Name = "ports/staging"
	must(t, db, named)
	ctx := context.Background()
	err := db.Update(ctx, func(tx store.Tx) error {
		s := "The deploy script lives in tools/deploy.sh and needs bash 5."
		res, err := store.Supersede(tx, store.Supersession{DrawerID: first.Drawer.ID, Content: &s, RequestedBy: store.ByCLI}, dd)
		if err != nil {
			return err
		}
		s2 := "The deploy script lives in tools/deploy.sh and needs bash 5.2."
		if _, err := store.Supersede(tx, store.Supersession{DrawerID: res.Replacement.ID, Content: &s2, RequestedBy: store.ByCLI}, dd); err != nil {
			return err
		}
		m, ent, _, err := store.LinkMention(tx, first.Drawer.ID, "Bob Stone", "person", false, "manual", "http", 1)
		if err != nil || m == nil {
			return err
		}
		if _, err := store.AddAlias(tx, ent.ID, "Bobby"); err != nil {
			return err
		}
		other, err := store.ResolveEntity(tx, "billing", "project", false, "")
		if err != nil {
			return err
		}
		until := tx.Now().Add(time.Hour)
		retracted := tx.Now().Add(2 * time.Hour)
		f := &store.Relationship{ID: store.NewID(), Subject: ent.ID, Predicate: "works_on", Object: other.Entity.ID, Confidence: 0.8,
			ValidFrom: tx.Now().Add(-time.Hour), ValidTo: &until, RecordedAt: tx.Now(), RetractedAt: &retracted,
			Drawer: first.Drawer.ID, Extractor: "manual", Reason: "moved team", ClosedBy: first.Drawer.ID}
		if err := tx.PutRelationship(f, nil); err != nil {
			return err
		}
		return tx.PutEmbedding(&store.Embedding{DrawerID: first.Drawer.ID, Profile: "p", Provider: "static", Model: "m", Dimension: 2,
			Pipeline: "v1", CreatedAt: tx.Now(), Vector: []float32{0.5, 0.25}})
	})
	if err != nil {
		t.Fatal(err)
	}
	return db
}

var profile = store.ImportProfile{Name: "p", Provider: "static", Model: "m", Pipeline: "v1", Dimension: 2}

// Importing a palace's records into an empty palace gives the same
// records, ids, chains, validity and creation times; importing them again
// changes nothing at all (not one write).
func TestImportKeepsIDsAndIsIdempotent(t *testing.T) {
	src := sourcePalace(t)
	recs := readRecords(t, src, "p")
	if len(recs.Drawers) != 5 || len(recs.Entities) != 2 || len(recs.Facts) != 1 || len(recs.Mentions) != 1 || len(recs.Vectors) != 1 {
		t.Fatalf("the source palace is not what the test needs: %d drawers, %d entities, %d facts, %d mentions, %d vectors",
			len(recs.Drawers), len(recs.Entities), len(recs.Facts), len(recs.Mentions), len(recs.Vectors))
	}
	dst := open(t)
	im := &store.Importer{Dedup: dd, Profile: profile}
	got := importAll(t, dst, im, recs, false)
	if got[store.ImportCreated] != 1+1+5+2+1+1+1 || len(got) != 1 {
		t.Fatalf("first import: %v, want every record created", got)
	}
	again := readRecords(t, dst, "p")
	if !reflect.DeepEqual(normal(recs), normal(again)) {
		t.Fatalf("imported records differ:\n got %+v\nwant %+v", normal(again), normal(recs))
	}
	// Every chain reads the same from either palace.
	for _, d := range recs.Drawers {
		_, a, _ := history(t, src, d.ID)
		_, b, _ := history(t, dst, d.ID)
		if !reflect.DeepEqual(normalDrawers(a), normalDrawers(b)) {
			t.Fatalf("history of %s differs", d.ID)
		}
	}
	c1, c2 := counts(t, src), counts(t, dst)
	if c1 != c2 {
		t.Fatalf("counts %+v, want the source's %+v", c2, c1)
	}
	seq := lastSeq(t, dst)
	got = importAll(t, dst, &store.Importer{Dedup: dd, Profile: profile}, recs, false)
	if got[store.ImportUnchanged] != 12 || len(got) != 1 {
		t.Fatalf("second import: %v, want every record unchanged", got)
	}
	if s := lastSeq(t, dst); s != seq {
		t.Fatalf("the second import logged changes (%d -> %d)", seq, s)
	}
	// A dry run says the same as the run it stands for.
	dry := importAll(t, open(t), &store.Importer{Dedup: dd, Profile: profile}, recs, true)
	if dry[store.ImportCreated] != 12 || len(dry) != 1 {
		t.Fatalf("dry run into an empty palace: %v, want every record created", dry)
	}
}

func history(t *testing.T, db store.DB, id string) (*store.Drawer, []store.Drawer, error) {
	t.Helper()
	var d *store.Drawer
	var vs []store.Drawer
	err := db.View(context.Background(), func(r store.Reader) (err error) { d, vs, err = store.History(r, id); return err })
	if err != nil {
		t.Fatal(err)
	}
	return d, vs, err
}

func counts(t *testing.T, db store.DB) store.Counts {
	t.Helper()
	var c store.Counts
	if err := db.View(context.Background(), func(r store.Reader) (err error) { c, err = r.Recount(); return err }); err != nil {
		t.Fatal(err)
	}
	return c
}

// normal makes records comparable: instants in UTC, JSON compact.
func normal(p palaceRecords) palaceRecords {
	b, _ := json.Marshal(p)
	var out palaceRecords
	_ = json.Unmarshal(b, &out)
	return out
}

func normalDrawers(ds []store.Drawer) []store.Drawer {
	return normal(palaceRecords{Drawers: ds}).Drawers
}

// The same id with other content is a conflict, reported, and the
// palace's record is kept as it was.
func TestImportReportsConflictsAndKeepsThePalacesRecord(t *testing.T) {
	src := sourcePalace(t)
	recs := readRecords(t, src, "")
	dst := open(t)
	importAll(t, dst, &store.Importer{Dedup: dd}, recs, false)
	before := readRecords(t, dst, "")
	seq := lastSeq(t, dst)

	changed := normal(recs)
	changed.Drawers[0].Content = "Someone else's text under the same id."
	changed.Wings[0].Name = "renamed"
	changed.Entities[0].Kind = "tool"
	changed.Facts[0].Confidence = 0.1
	got := importAll(t, dst, &store.Importer{Dedup: dd}, changed, false)
	if got[store.ImportConflict] != 4 {
		t.Fatalf("outcomes %v, want 4 conflicts", got)
	}
	if s := lastSeq(t, dst); s != seq {
		t.Fatalf("conflicts changed the palace (%d -> %d)", seq, s)
	}
	if after := readRecords(t, dst, ""); !reflect.DeepEqual(normal(before), normal(after)) {
		t.Fatal("a conflicting import overwrote the palace's records")
	}
}

// An unnamed exact copy of a current drawer of its scope is not stored (a
// duplicate, as a new drawer would be), and what names it (a mention) is
// filed against the drawer it copies; wings and rooms of the same name
// take the import.
func TestImportAppliesThePalacesDedupRules(t *testing.T) {
	src := open(t)
	d := must(t, src, drawer(sentence)).Drawer
	err := src.Update(context.Background(), func(tx store.Tx) error {
		_, _, _, err := store.LinkMention(tx, d.ID, "PostgreSQL", "tool", false, "manual", "http", 1)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	recs := readRecords(t, src, "")

	dst := open(t)
	mine := must(t, dst, drawer(sentence)).Drawer // same wing and room names, other ids
	im := &store.Importer{Dedup: dd}
	got := importAll(t, dst, im, recs, false)
	want := map[store.ImportOutcome]int{store.ImportMerged: 2, store.ImportDuplicate: 1, store.ImportCreated: 2}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("outcomes %v, want %v", got, want)
	}
	if im.Mapped(d.ID) != mine.ID {
		t.Fatalf("the duplicate maps to %s, want the palace's copy %s", im.Mapped(d.ID), mine.ID)
	}
	c := counts(t, dst)
	if c.Wings != 1 || c.Rooms != 1 || c.DrawersStored != 1 {
		t.Fatalf("counts %+v: the duplicate or the merged wing and room were stored", c)
	}
	after := readRecords(t, dst, "")
	if len(after.Mentions) != 1 || after.Mentions[0].Drawer != mine.ID {
		t.Fatalf("mentions %+v, want the imported mention on the palace's copy %s", after.Mentions, mine.ID)
	}

	// A named copy is stored and linked, as a named write is.
	named := normal(recs)
	named.Drawers[0].ID, named.Drawers[0].Name = store.NewID(), "the-queue"
	got = importAll(t, dst, &store.Importer{Dedup: dd}, palaceRecords{Wings: named.Wings, Rooms: named.Rooms, Drawers: named.Drawers}, false)
	if got[store.ImportCreated] != 1 {
		t.Fatalf("a named exact copy: %v, want created", got)
	}
	var links []store.Link
	_ = dst.View(context.Background(), func(r store.Reader) (err error) { links, err = r.Links(named.Drawers[0].ID); return err })
	if len(links) != 1 || links[0].Older != mine.ID {
		t.Fatalf("links %+v, want one to %s", links, mine.ID)
	}
}

// A chain is rebuilt exactly from its versions, oldest first; a version
// claiming to supersede a drawer of another room is refused as a
// conflict; a chain the palace holds current is continued (its current
// version closed) by a later import of its successor.
func TestImportRebuildsChains(t *testing.T) {
	src := sourcePalace(t)
	recs := readRecords(t, src, "")
	var chain []store.Drawer
	for _, d := range recs.Drawers {
		if d.Supersedes != "" || d.SupersededBy != "" {
			chain = append(chain, d)
		}
	}
	if len(chain) != 3 {
		t.Fatalf("chain of %d versions", len(chain))
	}
	// Import the first two versions as an earlier export held them: the
	// second current.
	dst := open(t)
	early := normal(recs)
	early.Drawers = nil
	for _, d := range normalDrawers(chain[:2]) {
		if d.ID == chain[1].ID {
			d.ValidTo, d.SupersededBy = nil, ""
		}
		early.Drawers = append(early.Drawers, d)
	}
	early.Entities, early.Mentions, early.Facts = nil, nil, nil
	if got := importAll(t, dst, &store.Importer{Dedup: dd}, early, false); got[store.ImportCreated] != 4 {
		t.Fatalf("early import: %v", got)
	}
	// The later export: every version; the second is closed now.
	later := palaceRecords{Wings: recs.Wings, Rooms: recs.Rooms, Drawers: chain}
	got := importAll(t, dst, &store.Importer{Dedup: dd}, later, false)
	if got[store.ImportUpdated] != 1 || got[store.ImportCreated] != 1 || got[store.ImportUnchanged] != 3 {
		t.Fatalf("later import: %v, want the second version closed and the third created", got)
	}
	_, a, _ := history(t, src, chain[2].ID)
	_, b, _ := history(t, dst, chain[0].ID)
	if !reflect.DeepEqual(normalDrawers(a), normalDrawers(b)) {
		t.Fatalf("chain differs:\n got %+v\nwant %+v", normalDrawers(b), normalDrawers(a))
	}
	// Only the current version keeps dedup keys: a copy of it is a
	// duplicate, a copy of an older one is not.
	var dup store.Imported
	_ = dst.Update(context.Background(), func(tx store.Tx) error {
		copyOf := chain[2]
		copyOf.ID, copyOf.Supersedes, copyOf.CreatedAt = store.NewID(), "", time.Now()
		var err error
		dup, err = (&store.Importer{Dedup: dd}).Drawer(store.ImportTarget{R: tx, W: tx}, copyOf)
		return err
	})
	if dup.Outcome != store.ImportDuplicate || dup.Target != chain[2].ID {
		t.Fatalf("a copy of the current version: %+v", dup)
	}

	// A version superseding a drawer of another room.
	other := must(t, dst, store.NewDrawer{Wing: "w", Room: "elsewhere", Content: "Another room's drawer.",
		Source: store.Source{Kind: store.KindManual}, Provenance: store.Provenance{RequestedBy: store.ByHTTP}}).Drawer
	bad := chain[2]
	bad.ID, bad.Supersedes = store.NewID(), other.ID
	seq := lastSeq(t, dst)
	got = importAll(t, dst, &store.Importer{Dedup: dd}, palaceRecords{Drawers: []store.Drawer{bad}}, false)
	if got[store.ImportConflict] != 1 {
		t.Fatalf("superseding a drawer of another room: %v, want a conflict", got)
	}
	if s := lastSeq(t, dst); s != seq {
		t.Fatal("the refused version changed the palace")
	}
}

// Vectors are kept only when made as the active profile makes them;
// others are skipped (their drawers embedded again).
func TestImportKeepsOnlyTheActiveProfilesVectors(t *testing.T) {
	src := sourcePalace(t)
	recs := readRecords(t, src, "p")
	for _, tc := range []struct {
		name string
		p    store.ImportProfile
		want store.ImportOutcome
	}{
		{"same identity", profile, store.ImportCreated},
		{"another model", store.ImportProfile{Name: "p", Provider: "static", Model: "other", Pipeline: "v1", Dimension: 2}, store.ImportSkipped},
		{"no profile", store.ImportProfile{}, store.ImportSkipped},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dst := open(t)
			got := importAll(t, dst, &store.Importer{Dedup: dd, Profile: tc.p}, recs, false)
			if got[tc.want] < 1 {
				t.Fatalf("outcomes %v, want the vector %s", got, tc.want)
			}
			n := len(readRecords(t, dst, "p").Vectors)
			if (tc.want == store.ImportCreated) != (n == 1) {
				t.Fatalf("%d vectors stored", n)
			}
		})
	}
}

// A source's state and its documents land under the key of the wing they
// land in (another wing's id here: a merged wing), without the adapter's
// cursor, their chunks recorded as mined; entity links and fact links
// (decisions) keep their ids; each once.
func TestImportSourcesDocumentsAndLinks(t *testing.T) {
	dst := open(t)
	mine := must(t, dst, drawer("The palace's own memory in wing w.")).Drawer // wing w exists here
	fileWing, fileRoom := store.NewID(), store.NewID()
	ident := store.SourceIdentity{Adapter: "directory", Locator: "/src/project"}
	fileKey := store.TargetKey(ident.Key(), fileWing)
	chunk := store.Drawer{ID: store.NewID(), WingID: fileWing, RoomID: fileRoom, Content: "A mined chunk of main.go.",
		Source:     store.Source{Kind: store.KindFile, URI: "file:///src/project/main.go", Origin: json.RawMessage(`{"path":"main.go","chunk":0}`)},
		Provenance: store.Provenance{RequestedBy: store.ByCLI}, ValidFrom: time.Now().UTC(), CreatedAt: time.Now().UTC()}
	e1, e2 := store.Entity{ID: store.NewID(), Name: "Go", Kind: "tool"}, store.Entity{ID: store.NewID(), Name: "Golang", Kind: "tool"}
	f1 := store.Relationship{ID: store.NewID(), Subject: e1.ID, Predicate: "uses", Object: e2.ID, Confidence: 1, ValidFrom: time.Now().UTC(), RecordedAt: time.Now().UTC()}
	f2 := f1
	f2.ID = store.NewID()
	linkID, decisionID := store.NewID(), store.NewID()
	apply := func(im *store.Importer) []store.ImportOutcome {
		var out []store.ImportOutcome
		err := dst.Update(context.Background(), func(tx store.Tx) error {
			tg := store.ImportTarget{R: tx, W: tx}
			im.Begin()
			out = nil
			for _, step := range []func() (store.Imported, error){
				func() (store.Imported, error) { return im.Wing(tg, store.Wing{ID: fileWing, Name: "w"}) },
				func() (store.Imported, error) {
					return im.Room(tg, store.Room{ID: fileRoom, WingID: fileWing, Name: "code"})
				},
				func() (store.Imported, error) { return im.Drawer(tg, chunk) },
				func() (store.Imported, error) {
					return im.Source(tg, store.SourceState{Key: fileKey, Identity: ident, WingID: fileWing, Cursor: json.RawMessage(`{"token":"x"}`)})
				},
				func() (store.Imported, error) {
					return im.Document(tg, store.DocumentState{Source: fileKey, ID: "main.go", WingID: fileWing, Revision: "r1", Meta: "m1",
						Chunks: []store.ChunkState{{Drawer: chunk.ID, Hash: store.ContentHash(chunk.Content)}}})
				},
				func() (store.Imported, error) { return im.Entity(tg, e1) },
				func() (store.Imported, error) { return im.Entity(tg, e2) },
				func() (store.Imported, error) {
					return im.EntityLink(tg, store.EntityLink{ID: linkID, From: e2.ID, To: e1.ID, Kind: "possibly_same_as"})
				},
				func() (store.Imported, error) { return im.Fact(tg, f1) },
				func() (store.Imported, error) { return im.Fact(tg, f2) },
				func() (store.Imported, error) {
					return im.FactLink(tg, store.RelationshipLink{ID: decisionID, From: f2.ID, To: f1.ID, Kind: "confirms", Reason: "same"})
				},
			} {
				res, err := step()
				if err != nil {
					return err
				}
				out = append(out, res.Outcome)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		im.Commit()
		return out
	}
	got := apply(&store.Importer{Dedup: dd})
	want := []store.ImportOutcome{store.ImportMerged, store.ImportCreated, store.ImportCreated, store.ImportCreated, store.ImportCreated,
		store.ImportCreated, store.ImportCreated, store.ImportCreated, store.ImportCreated, store.ImportCreated, store.ImportCreated}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("outcomes %v, want %v", got, want)
	}
	key := store.TargetKey(ident.Key(), mine.WingID)
	_ = dst.View(context.Background(), func(r store.Reader) error {
		st, _ := r.Source(key)
		if st == nil || st.Documents != 1 || len(st.Cursor) != 0 || st.WingID != mine.WingID {
			t.Fatalf("source state %+v under the palace's wing %s", st, mine.WingID)
		}
		if doc, _ := r.SourceDocument(key, "main.go"); doc == nil || doc.Revision != "r1" {
			t.Fatalf("document %+v", doc)
		}
		if src, doc, _ := r.ChunkOwner(chunk.ID); src != key || doc != "main.go" {
			t.Fatalf("chunk owner %s %s", src, doc)
		}
		if links, _ := r.RelationshipLinks(f1.ID); len(links) != 1 {
			t.Fatalf("fact links %+v", links)
		}
		if links, _ := r.EntityLinks(e1.ID); len(links) != 1 {
			t.Fatalf("entity links %+v", links)
		}
		return nil
	})
	seq := lastSeq(t, dst)
	again := apply(&store.Importer{Dedup: dd})
	for i, o := range again[1:] {
		if o != store.ImportUnchanged {
			t.Fatalf("second import, step %d: %s", i+1, o)
		}
	}
	if s := lastSeq(t, dst); s != seq {
		t.Fatal("the second import changed the palace")
	}
}
