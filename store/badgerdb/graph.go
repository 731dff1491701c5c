package badgerdb

import (
	"sort"
	"strings"

	"github.com/loci-dev/loci/store"
	"github.com/loci-dev/loci/store/graph"
)

// Entity keys (names and keys never hold NUL):
//
//	en/<id>                    the entity
//	enn/<name>                 ids by canonical name
//	enk/<key>                  ids by normalised key
//	ena/<alias key>            ids by an alias's key
//	end/<deletion>             ids by key and by each one-rune deletion of it
//	enl/<entity>\x00<link>     a link from or to the entity
//
// The four indexes are posting lists (sorted ids, 36 bytes each) read with
// one point lookup: a resolution asks up to a dozen of them, and an
// iterator in a write transaction sorts its pending writes each time.
const (
	pEntity         = "en/"
	pEntityName     = "enn/"
	pEntityKey      = "enk/"
	pEntityAlias    = "ena/"
	pEntityDeletion = "end/"
	pEntityLink     = "enl/"
)

func entityIndexPrefix(i store.EntityIndex) string {
	switch i {
	case store.EntityByName:
		return pEntityName
	case store.EntityByKey:
		return pEntityKey
	case store.EntityByAlias:
		return pEntityAlias
	default:
		return pEntityDeletion
	}
}

func (t *tx) Entity(id string) (*store.Entity, error) {
	if e, ok := t.entityCache[id]; ok {
		c := *e
		return &c, nil
	}
	var r entityRecord
	ok, err := t.get(k(pEntity, id), &r)
	if !ok || err != nil {
		return nil, err
	}
	e := r.entity()
	t.cacheEntity(e)
	return e, nil
}

// cacheEntity keeps an entity a write transaction read or wrote: resolving
// a name reads its candidates, then the one it took, then writes it.
func (t *tx) cacheEntity(e *store.Entity) {
	if !t.write {
		return
	}
	if t.entityCache == nil {
		t.entityCache = map[string]*store.Entity{}
	}
	c := *e
	t.entityCache[e.ID] = &c
}

func (t *tx) EntityIDs(index store.EntityIndex, value string) ([]string, error) {
	key := k(entityIndexPrefix(index), value)
	t.entityKeys.ready(t)
	if !t.entityKeys.mayHave(key) {
		return nil, nil
	}
	raw, err := t.rawPostings(key)
	return idList(raw), err
}

const idLen = 36

func idList(raw []byte) []string {
	ids := make([]string, 0, len(raw)/idLen)
	for i := 0; i+idLen <= len(raw); i += idLen {
		ids = append(ids, string(raw[i:i+idLen]))
	}
	return ids
}

// editList adds (or removes) an id in the posting list at key.
func (t *tx) editList(key []byte, id string, add bool) error {
	var raw []byte
	t.entityKeys.ready(t)
	if t.entityKeys.mayHave(key) {
		var err error
		if raw, err = t.rawPostings(key); err != nil {
			return err
		}
	}
	if add {
		t.entityKeys.add(key)
	}
	ids := idList(raw)
	i := sort.SearchStrings(ids, id)
	has := i < len(ids) && ids[i] == id
	switch {
	case add && !has:
		ids = append(ids[:i], append([]string{id}, ids[i:]...)...)
	case !add && has:
		ids = append(ids[:i], ids[i+1:]...)
	default:
		return nil
	}
	if len(ids) == 0 {
		return t.setPostings(key, nil)
	}
	return t.setPostings(key, []byte(strings.Join(ids, "")))
}

func (t *tx) Entities(fn func(*store.Entity) bool) error {
	var err error
	if cerr := t.keys(k(pEntityName), false, func(_ []byte, val valueFn) bool {
		var raw []byte
		if err = withVal(val, func(b []byte) error { raw = append([]byte(nil), b...); return nil }); err != nil {
			return false
		}
		for _, id := range idList(raw) {
			var e *store.Entity
			if e, err = t.Entity(id); err != nil {
				return false
			}
			if e != nil && !fn(e) {
				return false
			}
		}
		return true
	}); cerr != nil {
		return cerr
	}
	return err
}

func (t *tx) EntityLinks(id string) ([]store.EntityLink, error) {
	var out []store.EntityLink
	var err error
	if cerr := t.keys(k(pEntityLink, id, "\x00"), false, func(_ []byte, val valueFn) bool {
		var r entityLinkRecord
		if err = withVal(val, func(b []byte) error { return decode(b, &r) }); err != nil {
			return false
		}
		out = append(out, store.EntityLink{ID: r.ID, From: r.From, To: r.To, Kind: r.Kind, CreatedAt: r.CreatedAt})
		return true
	}); cerr != nil {
		return nil, cerr
	}
	return out, err
}

// entityIndexKeys is every posting list an entity is in.
func entityIndexKeys(e *store.Entity) map[string]bool {
	keys := map[string]bool{string(k(pEntityName, e.Name)): true, string(k(pEntityKey, e.Key)): true, string(k(pEntityDeletion, e.Key)): true}
	for _, d := range graph.Deletions(e.Key) {
		keys[string(k(pEntityDeletion, d))] = true
	}
	for _, a := range e.Aliases {
		keys[string(k(pEntityAlias, graph.Key(a)))] = true
	}
	return keys
}

func (t *tx) PutEntity(e, prev *store.Entity) error {
	now := entityIndexKeys(e)
	if prev != nil {
		for key := range entityIndexKeys(prev) {
			if !now[key] {
				if err := t.editList([]byte(key), prev.ID, false); err != nil {
					return err
				}
			}
		}
	}
	if err := t.put(k(pEntity, e.ID), entityRec(e)); err != nil {
		return err
	}
	t.cacheEntity(e)
	// Only the lists the entity joins: an update keeps the ones it had.
	old := map[string]bool{}
	if prev != nil {
		old = entityIndexKeys(prev)
	}
	keys := make([]string, 0, len(now))
	for key := range now {
		if !old[key] {
			keys = append(keys, key)
		}
	}
	sort.Strings(keys)
	for _, key := range keys {
		if err := t.editList([]byte(key), e.ID, true); err != nil {
			return err
		}
	}
	return nil
}

func (t *tx) PutEntityLink(l *store.EntityLink) error {
	r := &entityLinkRecord{ID: l.ID, From: l.From, To: l.To, Kind: l.Kind, CreatedAt: l.CreatedAt}
	if err := t.put(k(pEntityLink, l.From, "\x00", l.ID), r); err != nil {
		return err
	}
	return t.put(k(pEntityLink, l.To, "\x00", l.ID), r)
}

// Mention keys: mde/<drawer>\x00<entity> (the record) and
// mne/<entity>\x00<drawer> (the same record, by entity).
const (
	pMentionByDrawer = "mde/"
	pMentionByEntity = "mne/"
)

func (t *tx) Mention(drawer, entity string) (*store.Mention, error) {
	var r mentionRecord
	ok, err := t.get(k(pMentionByDrawer, drawer, "\x00", entity), &r)
	if !ok || err != nil {
		return nil, err
	}
	return r.mention(), nil
}

func (t *tx) Mentions(entity string, fn func(*store.Mention) bool) error {
	var err error
	if cerr := t.keys(k(pMentionByEntity, entity, "\x00"), false, func(_ []byte, val valueFn) bool {
		var r mentionRecord
		if err = withVal(val, func(b []byte) error { return decode(b, &r) }); err != nil {
			return false
		}
		return fn(r.mention())
	}); cerr != nil {
		return cerr
	}
	return err
}

func (t *tx) MentioningDrawers(entity string, fn func(drawer string) bool) error {
	prefix := k(pMentionByEntity, entity, "\x00")
	if cerr := t.keys(prefix, false, func(key []byte, _ valueFn) bool { return fn(string(key[len(prefix):])) }); cerr != nil {
		return cerr
	}
	return nil
}

func (t *tx) DrawerMentions(drawer string) ([]store.Mention, error) {
	var out []store.Mention
	var err error
	if cerr := t.keys(k(pMentionByDrawer, drawer, "\x00"), false, func(_ []byte, val valueFn) bool {
		var r mentionRecord
		if err = withVal(val, func(b []byte) error { return decode(b, &r) }); err != nil {
			return false
		}
		out = append(out, *r.mention())
		return true
	}); cerr != nil {
		return nil, cerr
	}
	return out, err
}

func (t *tx) PutMention(m *store.Mention) error {
	r := mentionRec(m)
	if err := t.put(k(pMentionByDrawer, m.Drawer, "\x00", m.Entity), r); err != nil {
		return err
	}
	return t.put(k(pMentionByEntity, m.Entity, "\x00", m.Drawer), r)
}

// Fact keys: rel/<id> the fact, rle/<entity>\x00<id> under its subject and
// its object, rll/<fact>\x00<link> a lifecycle link under both facts.
const (
	pRelationship       = "rel/"
	pRelationshipEntity = "rle/"
	pRelationshipLink   = "rll/"
)

func (t *tx) Relationship(id string) (*store.Relationship, error) {
	var r relationshipRecord
	ok, err := t.get(k(pRelationship, id), &r)
	if !ok || err != nil {
		return nil, err
	}
	return r.relationship(), nil
}

func (t *tx) EntityRelationships(entity string, fn func(*store.Relationship) bool) error {
	prefix := k(pRelationshipEntity, entity, "\x00")
	var ids []string
	if cerr := t.keys(prefix, false, func(key []byte, _ valueFn) bool {
		ids = append(ids, string(key[len(prefix):]))
		return true
	}); cerr != nil {
		return cerr
	}
	for _, id := range ids {
		r, err := t.Relationship(id)
		if err != nil {
			return err
		}
		if r != nil && !fn(r) {
			return nil
		}
	}
	return nil
}

func (t *tx) RelationshipLinks(id string) ([]store.RelationshipLink, error) {
	var out []store.RelationshipLink
	var err error
	if cerr := t.keys(k(pRelationshipLink, id, "\x00"), false, func(_ []byte, val valueFn) bool {
		var r relationshipLinkRecord
		if err = withVal(val, func(b []byte) error { return decode(b, &r) }); err != nil {
			return false
		}
		out = append(out, store.RelationshipLink{ID: r.ID, From: r.From, To: r.To, Kind: r.Kind, Reason: r.Reason,
			Drawer: r.Drawer, Job: r.Job, CreatedAt: r.CreatedAt})
		return true
	}); cerr != nil {
		return nil, cerr
	}
	return out, err
}

func (t *tx) PutRelationship(r, prev *store.Relationship) error {
	if prev != nil && (prev.Subject != r.Subject || prev.Object != r.Object) {
		for _, e := range []string{prev.Subject, prev.Object} {
			if err := t.del(k(pRelationshipEntity, e, "\x00", prev.ID)); err != nil {
				return err
			}
		}
	}
	if err := t.put(k(pRelationship, r.ID), relationshipRec(r)); err != nil {
		return err
	}
	for _, e := range []string{r.Subject, r.Object} {
		if err := t.set(k(pRelationshipEntity, e, "\x00", r.ID), nil); err != nil {
			return err
		}
	}
	return nil
}

func (t *tx) PutRelationshipLink(l *store.RelationshipLink) error {
	rec := &relationshipLinkRecord{ID: l.ID, From: l.From, To: l.To, Kind: l.Kind, Reason: l.Reason, Drawer: l.Drawer, Job: l.Job, CreatedAt: l.CreatedAt}
	if err := t.put(k(pRelationshipLink, l.From, "\x00", l.ID), rec); err != nil {
		return err
	}
	return t.put(k(pRelationshipLink, l.To, "\x00", l.ID), rec)
}
