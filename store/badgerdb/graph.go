package badgerdb

import (
	"bytes"
	"sort"

	"github.com/loci-dev/loci/graph"
	"github.com/loci-dev/loci/store"
)

// Entity keys (values after \x00 are ids; names and keys never hold NUL):
//
//	en/<id>                    the entity
//	enn/<name>\x00<id>         by canonical name
//	enk/<key>\x00<id>          by normalised key
//	ena/<alias key>\x00<id>    by an alias's key
//	end/<deletion>\x00<id>     by its key and each one-rune deletion of it
//	enl/<entity>\x00<link>     a link from or to the entity
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
	var r entityRecord
	ok, err := t.get(k(pEntity, id), &r)
	if !ok || err != nil {
		return nil, err
	}
	return r.entity(), nil
}

func (t *tx) EntityIDs(index store.EntityIndex, value string) ([]string, error) {
	prefix := k(entityIndexPrefix(index), value, "\x00")
	var ids []string
	t.keys(prefix, false, func(key []byte, _ valueFn) bool {
		ids = append(ids, string(key[len(prefix):]))
		return true
	})
	sort.Strings(ids)
	return ids, nil
}

func (t *tx) Entities(fn func(*store.Entity) bool) error {
	var err error
	t.keys(k(pEntityName), false, func(key []byte, _ valueFn) bool {
		i := bytes.LastIndexByte(key, 0)
		var e *store.Entity
		if e, err = t.Entity(string(key[i+1:])); err != nil {
			return false
		}
		return e == nil || fn(e)
	})
	return err
}

func (t *tx) EntityLinks(id string) ([]store.EntityLink, error) {
	var out []store.EntityLink
	var err error
	t.keys(k(pEntityLink, id, "\x00"), false, func(_ []byte, val valueFn) bool {
		var r entityLinkRecord
		if err = withVal(val, func(b []byte) error { return decode(b, &r) }); err != nil {
			return false
		}
		out = append(out, store.EntityLink{ID: r.ID, From: r.From, To: r.To, Kind: r.Kind, CreatedAt: r.CreatedAt})
		return true
	})
	return out, err
}

// entityIndexKeys is every index key of an entity.
func entityIndexKeys(e *store.Entity) [][]byte {
	keys := [][]byte{k(pEntityName, e.Name, "\x00", e.ID), k(pEntityKey, e.Key, "\x00", e.ID), k(pEntityDeletion, e.Key, "\x00", e.ID)}
	for _, d := range graph.Deletions(e.Key) {
		keys = append(keys, k(pEntityDeletion, d, "\x00", e.ID))
	}
	for _, a := range e.Aliases {
		keys = append(keys, k(pEntityAlias, graph.Key(a), "\x00", e.ID))
	}
	return keys
}

func (t *tx) PutEntity(e, prev *store.Entity) error {
	if prev != nil {
		for _, key := range entityIndexKeys(prev) {
			if err := t.del(key); err != nil {
				return err
			}
		}
	}
	if err := t.put(k(pEntity, e.ID), entityRec(e)); err != nil {
		return err
	}
	for _, key := range entityIndexKeys(e) {
		if err := t.set(key, nil); err != nil {
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
	t.keys(k(pMentionByEntity, entity, "\x00"), false, func(_ []byte, val valueFn) bool {
		var r mentionRecord
		if err = withVal(val, func(b []byte) error { return decode(b, &r) }); err != nil {
			return false
		}
		return fn(r.mention())
	})
	return err
}

func (t *tx) DrawerMentions(drawer string) ([]store.Mention, error) {
	var out []store.Mention
	var err error
	t.keys(k(pMentionByDrawer, drawer, "\x00"), false, func(_ []byte, val valueFn) bool {
		var r mentionRecord
		if err = withVal(val, func(b []byte) error { return decode(b, &r) }); err != nil {
			return false
		}
		out = append(out, *r.mention())
		return true
	})
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
	t.keys(prefix, false, func(key []byte, _ valueFn) bool {
		ids = append(ids, string(key[len(prefix):]))
		return true
	})
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
	t.keys(k(pRelationshipLink, id, "\x00"), false, func(_ []byte, val valueFn) bool {
		var r relationshipLinkRecord
		if err = withVal(val, func(b []byte) error { return decode(b, &r) }); err != nil {
			return false
		}
		out = append(out, store.RelationshipLink{ID: r.ID, From: r.From, To: r.To, Kind: r.Kind, Reason: r.Reason,
			Drawer: r.Drawer, Job: r.Job, CreatedAt: r.CreatedAt})
		return true
	})
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
