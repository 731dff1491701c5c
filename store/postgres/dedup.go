package postgres

import (
	"github.com/loci-dev/loci/store"
)

// DedupByHash is not written yet.
func (t *tx) DedupByHash(scope, hash string) ([]string, error) {
	return nil, errTODO
}

// DedupByFingerprint is not written yet.
func (t *tx) DedupByFingerprint(scope, fp string) ([]string, error) {
	return nil, errTODO
}

// DedupNear is not written yet.
func (t *tx) DedupNear(scope string, bands [][8]byte, lo, hi int, fn func(store.NearCandidate)) error {
	return errTODO
}

// DedupRecord is not written yet.
func (t *tx) DedupRecord(drawerID string) (*store.DedupRecord, error) {
	return nil, errTODO
}

// DedupSketch is not written yet.
func (t *tx) DedupSketch(drawerID string) (mins []uint16, norm string, err error) {
	err = errTODO
	return
}

// Links is not written yet.
func (t *tx) Links(drawerID string) ([]store.Link, error) {
	return nil, errTODO
}

// LinkEnds is not written yet.
func (t *tx) LinkEnds(drawerID string) ([]store.LinkEnd, error) {
	return nil, errTODO
}

// Link is not written yet.
func (t *tx) Link(id string) (*store.Link, error) {
	return nil, errTODO
}

// PutDedup is not written yet.
func (t *tx) PutDedup(r *store.DedupRecord) error {
	return errTODO
}

// DeleteDedup is not written yet.
func (t *tx) DeleteDedup(r *store.DedupRecord) error {
	return errTODO
}

// PutLink is not written yet.
func (t *tx) PutLink(l *store.Link) error {
	return errTODO
}

// DeleteLink is not written yet.
func (t *tx) DeleteLink(l *store.Link) error {
	return errTODO
}
