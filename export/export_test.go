package export_test

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/loci-dev/loci/export"
	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/store"
)

func byType(recs []export.Record) map[string][]export.Record {
	out := map[string][]export.Record{}
	for _, r := range recs {
		out[r.Type] = append(out[r.Type], r)
	}
	return out
}

// TestRoundTrip exports a real palace holding every kind of record and
// reads it back: every type is there, the chain's versions oldest first
// with their links, the facts with both axes and their decisions, the
// vector with its identity, and no secret of the palace.
func TestRoundTrip(t *testing.T) {
	f := newFixture(t)
	file, sum := writeExport(t, f.db, export.Options{Vectors: true, Profiles: []string{"default"}, Generator: "loci test"})
	recs := readAll(t, file, export.ReaderOptions{})
	got := byType(recs)
	for _, typ := range export.Types {
		if len(got[typ]) == 0 {
			t.Errorf("no %s record in the export", typ)
		}
	}
	if recs[0].Type != export.TypeHeader || recs[len(recs)-1].Type != export.TypeEnd {
		t.Fatalf("first %s, last %s", recs[0].Type, recs[len(recs)-1].Type)
	}
	h := recs[0].Header
	if h.Format != export.Format || h.Version != export.Version || h.Generator != "loci test" || !h.Selection.Vectors || len(h.Selection.Wings) != 0 {
		t.Errorf("header %+v", h)
	}
	if id, err := store.PalaceID(t.Context(), f.db); err != nil || h.PalaceID != id || sum.PalaceID != id {
		t.Errorf("palace id %q, summary %q, palace %q (%v)", h.PalaceID, sum.PalaceID, id, err)
	}
	end := recs[len(recs)-1].End
	if end.Records != sum.Records || end.Digest != sum.Digest || end.Records != int64(len(recs)-1) || int64(len(file)) != sum.Bytes {
		t.Errorf("end %+v, summary %+v, %d records read, %d bytes", end, sum, len(recs), len(file))
	}
	for typ, n := range end.Counts {
		if len(got[typ]) != n {
			t.Errorf("end counts %d %s, the file holds %d", n, typ, len(got[typ]))
		}
	}

	// The drawers: every stored drawer is there as stored, each chain's
	// versions oldest first.
	pos := map[string]int{}
	var all []*store.Drawer
	if err := f.db.View(t.Context(), func(r store.Reader) error {
		return r.EachDrawer(func(d *store.Drawer) bool { all = append(all, d); return true })
	}); err != nil {
		t.Fatal(err)
	}
	if len(got[export.TypeDrawer]) != len(all) {
		t.Fatalf("%d drawer records, %d drawers stored", len(got[export.TypeDrawer]), len(all))
	}
	for i, r := range recs {
		if r.Drawer != nil {
			pos[r.Drawer.ID] = i
		}
	}
	for _, d := range all {
		i, ok := pos[d.ID]
		if !ok {
			t.Fatalf("drawer %s not exported", d.ID)
		}
		e := recs[i].Drawer
		tags := d.Tags
		if tags == nil {
			tags = []string{}
		}
		if e.WingID != d.WingID || e.RoomID != d.RoomID || e.Name != d.Name || e.Content != d.Content || !slices.Equal(e.Tags, tags) ||
			e.Source.Kind != d.Source.Kind || e.Source.URI != d.Source.URI || e.Source.Agent != d.Source.Agent || string(e.Source.Origin) != string(d.Source.Origin) ||
			e.Provenance.RequestedBy != d.Provenance.RequestedBy || e.Provenance.JobID != d.Provenance.JobID ||
			!e.ValidFrom.Equal(d.ValidFrom) || (e.ValidTo == nil) != (d.ValidTo == nil) || (e.ValidTo != nil && !e.ValidTo.Equal(*d.ValidTo)) ||
			!e.CreatedAt.Equal(d.CreatedAt) || e.Supersedes != d.Supersedes || e.SupersededBy != d.SupersededBy || e.Diary != d.Diary {
			t.Errorf("drawer %s exported as %+v, stored as %+v", d.ID, e, d)
		}
	}
	if !(pos[f.chain[0]] < pos[f.chain[1]] && pos[f.chain[1]] < pos[f.chain[2]]) {
		t.Errorf("chain versions not oldest first: %d %d %d", pos[f.chain[0]], pos[f.chain[1]], pos[f.chain[2]])
	}
	if d := recs[pos[f.chain[1]]].Drawer; d.Supersedes != f.chain[0] || d.SupersededBy != f.chain[2] || d.ValidTo == nil {
		t.Errorf("middle version %+v", d)
	}
	if d := recs[pos[f.diary]].Drawer; !d.Diary || d.Source.Agent != "claude" {
		t.Errorf("diary entry %+v", d)
	}

	// Facts with both axes and their decisions.
	facts := map[string]*export.Fact{}
	for _, r := range got[export.TypeFact] {
		facts[r.Fact.ID] = r.Fact
	}
	f0, f1, f2 := facts[f.facts[0]], facts[f.facts[1]], facts[f.facts[2]]
	if f0 == nil || f1 == nil || f2 == nil || len(facts) != 3 {
		t.Fatalf("facts %v", facts)
	}
	if f0.SupersededBy != f1.ID || f0.ValidTo == nil || f0.ClosedBy != f.chain[2] || f0.RecordedAt.IsZero() {
		t.Errorf("superseded fact %+v", f0)
	}
	if f2.RetractedAt == nil || f2.Reason != "Bob moved to Rust" {
		t.Errorf("invalidated fact %+v", f2)
	}
	if len(f1.Evidence) != 1 || f1.Evidence[0].DrawerID != f.chain[2] {
		t.Errorf("fact asserted again %+v", f1)
	}
	if d := got[export.TypeDecision][0].Decision; d.From != f1.ID || d.To != f2.ID || d.Kind != "contradicts" || d.Reason != "both cannot hold" {
		t.Errorf("decision %+v", d)
	}
	var carol *export.Entity
	for _, r := range got[export.TypeEntity] {
		if r.Entity.Name == "Carol" {
			carol = r.Entity
		}
	}
	if carol == nil || !slices.Equal(carol.Aliases, []string{"Caro"}) {
		t.Errorf("entity with aliases %+v", carol)
	}
	if v := got[export.TypeVector][0].Vector; v.DrawerID != f.chain[2] || v.Profile != "default" || v.Provider != "hash" || v.Model != "m1" ||
		v.Dimension != 4 || v.Pipeline != "text-v1" || !slices.Equal(v.Vector, []float32{0.5, -0.25, 1, 0}) {
		t.Errorf("vector %+v", v)
	}
	src := got[export.TypeSource][0].Source
	doc := got[export.TypeDocument][0].Document
	if src.Adapter != "git" || src.Account != "alice" || src.Locator != "https://alice@example.com/repo.git" || doc.Source != src.Key ||
		doc.ID != "README.md" || doc.Revision != "r1" || len(doc.Chunks) != 2 {
		t.Errorf("source %+v, document %+v", src, doc)
	}
	for _, c := range doc.Chunks {
		if _, ok := pos[c.DrawerID]; !ok {
			t.Errorf("chunk drawer %s not exported", c.DrawerID)
		}
	}

	// Never a secret.
	for _, s := range []string{secretDigest, secretCursor, secretPassword, `"cursor"`} {
		if bytes.Contains(file, []byte(s)) {
			t.Errorf("the export holds %q", s)
		}
	}
}

// TestWingSelection exports one wing: only its records, and the facts
// whose evidence is in it; an unknown wing writes nothing.
func TestWingSelection(t *testing.T) {
	f := newFixture(t)
	file, _ := writeExport(t, f.db, export.Options{Wings: []string{"beta"}})
	got := byType(readAll(t, file, export.ReaderOptions{}))
	if len(got[export.TypeWing]) != 1 || got[export.TypeWing][0].Wing.Name != "beta" || len(got[export.TypeDrawer]) != 1 ||
		got[export.TypeDrawer][0].Drawer.ID != f.betaOne || len(got[export.TypeFact]) != 0 || len(got[export.TypeSource]) != 0 || len(got[export.TypeEntity]) != 0 {
		t.Errorf("beta export: %d wings, %d drawers, %d facts, %d sources, %d entities", len(got[export.TypeWing]), len(got[export.TypeDrawer]),
			len(got[export.TypeFact]), len(got[export.TypeSource]), len(got[export.TypeEntity]))
	}
	if h := got[export.TypeHeader][0].Header; !slices.Equal(h.Selection.Wings, []string{"beta"}) {
		t.Errorf("selection %+v", h.Selection)
	}
	file, _ = writeExport(t, f.db, export.Options{Wings: []string{"alpha"}})
	got = byType(readAll(t, file, export.ReaderOptions{}))
	if len(got[export.TypeWing]) != 1 || len(got[export.TypeDrawer]) != 6 || len(got[export.TypeFact]) != 3 || len(got[export.TypeSource]) != 1 {
		t.Errorf("alpha export: %d wings, %d drawers, %d facts, %d sources", len(got[export.TypeWing]), len(got[export.TypeDrawer]), len(got[export.TypeFact]), len(got[export.TypeSource]))
	}
	var buf bytes.Buffer
	_, err := export.Write(t.Context(), f.db, &buf, export.Options{Wings: []string{"alpha", "nowhere"}})
	if fe := fault.As(err); fe == nil || fe.Code != fault.PalaceWingNotFound || buf.Len() != 0 {
		t.Fatalf("unknown wing: %v, %d bytes written", err, buf.Len())
	}
}

// TestSince exports what changed at or after an instant, with what it
// needs: a chain superseded since comes whole, an old drawer mentioned
// since comes with its wing and room, and the file reads back.
func TestSince(t *testing.T) {
	f := newFixture(t)
	at := since(t)
	var latest, fresh string
	if err := f.db.Update(t.Context(), func(tx store.Tx) error {
		s, err := store.Supersede(tx, store.Supersession{DrawerID: f.chain[2], Content: strp("the fourth plan, after the release")}, dd)
		if err != nil {
			return err
		}
		latest = s.Replacement.ID
		res, err := store.CreateDrawer(tx, store.NewDrawer{Wing: "beta", Room: "fresh", Content: "a drawer filed after the instant", Source: store.Source{Kind: store.KindManual}}, dd)
		if err != nil {
			return err
		}
		fresh = res.Drawer.ID
		_, _, _, err = store.LinkMention(tx, f.betaOne, "Dave", "person", false, "manual", "http", 1)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	file, _ := writeExport(t, f.db, export.Options{Since: at})
	got := byType(readAll(t, file, export.ReaderOptions{}))
	var ids []string
	for _, r := range got[export.TypeDrawer] {
		ids = append(ids, r.Drawer.ID)
	}
	want := append(append([]string{}, f.chain...), latest, fresh, f.betaOne)
	slices.Sort(ids)
	slices.Sort(want)
	if !slices.Equal(ids, want) {
		t.Errorf("drawers since: %v, want %v", ids, want)
	}
	if h := got[export.TypeHeader][0].Header; h.Selection.Since == nil || !h.Selection.Since.Equal(at) {
		t.Errorf("selection %+v", h.Selection)
	}
	// Mentions come with their drawer: the chain's (its facts' entities)
	// and the one made since on an old drawer; not the diary's.
	ents := map[string]bool{}
	for _, r := range got[export.TypeEntity] {
		ents[r.Entity.Name] = true
	}
	if len(got[export.TypeSource]) != 0 || len(got[export.TypeFact]) != 0 || !ents["Dave"] || !ents["Alice"] || ents["Carol"] {
		t.Errorf("since: %d sources, %d facts, entities %v", len(got[export.TypeSource]), len(got[export.TypeFact]), ents)
	}
	// Both: one wing's changes.
	file, _ = writeExport(t, f.db, export.Options{Since: at, Wings: []string{"beta"}})
	both := byType(readAll(t, file, export.ReaderOptions{}))
	ids = ids[:0]
	for _, r := range both[export.TypeDrawer] {
		ids = append(ids, r.Drawer.ID)
	}
	slices.Sort(ids)
	want = []string{fresh, f.betaOne}
	slices.Sort(want)
	if !slices.Equal(ids, want) || len(both[export.TypeWing]) != 1 {
		t.Errorf("beta since: drawers %v, want %v; %d wings", ids, want, len(both[export.TypeWing]))
	}
	var rooms []string
	for _, r := range got[export.TypeRoom] {
		rooms = append(rooms, r.Room.Name)
	}
	slices.Sort(rooms)
	if !slices.Equal(rooms, []string{"fresh", "misc", "notes"}) {
		t.Errorf("rooms since: %v", rooms)
	}
}

// TestSchema checks every record of a real export against
// docs/export.schema.json.
func TestSchema(t *testing.T) {
	f := newFixture(t)
	file, _ := writeExport(t, f.db, export.Options{Vectors: true, Profiles: []string{"default"}})
	sch := compileSchema(t)
	for i, line := range lines(file) {
		v, err := jsonUnmarshalAny(line)
		if err != nil {
			t.Fatal(err)
		}
		if err := sch.Validate(v); err != nil {
			t.Errorf("line %d does not validate: %v\n%s", i+1, err, line)
		}
	}
	// The schema refuses what the format does not allow.
	for _, bad := range []string{`{"type":"wing","id":"x","name":"a","created_at":"2026-01-01T00:00:00Z"}`,
		`{"type":"nonsense"}`, `{"type":"wing","id":"0196a4c2-0000-7000-8000-000000000000","name":"a/b","created_at":"2026-01-01T00:00:00Z"}`} {
		v, _ := jsonUnmarshalAny(bad)
		if sch.Validate(v) == nil {
			t.Errorf("the schema accepts %s", bad)
		}
	}
}

func jsonUnmarshalAny(s string) (any, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
}

// TestOrphansLeftOut: a drawer whose room is gone (damage loci audit
// finds) is left out and counted, and the export still reads back.
func TestOrphansLeftOut(t *testing.T) {
	f := newFixture(t)
	if err := f.db.Update(t.Context(), func(tx store.Tx) error {
		w, err := tx.WingByName("beta")
		if err != nil {
			return err
		}
		rm, err := tx.RoomByName(w.ID, "misc")
		if err != nil {
			return err
		}
		// A drawer whose wing is not its room's.
		alpha, err := tx.WingByName("alpha")
		if err != nil {
			return err
		}
		notes, err := tx.RoomByName(alpha.ID, "notes")
		if err != nil {
			return err
		}
		now := tx.Now()
		if err := tx.PutDrawer(&store.Drawer{ID: store.NewID(), WingID: w.ID, RoomID: notes.ID, Content: "a drawer of two wings",
			Source: store.Source{Kind: store.KindManual}, ValidFrom: now, CreatedAt: now}, nil); err != nil {
			return err
		}
		// The orphan mentions an entity: that mention is left out too.
		if _, _, _, err := store.LinkMention(tx, f.betaOne, "Erin", "person", false, "manual", "http", 1); err != nil {
			return err
		}
		return tx.DeleteRoom(rm)
	}); err != nil {
		t.Fatal(err)
	}
	file, sum := writeExport(t, f.db, export.Options{})
	got := byType(readAll(t, file, export.ReaderOptions{}))
	if sum.Orphans != 2 {
		t.Fatalf("orphans %d", sum.Orphans)
	}
	for _, r := range got[export.TypeDrawer] {
		if r.Drawer.ID == f.betaOne {
			t.Fatal("the orphan was exported")
		}
	}
}
