package postgres

import (
	"github.com/loci-dev/loci/store"
)

// AuthState is not written yet.
func (t *tx) AuthState() (*store.AuthState, error) {
	return nil, errTODO
}

// PutAuthState is not written yet.
func (t *tx) PutAuthState(a *store.AuthState) error {
	return errTODO
}
