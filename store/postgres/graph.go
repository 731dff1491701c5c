package postgres

import (
	"github.com/loci-dev/loci/store"
)

// Entity is not written yet.
func (t *tx) Entity(id string) (*store.Entity, error) {
	return nil, errTODO
}

// EntityIDs is not written yet.
func (t *tx) EntityIDs(index store.EntityIndex, value string) ([]string, error) {
	return nil, errTODO
}

// Entities is not written yet.
func (t *tx) Entities(fn func(*store.Entity) bool) error {
	return errTODO
}

// EntityLinks is not written yet.
func (t *tx) EntityLinks(id string) ([]store.EntityLink, error) {
	return nil, errTODO
}

// Mention is not written yet.
func (t *tx) Mention(drawer, entity string) (*store.Mention, error) {
	return nil, errTODO
}

// Mentions is not written yet.
func (t *tx) Mentions(entity string, fn func(*store.Mention) bool) error {
	return errTODO
}

// DrawerMentions is not written yet.
func (t *tx) DrawerMentions(drawer string) ([]store.Mention, error) {
	return nil, errTODO
}

// MentioningDrawers is not written yet.
func (t *tx) MentioningDrawers(entity string, fn func(drawer string) bool) error {
	return errTODO
}

// Relationship is not written yet.
func (t *tx) Relationship(id string) (*store.Relationship, error) {
	return nil, errTODO
}

// EntityRelationships is not written yet.
func (t *tx) EntityRelationships(entity string, fn func(*store.Relationship) bool) error {
	return errTODO
}

// RelationshipLinks is not written yet.
func (t *tx) RelationshipLinks(id string) ([]store.RelationshipLink, error) {
	return nil, errTODO
}

// PutEntity is not written yet.
func (t *tx) PutEntity(e, prev *store.Entity) error {
	return errTODO
}

// PutEntityLink is not written yet.
func (t *tx) PutEntityLink(l *store.EntityLink) error {
	return errTODO
}

// PutMention is not written yet.
func (t *tx) PutMention(m *store.Mention) error {
	return errTODO
}

// PutRelationship is not written yet.
func (t *tx) PutRelationship(r, prev *store.Relationship) error {
	return errTODO
}

// PutRelationshipLink is not written yet.
func (t *tx) PutRelationshipLink(l *store.RelationshipLink) error {
	return errTODO
}
