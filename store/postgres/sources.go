package postgres

import (
	"github.com/loci-dev/loci/store"
)

// Source is not written yet.
func (t *tx) Source(key string) (*store.SourceState, error) {
	return nil, errTODO
}

// Sources is not written yet.
func (t *tx) Sources(fn func(*store.SourceState) bool) error {
	return errTODO
}

// SourceDocument is not written yet.
func (t *tx) SourceDocument(source, id string) (*store.DocumentState, error) {
	return nil, errTODO
}

// CountSourceDocuments is not written yet.
func (t *tx) CountSourceDocuments(source string) (int, error) {
	return 0, errTODO
}

// SourceDocuments is not written yet.
func (t *tx) SourceDocuments(source string, fn func(*store.DocumentState) bool) error {
	return errTODO
}

// ChunkOwner is not written yet.
func (t *tx) ChunkOwner(drawer string) (source, doc string, err error) {
	err = errTODO
	return
}

// StaleDocuments is not written yet.
func (t *tx) StaleDocuments(source string, fn func(doc string) bool) error {
	return errTODO
}

// PutSource is not written yet.
func (t *tx) PutSource(s *store.SourceState) error {
	return errTODO
}

// PutSourceDocument is not written yet.
func (t *tx) PutSourceDocument(d *store.DocumentState) error {
	return errTODO
}

// DeleteSource is not written yet.
func (t *tx) DeleteSource(key string) error {
	return errTODO
}

// DeleteSourceDocument is not written yet.
func (t *tx) DeleteSourceDocument(source, id string) error {
	return errTODO
}

// PutChunkOwner is not written yet.
func (t *tx) PutChunkOwner(drawer, source, doc string) error {
	return errTODO
}

// DeleteChunkOwner is not written yet.
func (t *tx) DeleteChunkOwner(drawer string) error {
	return errTODO
}

// PutStaleDocument is not written yet.
func (t *tx) PutStaleDocument(source, doc string) error {
	return errTODO
}

// DeleteStaleDocument is not written yet.
func (t *tx) DeleteStaleDocument(source, doc string) error {
	return errTODO
}
