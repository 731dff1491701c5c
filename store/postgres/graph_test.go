package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/loci-dev/loci/store"
	"github.com/loci-dev/loci/store/graph"
	"github.com/loci-dev/loci/store/postgres/pgtest"
)

// graphDB is a fresh database with the schema applied, and a plain
// connection to it for looking at the rows themselves.
func graphDB(t *testing.T) (store.DB, *pgx.Conn) {
	t.Helper()
	url := pgtest.Database(t)
	db := open(t, url)
	t.Cleanup(func() { _ = db.Close() })
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return db, conn
}

// id is a made-up id that sorts by n.
func id(prefix string, n int) string { return fmt.Sprintf("%s-%06d", prefix, n) }

// Entity resolution on the shared store, without drawers (the
// conformance case EntityResolution also files one): the three rules, the
// typo rule through the deletion rows, aliases added as their own index
// rows, possibly_same_as links read from either end.
func TestGraphResolution(t *testing.T) {
	db, _ := graphDB(t)
	resolve := func(name, kind string, fuzzy bool) store.Resolved {
		t.Helper()
		var r store.Resolved
		mustUpdate(t, db, func(tx store.Tx) error {
			var err error
			r, err = store.ResolveEntity(tx, name, kind, fuzzy, "")
			return err
		})
		return r
	}
	cpp, c, cs := resolve("C++", "tool", true), resolve("C", "tool", true), resolve("C#", "tool", true)
	if !cpp.New || !c.New || !cs.New {
		t.Fatalf("C++, C and C# must be three entities: %+v %+v %+v", cpp, c, cs)
	}
	pg := resolve("PostgreSQL", "tool", true)
	for _, w := range []struct{ name, rule string }{{"PostgreSQL", "exact"}, {"postgre-sql", "normalized"}, {"PostgreSLQ", "typo"}} {
		if r := resolve(w.name, "tool", true); r.New || r.Entity.ID != pg.Entity.ID || r.Rule != w.rule {
			t.Fatalf("%s: %+v, want %s by %s", w.name, r, pg.Entity.ID, w.rule)
		}
	}
	if r := resolve("PostgreSQM", "tool", false); !r.New {
		t.Fatalf("fuzzy off resolved a typo: %+v", r)
	}
	m1 := resolve("Melanie", "person", true)
	m2 := resolve("Melanii", "person", false)
	mo := resolve("Melanio", "person", true)
	if !m2.New || !mo.New {
		t.Fatalf("Melanii %+v, Melanio %+v: want new entities", m2, mo)
	}
	mustView(t, db, func(r store.Reader) error {
		e, err := r.Entity(pg.Entity.ID)
		if err != nil || e.Name != "PostgreSQL" || !slices.Equal(e.Aliases, []string{"postgre-sql", "PostgreSLQ"}) || !e.CreatedAt.Equal(pg.Entity.CreatedAt) {
			return fmt.Errorf("entity after its spellings: %+v %v", e, err)
		}
		for _, q := range []struct {
			index store.EntityIndex
			value string
		}{{store.EntityByName, "PostgreSQL"}, {store.EntityByKey, "postgresql"}, {store.EntityByAlias, "postgreslq"},
			{store.EntityByDeletion, "postgresql"}, {store.EntityByDeletion, "postgesql"}} {
			if ids, err := r.EntityIDs(q.index, q.value); err != nil || !slices.Contains(ids, pg.Entity.ID) {
				return fmt.Errorf("index %d %q: %v %v", q.index, q.value, ids, err)
			}
		}
		if ids, err := r.EntityIDs(store.EntityByKey, "PostgreSQL"); err != nil || len(ids) != 0 {
			return fmt.Errorf("the key index holds keys, not names: %v %v", ids, err)
		}
		// Both ends see a link.
		for _, end := range []string{mo.Entity.ID, m1.Entity.ID} {
			links, err := r.EntityLinks(end)
			if err != nil || len(links) == 0 {
				return fmt.Errorf("links of %s: %+v %v", end, links, err)
			}
		}
		links, err := r.EntityLinks(mo.Entity.ID)
		if err != nil || len(links) != 2 || links[0].ID > links[1].ID || links[0].Kind != graph.PossiblySameAs {
			return fmt.Errorf("links of Melanio: %+v %v", links, err)
		}
		if to := []string{links[0].To, links[1].To}; !slices.Contains(to, m1.Entity.ID) || !slices.Contains(to, m2.Entity.ID) {
			return fmt.Errorf("links of Melanio go to %v", to)
		}
		return nil
	})
}

// EntityIDs is oldest id first and Entities is name order, both byte
// order whatever the database's collation; an entity with prev keeps its
// indexes: rows it lost are deleted, rows it kept stay, rows it gained
// are added, in one statement; the rows an entity makes are counted.
func TestGraphEntityIndexes(t *testing.T) {
	db, conn := graphDB(t)
	at := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	// Inserted newest first: the index answers by id.
	for i := 3; i >= 1; i-- {
		mustUpdate(t, db, func(tx store.Tx) error {
			e := &store.Entity{ID: id("e", i), Name: "Acme", Kind: "organization", Key: "acme", CreatedAt: at}
			before := tx.Writes()
			if err := tx.PutEntity(e, nil); err != nil {
				return err
			}
			if n := tx.Writes() - before; n != 1 {
				return fmt.Errorf("a new entity took %d statements, want 1", n)
			}
			return nil
		})
	}
	for i, name := range []string{"beta", "Zeta", "alpha", "Äther"} {
		mustUpdate(t, db, func(tx store.Tx) error {
			return tx.PutEntity(&store.Entity{ID: id("n", i), Name: name, Kind: "concept", Key: graph.Key(name), CreatedAt: at}, nil)
		})
	}
	mustView(t, db, func(r store.Reader) error {
		for _, index := range []store.EntityIndex{store.EntityByName, store.EntityByKey, store.EntityByDeletion} {
			value := "acme"
			if index == store.EntityByName {
				value = "Acme"
			}
			if ids, err := r.EntityIDs(index, value); err != nil || !slices.Equal(ids, []string{id("e", 1), id("e", 2), id("e", 3)}) {
				return fmt.Errorf("index %d: %v %v, want oldest first", index, ids, err)
			}
		}
		var names []string
		if err := r.Entities(func(e *store.Entity) bool { names = append(names, e.Name+"/"+e.ID); return true }); err != nil {
			return err
		}
		want := []string{"Acme/" + id("e", 1), "Acme/" + id("e", 2), "Acme/" + id("e", 3), "Zeta/" + id("n", 1), "alpha/" + id("n", 2),
			"beta/" + id("n", 0), "Äther/" + id("n", 3)}
		if !slices.Equal(names, want) {
			return fmt.Errorf("entities in %v, want byte order of names then ids %v", names, want)
		}
		return nil
	})
	rows := func(entity string) []string {
		t.Helper()
		rs, err := conn.Query(context.Background(), "SELECT kind::text || ':' || value FROM entity_index WHERE entity = $1", entity)
		if err != nil {
			t.Fatal(err)
		}
		out, err := pgx.CollectRows(rs, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(out)
		return out
	}
	// Name, key, key as its own deletion, its 4 deletions, no alias: 7.
	want := []string{"0:Acme", "1:acme", "3:acme", "3:acm", "3:ace", "3:ame", "3:cme"}
	slices.Sort(want)
	if got := rows(id("e", 1)); !slices.Equal(got, want) {
		t.Fatalf("rows of Acme: %v, want %v", got, want)
	}
	// Aliases added, then one dropped and the key changed: the stale rows
	// go, the kept ones stay.
	e1 := store.Entity{ID: id("e", 1), Name: "Acme", Kind: "organization", Key: "acme", CreatedAt: at}
	withAliases := e1
	withAliases.Aliases = []string{"ACME Corp", "Acme Inc."}
	changed := e1
	changed.Key = "acmex"
	changed.Aliases = []string{"Acme Inc."}
	mustUpdate(t, db, func(tx store.Tx) error {
		if err := tx.PutEntity(&withAliases, &e1); err != nil {
			return err
		}
		before := tx.Writes()
		if err := tx.PutEntity(&changed, &withAliases); err != nil {
			return err
		}
		if n := tx.Writes() - before; n != 1 {
			return fmt.Errorf("an entity update took %d statements, want 1", n)
		}
		return nil
	})
	want = []string{"0:Acme", "1:acmex", "2:acmeinc", "3:acme", "3:acmex", "3:acmx", "3:acex", "3:amex", "3:cmex"}
	slices.Sort(want)
	if got := rows(id("e", 1)); !slices.Equal(got, want) {
		t.Fatalf("rows after the update: %v, want %v", got, want)
	}
	mustView(t, db, func(r store.Reader) error {
		for _, q := range []struct {
			index store.EntityIndex
			value string
			has   bool
		}{{store.EntityByAlias, "acmecorp", false}, {store.EntityByAlias, "acmeinc", true}, {store.EntityByKey, "acme", false},
			{store.EntityByKey, "acmex", true}, {store.EntityByDeletion, "acm", false}, {store.EntityByDeletion, "acme", true},
			{store.EntityByDeletion, "amex", true}} {
			ids, err := r.EntityIDs(q.index, q.value)
			if err != nil || slices.Contains(ids, id("e", 1)) != q.has {
				return fmt.Errorf("index %d %q: %v %v, want it there: %v", q.index, q.value, ids, err, q.has)
			}
		}
		e, err := r.Entity(id("e", 1))
		if err != nil || e.Key != "acmex" || !slices.Equal(e.Aliases, changed.Aliases) {
			return fmt.Errorf("the entity read back: %+v %v", e, err)
		}
		return nil
	})
	var name, key string
	if err := conn.QueryRow(context.Background(), "SELECT name, key FROM entities WHERE id = $1", id("e", 1)).Scan(&name, &key); err != nil || name != "Acme" || key != "acmex" {
		t.Fatalf("columns beside rec: %q %q %v", name, key, err)
	}
}

// The visitors read in pages and call fn between them: fn reads through
// the same transaction (one connection runs one query at a time), every
// row is visited once, in order, across several pages, and a visitor
// stops when fn says so.
func TestGraphVisitorsPage(t *testing.T) {
	db, _ := graphDB(t)
	const n = 300 // more than a few pages (64, 128, ...)
	at := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	hub := id("hub", 0)
	mustUpdate(t, db, func(tx store.Tx) error {
		if err := tx.PutEntity(&store.Entity{ID: hub, Name: "Hub", Kind: "concept", Key: "hub", CreatedAt: at}, nil); err != nil {
			return err
		}
		for i := n - 1; i >= 0; i-- {
			e := &store.Entity{ID: id("e", i), Name: fmt.Sprintf("Entity %04d", i), Kind: "concept", CreatedAt: at}
			e.Key = graph.Key(e.Name)
			if err := tx.PutEntity(e, nil); err != nil {
				return err
			}
			if err := tx.PutMention(&store.Mention{Drawer: id("d", i), Entity: hub, Name: "Hub", Rule: "exact", Confidence: 1, Extractor: "manual", CreatedAt: at}); err != nil {
				return err
			}
			// Facts with the hub as subject, as object, and as both.
			r := &store.Relationship{ID: id("f", i), Subject: hub, Predicate: "related_to", Object: e.ID, RecordedAt: at, ValidFrom: at}
			switch i % 3 {
			case 1:
				r.Subject, r.Object = e.ID, hub
			case 2:
				r.Object = hub
			}
			if err := tx.PutRelationship(r, nil); err != nil {
				return err
			}
		}
		return nil
	})
	mustView(t, db, func(r store.Reader) error {
		var ents []string
		if err := r.Entities(func(e *store.Entity) bool {
			if _, err := r.Entity(e.ID); err != nil {
				t.Errorf("a read inside Entities: %v", err)
			}
			ents = append(ents, e.ID)
			return true
		}); err != nil {
			return err
		}
		if len(ents) != n+1 || ents[0] != id("e", 0) || ents[n-1] != id("e", n-1) || ents[n] != hub {
			return fmt.Errorf("Entities visited %d (%v ... %v)", len(ents), ents[:2], ents[len(ents)-2:])
		}
		var drawers []string
		if err := r.Mentions(hub, func(m *store.Mention) bool {
			if got, err := r.Mention(m.Drawer, hub); err != nil || got == nil {
				t.Errorf("a read inside Mentions: %v %v", got, err)
			}
			drawers = append(drawers, m.Drawer)
			return true
		}); err != nil {
			return err
		}
		var ids []string
		if err := r.MentioningDrawers(hub, func(d string) bool {
			if _, err := r.DrawerMentions(d); err != nil {
				t.Errorf("a read inside MentioningDrawers: %v", err)
			}
			ids = append(ids, d)
			return true
		}); err != nil {
			return err
		}
		var facts []string
		if err := r.EntityRelationships(hub, func(f *store.Relationship) bool {
			if _, err := r.Relationship(f.ID); err != nil {
				t.Errorf("a read inside EntityRelationships: %v", err)
			}
			facts = append(facts, f.ID)
			return true
		}); err != nil {
			return err
		}
		for what, got := range map[string][]string{"Mentions": drawers, "MentioningDrawers": ids, "EntityRelationships": facts} {
			prefix := "d"
			if what == "EntityRelationships" {
				prefix = "f"
			}
			if len(got) != n {
				return fmt.Errorf("%s visited %d, want %d", what, len(got), n)
			}
			for i, v := range got {
				if v != id(prefix, i) {
					return fmt.Errorf("%s visited %s at %d, want %s (once each, in id order)", what, v, i, id(prefix, i))
				}
			}
		}
		// An entity of its own facts only.
		var own []string
		if err := r.EntityRelationships(id("e", 4), func(f *store.Relationship) bool { own = append(own, f.ID); return true }); err != nil || !slices.Equal(own, []string{id("f", 4)}) {
			return fmt.Errorf("facts of e-4: %v %v", own, err)
		}
		// Stopping.
		for what, visit := range map[string]func(stop func() bool) error{
			"Entities":          func(stop func() bool) error { return r.Entities(func(*store.Entity) bool { return stop() }) },
			"Mentions":          func(stop func() bool) error { return r.Mentions(hub, func(*store.Mention) bool { return stop() }) },
			"MentioningDrawers": func(stop func() bool) error { return r.MentioningDrawers(hub, func(string) bool { return stop() }) },
			"EntityRelationships": func(stop func() bool) error {
				return r.EntityRelationships(hub, func(*store.Relationship) bool { return stop() })
			},
		} {
			seen := 0
			if err := visit(func() bool { seen++; return seen < 100 }); err != nil || seen != 100 {
				return fmt.Errorf("%s went on after fn said stop: %d visited, %v", what, seen, err)
			}
		}
		return nil
	})
}

// A fact of itself (subject and object the same entity) is visited once;
// a fact's moved ends move its indexes; mentions and links read from the
// drawer and from either end; a mention put again replaces it.
func TestGraphFactsAndLinks(t *testing.T) {
	db, _ := graphDB(t)
	at := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	a, b, c := id("a", 1), id("b", 1), id("c", 1)
	self := &store.Relationship{ID: id("f", 1), Subject: a, Predicate: "related_to", Object: a, ValidFrom: at, RecordedAt: at}
	ab := &store.Relationship{ID: id("f", 2), Subject: a, Predicate: "knows", Object: b, Confidence: 0.5, ValidFrom: at, RecordedAt: at,
		Evidence: []store.Evidence{{ID: "ev", Drawer: id("d", 1), Confidence: 0.9, RecordedAt: at}}}
	mustUpdate(t, db, func(tx store.Tx) error {
		for _, r := range []*store.Relationship{self, ab} {
			if err := tx.PutRelationship(r, nil); err != nil {
				return err
			}
		}
		moved := *ab
		moved.Object = c
		end := at.Add(time.Hour)
		moved.ValidTo = &end
		if err := tx.PutRelationship(&moved, ab); err != nil {
			return err
		}
		for _, l := range []*store.RelationshipLink{{ID: id("l", 2), From: ab.ID, To: self.ID, Kind: "refines", CreatedAt: at},
			{ID: id("l", 1), From: self.ID, To: ab.ID, Kind: "contradicts", Reason: "no", CreatedAt: at}} {
			if err := tx.PutRelationshipLink(l); err != nil {
				return err
			}
		}
		for _, m := range []*store.Mention{{Drawer: id("d", 1), Entity: c, Name: "C", Rule: "exact"}, {Drawer: id("d", 1), Entity: a, Name: "A", Rule: "exact"},
			{Drawer: id("d", 1), Entity: c, Name: "C again", Rule: "alias"}} {
			if err := tx.PutMention(m); err != nil {
				return err
			}
		}
		return tx.PutEntityLink(&store.EntityLink{ID: id("k", 1), From: c, To: a, Kind: graph.PossiblySameAs, CreatedAt: at})
	})
	facts := func(r store.Reader, e string) []string {
		var out []string
		if err := r.EntityRelationships(e, func(f *store.Relationship) bool { out = append(out, f.ID); return true }); err != nil {
			t.Fatal(err)
		}
		return out
	}
	mustView(t, db, func(r store.Reader) error {
		if got := facts(r, a); !slices.Equal(got, []string{self.ID, ab.ID}) {
			return fmt.Errorf("facts of a: %v", got)
		}
		if got := facts(r, b); len(got) != 0 {
			return fmt.Errorf("b kept the fact whose object moved: %v", got)
		}
		if got := facts(r, c); !slices.Equal(got, []string{ab.ID}) {
			return fmt.Errorf("facts of c: %v", got)
		}
		f, err := r.Relationship(ab.ID)
		if err != nil || f.Object != c || f.ValidTo == nil || len(f.Evidence) != 1 || f.Evidence[0].Confidence != 0.9 || !f.RecordedAt.Equal(at) {
			return fmt.Errorf("the fact read back: %+v %v", f, err)
		}
		if f, err := r.Relationship("none"); f != nil || err != nil {
			return fmt.Errorf("a missing fact: %+v %v", f, err)
		}
		for _, end := range []string{self.ID, ab.ID} {
			links, err := r.RelationshipLinks(end)
			if err != nil || len(links) != 2 || links[0].ID != id("l", 1) || links[1].ID != id("l", 2) || links[0].Reason != "no" {
				return fmt.Errorf("links of %s: %+v %v", end, links, err)
			}
		}
		ms, err := r.DrawerMentions(id("d", 1))
		if err != nil || len(ms) != 2 || ms[0].Entity != a || ms[1].Entity != c || ms[1].Name != "C again" {
			return fmt.Errorf("drawer mentions: %+v %v", ms, err)
		}
		if m, err := r.Mention(id("d", 1), b); m != nil || err != nil {
			return fmt.Errorf("a mention never made: %+v %v", m, err)
		}
		for _, end := range []string{a, c} {
			if links, err := r.EntityLinks(end); err != nil || len(links) != 1 || links[0].From != c {
				return fmt.Errorf("entity links of %s: %+v %v", end, links, err)
			}
		}
		if e, err := r.Entity("none"); e != nil || err != nil {
			return fmt.Errorf("a missing entity: %+v %v", e, err)
		}
		return nil
	})
}

// What a write transaction read of the entities stays true through its
// own writes, and a rollback to a savepoint forgets what the rolled-back
// writes put there.
func TestGraphWriteCacheStaysTrue(t *testing.T) {
	db, _ := graphDB(t)
	var pg store.Resolved
	mustUpdate(t, db, func(tx store.Tx) error {
		var err error
		if pg, err = store.ResolveEntity(tx, "PostgreSQL", "tool", true, ""); err != nil {
			return err
		}
		// The typo rule's answers are asked, then its entity changes.
		if r, err := store.ResolveEntity(tx, "PostgreSLQ", "tool", true, ""); err != nil || r.New || r.Rule != "typo" {
			return fmt.Errorf("PostgreSLQ: %+v %v", r, err)
		}
		if ids, err := tx.EntityIDs(store.EntityByAlias, "postgreslq"); err != nil || !slices.Equal(ids, []string{pg.Entity.ID}) {
			return fmt.Errorf("the alias just added: %v %v", ids, err)
		}
		e, err := tx.Entity(pg.Entity.ID)
		if err != nil || !slices.Equal(e.Aliases, []string{"PostgreSLQ"}) {
			return fmt.Errorf("the entity just changed: %+v %v", e, err)
		}
		// A caller's change to what it read is not the cache's.
		e.Aliases = append(e.Aliases, "scribble")
		e.Name = "scribble"
		if again, err := tx.Entity(pg.Entity.ID); err != nil || again.Name != "PostgreSQL" || len(again.Aliases) != 1 {
			return fmt.Errorf("the cache shared a record with its reader: %+v %v", again, err)
		}
		// A new entity joins answers asked before it existed.
		if ids, err := tx.EntityIDs(store.EntityByDeletion, "mysql"); err != nil || len(ids) != 0 {
			return fmt.Errorf("mysql before: %v %v", ids, err)
		}
		my, err := store.ResolveEntity(tx, "MySQL", "tool", true, "")
		if err != nil || !my.New {
			return fmt.Errorf("MySQL: %+v %v", my, err)
		}
		for _, v := range []string{"mysql", "ysql", "mysq"} {
			if ids, err := tx.EntityIDs(store.EntityByDeletion, v); err != nil || !slices.Equal(ids, []string{my.Entity.ID}) {
				return fmt.Errorf("deletion %q after MySQL was made: %v %v", v, ids, err)
			}
		}
		// Rolled back: the alias added after the savepoint is gone from
		// the answers and the record.
		sp := tx.(store.Savepointer)
		if err := sp.Savepoint(); err != nil {
			return err
		}
		if _, err := store.AddAlias(tx, my.Entity.ID, "My Sequel"); err != nil {
			return err
		}
		if ids, err := tx.EntityIDs(store.EntityByAlias, "mysequel"); err != nil || len(ids) != 1 {
			return fmt.Errorf("the alias before the rollback: %v %v", ids, err)
		}
		if err := sp.RollbackToSavepoint(); err != nil {
			return err
		}
		if ids, err := tx.EntityIDs(store.EntityByAlias, "mysequel"); err != nil || len(ids) != 0 {
			return fmt.Errorf("the alias after the rollback: %v %v", ids, err)
		}
		if e, err := tx.Entity(my.Entity.ID); err != nil || len(e.Aliases) != 0 {
			return fmt.Errorf("the entity after the rollback: %+v %v", e, err)
		}
		return nil
	})
	mustView(t, db, func(r store.Reader) error {
		e, err := r.Entity(pg.Entity.ID)
		if err != nil || e.Name != "PostgreSQL" || !slices.Equal(e.Aliases, []string{"PostgreSLQ"}) {
			return fmt.Errorf("committed: %+v %v", e, err)
		}
		return nil
	})
}

// A visit stops when its context ends, within a page, with the
// context's error, and the view fails with it.
func TestGraphVisitorsStopOnContext(t *testing.T) {
	db, _ := graphDB(t)
	const n = 300
	at := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	hub := id("hub", 0)
	mustUpdate(t, db, func(tx store.Tx) error {
		for i := range n {
			if err := tx.PutEntity(&store.Entity{ID: id("e", i), Name: id("E", i), Kind: "concept", Key: id("e", i), CreatedAt: at}, nil); err != nil {
				return err
			}
			if err := tx.PutMention(&store.Mention{Drawer: id("d", i), Entity: hub, Name: "Hub", CreatedAt: at}); err != nil {
				return err
			}
			if err := tx.PutRelationship(&store.Relationship{ID: id("f", i), Subject: hub, Object: id("e", i), ValidFrom: at, RecordedAt: at}, nil); err != nil {
				return err
			}
		}
		return nil
	})
	for what, scan := range map[string]func(r store.Reader, visit func() bool) error{
		"Entities": func(r store.Reader, v func() bool) error { return r.Entities(func(*store.Entity) bool { return v() }) },
		"Mentions": func(r store.Reader, v func() bool) error {
			return r.Mentions(hub, func(*store.Mention) bool { return v() })
		},
		"MentioningDrawers": func(r store.Reader, v func() bool) error {
			return r.MentioningDrawers(hub, func(string) bool { return v() })
		},
		"EntityRelationships": func(r store.Reader, v func() bool) error {
			return r.EntityRelationships(hub, func(*store.Relationship) bool { return v() })
		},
	} {
		t.Run(what, func(t *testing.T) {
			c, cancel := context.WithCancel(context.Background())
			defer cancel()
			seen := 0
			var scanErr error
			err := db.View(c, func(r store.Reader) error {
				scanErr = scan(r, func() bool {
					if seen++; seen == 10 {
						cancel()
					}
					return true
				})
				return nil
			})
			if !errors.Is(err, context.Canceled) || !errors.Is(scanErr, context.Canceled) || seen != 10 {
				t.Fatalf("cancelled at the 10th entry: view %v, scan %v, %d visited", err, scanErr, seen)
			}
		})
	}
}
