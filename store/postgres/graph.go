package postgres

import (
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/loci-dev/loci/store"
	"github.com/loci-dev/loci/store/graph"
)

// The knowledge graph (schema/50_graph.sql). Entities are resolved through
// entity_index: one row per (index, value) an entity is found under, its
// name, its key, its key again and each one-rune deletion of it, and each
// alias's key; an entity with a key of n distinct runes and a aliases of
// distinct keys makes about n+3+a rows. EntityIDs is one scan of the
// index's primary key, in id order (ids are time-ordered: oldest first).
//
// Visitors (Entities, Mentions, MentioningDrawers, EntityRelationships)
// read a page of rows, then call fn for each: fn may read through the same
// transaction, and a connection runs one query at a time. Pages follow a
// key (keyset pagination) so each is one index range scan.

// Entity index kinds as stored in entity_index.kind.
const (
	indexName     int16 = 0
	indexKey      int16 = 1
	indexAlias    int16 = 2
	indexDeletion int16 = 3
)

func entityIndexKind(i store.EntityIndex) int16 {
	switch i {
	case store.EntityByName:
		return indexName
	case store.EntityByKey:
		return indexKey
	case store.EntityByAlias:
		return indexAlias
	default:
		return indexDeletion
	}
}

// graphCache is what a write transaction read of the entities: the
// records and the index answers. A resolution asks an index, then reads
// each candidate, then the one it took, then writes it; its batch asks
// again. Other daemons write nothing meanwhile (Update holds the writer
// lock from its start), PutEntity keeps the cache true, and a rollback to
// a savepoint drops it (tx.go).
type graphCache struct {
	entities map[string]*store.Entity
	ids      map[entityIndexRow][]string
}

// maxCachedEntities bounds a transaction's cache; past it, it starts over.
const maxCachedEntities = 50000

// cache is the transaction's graph cache; nil in a read transaction
// (a reader's reads are not bounded by a batch).
func (t *tx) cache() *graphCache {
	if !t.write {
		return nil
	}
	if t.graph == nil || len(t.graph.entities) > maxCachedEntities {
		t.graph = &graphCache{entities: map[string]*store.Entity{}, ids: map[entityIndexRow][]string{}}
	}
	return t.graph
}

// keep caches an entity (a copy).
func (c *graphCache) keep(e *store.Entity) {
	if c != nil {
		cp := *e
		c.entities[e.ID] = &cp
	}
}

// Entity is an entity by id; nil when none.
func (t *tx) Entity(id string) (*store.Entity, error) {
	c := t.cache()
	if c != nil {
		if e, ok := c.entities[id]; ok {
			cp := *e
			return &cp, nil
		}
	}
	e, err := get[store.Entity](t, "SELECT rec FROM entities WHERE id = $1", id)
	if err == nil && e != nil {
		c.keep(e)
	}
	return e, err
}

// EntityIDs is the ids under a value of an entity index, oldest first.
// In a write transaction the entities come with them (one statement) and
// are kept for the Entity reads that follow; a deletion lookup also asks
// for the value's own deletions, which the typo rule asks next.
func (t *tx) EntityIDs(index store.EntityIndex, value string) ([]string, error) {
	kind := entityIndexKind(index)
	c := t.cache()
	if c == nil {
		return t.strings("SELECT entity FROM entity_index WHERE kind = $1 AND value = $2 ORDER BY entity", kind, value)
	}
	if ids, ok := c.ids[entityIndexRow{kind, value}]; ok {
		return slices.Clone(ids), nil
	}
	values := []string{value}
	if kind == indexDeletion {
		for _, d := range graph.Deletions(value) {
			if _, ok := c.ids[entityIndexRow{kind, d}]; !ok {
				values = append(values, d)
			}
		}
	}
	for _, v := range values {
		c.ids[entityIndexRow{kind, v}] = nil
	}
	// One index lookup per value (never a scan of the kind with the values
	// as a filter, which a prepared statement's generic plan may choose for
	// "value = ANY($2)"), each entity's record by its primary key.
	sql := `SELECT i.value, (SELECT e.rec FROM entities e WHERE e.id = i.entity) FROM entity_index i
		WHERE i.kind = $1 AND i.value = $2 ORDER BY i.entity`
	args := []any{kind, value}
	if len(values) > 1 {
		sql = `SELECT v.value, (SELECT e.rec FROM entities e WHERE e.id = i.entity)
			FROM unnest($2::text[]) AS v(value), LATERAL (SELECT entity FROM entity_index
				WHERE kind = $1 AND value = v.value ORDER BY entity) AS i
			ORDER BY v.value, i.entity`
		args = []any{kind, values}
	}
	err := t.rows(sql, args,
		func(r pgx.Rows) (bool, error) {
			var v string
			var b []byte
			if err := r.Scan(&v, &b); err != nil {
				return false, t.check(err)
			}
			e := new(store.Entity)
			if err := dec(b, e); err != nil {
				return false, err
			}
			row := entityIndexRow{kind, v}
			c.ids[row] = append(c.ids[row], e.ID)
			if _, ok := c.entities[e.ID]; !ok {
				c.entities[e.ID] = e
			}
			return true, nil
		})
	if err != nil {
		t.graph = nil
		return nil, err
	}
	return slices.Clone(c.ids[entityIndexRow{kind, value}]), nil
}

// Entities visits every entity in name order (then id order) until fn
// returns false.
func (t *tx) Entities(fn func(*store.Entity) bool) error {
	type row struct {
		name, id string
		rec      []byte
	}
	return pages(t, graphPages, func(last *row, limit int) (string, []any) {
		lastName, lastID := "", ""
		if last != nil {
			lastName, lastID = last.name, last.id
		}
		return `SELECT i.value, i.entity, (SELECT e.rec FROM entities e WHERE e.id = i.entity) FROM entity_index i
			WHERE i.kind = 0 AND (i.kind, i.value, i.entity) > (0, $1, $2) ORDER BY i.kind, i.value, i.entity LIMIT $3`,
			[]any{lastName, lastID, limit}
	}, func(x *row) []any { return []any{&x.name, &x.id, &x.rec} }, func(x *row) (bool, error) {
		return visitRec(x.rec, fn)
	})
}

// EntityLinks is the links from or to an entity, in link id order.
func (t *tx) EntityLinks(id string) ([]store.EntityLink, error) {
	return all[store.EntityLink](t, `SELECT rec FROM entity_links WHERE from_id = $1 OR to_id = $1 ORDER BY id`, id)
}

// Mention is a drawer's mention of an entity; nil when none.
func (t *tx) Mention(drawer, entity string) (*store.Mention, error) {
	return get[store.Mention](t, "SELECT rec FROM mentions WHERE drawer = $1 AND entity = $2", drawer, entity)
}

// Mentions visits the mentions of an entity in drawer id order until fn
// returns false.
func (t *tx) Mentions(entity string, fn func(*store.Mention) bool) error {
	return pages(t, graphPages, func(last *idRec, limit int) (string, []any) {
		return `SELECT drawer, rec FROM mentions WHERE entity = $1 AND drawer > $2 ORDER BY drawer LIMIT $3`,
			[]any{entity, lastID(last), limit}
	}, (*idRec).dest, func(x *idRec) (bool, error) { return visitRec(x.rec, fn) })
}

// DrawerMentions is the mentions a drawer makes, in entity id order.
func (t *tx) DrawerMentions(drawer string) ([]store.Mention, error) {
	return all[store.Mention](t, "SELECT rec FROM mentions WHERE drawer = $1 ORDER BY entity", drawer)
}

// MentioningDrawers visits the ids of the drawers mentioning an entity,
// in id order, from the index alone, until fn returns false.
func (t *tx) MentioningDrawers(entity string, fn func(drawer string) bool) error {
	return pages(t, graphPages, func(last *string, limit int) (string, []any) {
		after := ""
		if last != nil {
			after = *last
		}
		return `SELECT drawer FROM mentions WHERE entity = $1 AND drawer > $2 ORDER BY drawer LIMIT $3`, []any{entity, after, limit}
	}, func(x *string) []any { return []any{x} }, func(x *string) (bool, error) { return fn(*x), nil })
}

// Relationship is a fact by id; nil when none.
func (t *tx) Relationship(id string) (*store.Relationship, error) {
	return get[store.Relationship](t, "SELECT rec FROM relationships WHERE id = $1", id)
}

// EntityRelationships visits the facts an entity is the subject or the
// object of, in id order (a fact of itself once), until fn returns false.
// Each page merges two index range scans (subject, object).
func (t *tx) EntityRelationships(entity string, fn func(*store.Relationship) bool) error {
	prev := ""
	return pages(t, graphPages, func(last *idRec, limit int) (string, []any) {
		return `(SELECT id, rec FROM relationships WHERE subject = $1 AND id > $2 ORDER BY id LIMIT $3)
			UNION ALL (SELECT id, rec FROM relationships WHERE object = $1 AND id > $2 ORDER BY id LIMIT $3)
			ORDER BY id LIMIT $3`, []any{entity, lastID(last), limit}
	}, (*idRec).dest, func(x *idRec) (bool, error) {
		if x.id == prev {
			return true, nil // subject and object: the fact is in both scans
		}
		prev = x.id
		return visitRec(x.rec, fn)
	})
}

// RelationshipLinks is the lifecycle links from or to a fact, in link id
// order.
func (t *tx) RelationshipLinks(id string) ([]store.RelationshipLink, error) {
	return all[store.RelationshipLink](t, `SELECT rec FROM relationship_links WHERE from_id = $1 OR to_id = $1 ORDER BY id`, id)
}

// entityIndexRow is one (kind, value) an entity is found under.
type entityIndexRow struct {
	kind  int16
	value string
}

// entityIndexRows is every (kind, value) of an entity, once each.
func entityIndexRows(e *store.Entity) map[entityIndexRow]bool {
	rows := map[entityIndexRow]bool{{indexName, e.Name}: true, {indexKey, e.Key}: true, {indexDeletion, e.Key}: true}
	for _, d := range graph.Deletions(e.Key) {
		rows[entityIndexRow{indexDeletion, d}] = true
	}
	for _, a := range e.Aliases {
		rows[entityIndexRow{indexAlias, graph.Key(a)}] = true
	}
	return rows
}

// columns is the rows of a that are not in b, as two arrays for unnest.
func indexColumns(a, b map[entityIndexRow]bool) ([]int16, []string) {
	kinds, values := []int16{}, []string{}
	for r := range a {
		if !b[r] {
			kinds, values = append(kinds, r.kind), append(values, r.value)
		}
	}
	return kinds, values
}

// PutEntity writes an entity and keeps its indexes in one statement: the
// record, the index rows prev had and e has not deleted, the rows e
// gains inserted (those it kept stay untouched).
func (t *tx) PutEntity(e, prev *store.Entity) error {
	rec, err := enc(e)
	if err != nil {
		return err
	}
	now := entityIndexRows(e)
	var old map[entityIndexRow]bool
	if prev != nil && prev.ID == e.ID {
		old = entityIndexRows(prev)
	}
	addKinds, addValues := indexColumns(now, old)
	goneKinds, goneValues := indexColumns(old, now)
	// The index rows e no longer has are deleted in the same statement
	// (a CTE), when there are any.
	gone, args := "", []any{e.ID, e.Name, e.Kind, e.Key, rec, addKinds, addValues}
	if len(goneKinds) > 0 {
		gone = `,
			gone AS (
				DELETE FROM entity_index i USING unnest($8::smallint[], $9::text[]) AS g(k, v)
				WHERE i.kind = g.k AND i.value = g.v AND i.entity = $1)`
		args = append(args, goneKinds, goneValues)
	}
	err = t.exec(`WITH put AS (
				INSERT INTO entities (id, name, kind, key, rec) VALUES ($1, $2, $3, $4, $5)
				ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name, kind = EXCLUDED.kind, key = EXCLUDED.key, rec = EXCLUDED.rec)`+gone+`
			INSERT INTO entity_index (kind, value, entity) SELECT k, v, $1 FROM unnest($6::smallint[], $7::text[]) AS u(k, v)
			ON CONFLICT DO NOTHING`, args...)
	if err != nil {
		t.graph = nil
		return err
	}
	if c := t.cache(); c != nil {
		c.keep(e)
		// The answers the entity joined or left are asked again.
		for i := range addKinds {
			delete(c.ids, entityIndexRow{addKinds[i], addValues[i]})
		}
		for i := range goneKinds {
			delete(c.ids, entityIndexRow{goneKinds[i], goneValues[i]})
		}
	}
	return nil
}

// PutEntityLink writes a link between entities (replacing one of its id).
func (t *tx) PutEntityLink(l *store.EntityLink) error {
	rec, err := enc(l)
	if err != nil {
		return err
	}
	return t.exec(`INSERT INTO entity_links (id, from_id, to_id, rec) VALUES ($1, $2, $3, $4)
		ON CONFLICT (id) DO UPDATE SET from_id = EXCLUDED.from_id, to_id = EXCLUDED.to_id, rec = EXCLUDED.rec`,
		l.ID, l.From, l.To, rec)
}

// PutMention writes a drawer's mention of an entity (replacing one).
func (t *tx) PutMention(m *store.Mention) error {
	rec, err := enc(m)
	if err != nil {
		return err
	}
	return t.exec(`INSERT INTO mentions (drawer, entity, rec) VALUES ($1, $2, $3)
		ON CONFLICT (drawer, entity) DO UPDATE SET rec = EXCLUDED.rec`, m.Drawer, m.Entity, rec)
}

// PutRelationship writes a fact; its subject and object columns are its
// indexes, replaced with the row (prev needs no reading).
func (t *tx) PutRelationship(r, prev *store.Relationship) error {
	rec, err := enc(r)
	if err != nil {
		return err
	}
	return t.exec(`INSERT INTO relationships (id, subject, object, rec) VALUES ($1, $2, $3, $4)
		ON CONFLICT (id) DO UPDATE SET subject = EXCLUDED.subject, object = EXCLUDED.object, rec = EXCLUDED.rec`,
		r.ID, r.Subject, r.Object, rec)
}

// PutRelationshipLink writes a lifecycle link between facts (replacing one
// of its id).
func (t *tx) PutRelationshipLink(l *store.RelationshipLink) error {
	rec, err := enc(l)
	if err != nil {
		return err
	}
	return t.exec(`INSERT INTO relationship_links (id, from_id, to_id, rec) VALUES ($1, $2, $3, $4)
		ON CONFLICT (id) DO UPDATE SET from_id = EXCLUDED.from_id, to_id = EXCLUDED.to_id, rec = EXCLUDED.rec`,
		l.ID, l.From, l.To, rec)
}
