package postgres

import (
	"github.com/loci-dev/loci/store"
)

// Embedding is not written yet.
func (t *tx) Embedding(drawerID, profile string) (*store.Embedding, error) {
	return nil, errTODO
}

// Embeddings is not written yet.
func (t *tx) Embeddings(profile string, fn func(*store.Embedding) bool) error {
	return errTODO
}

// PutEmbedding is not written yet.
func (t *tx) PutEmbedding(e *store.Embedding) error {
	return errTODO
}
