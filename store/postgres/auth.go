package postgres

import (
	"github.com/loci-dev/loci/store"
)

// AuthState is the generated token's digest (table auth_state, one row);
// nil when none is stored.
func (t *tx) AuthState() (*store.AuthState, error) {
	return get[store.AuthState](t, "SELECT rec FROM auth_state WHERE id = 1")
}

// PutAuthState stores the token's digest, replacing it; nil removes it.
// One statement either way.
func (t *tx) PutAuthState(a *store.AuthState) error {
	if a == nil {
		return t.exec("DELETE FROM auth_state WHERE id = 1")
	}
	rec, err := enc(a)
	if err != nil {
		return err
	}
	return t.exec("INSERT INTO auth_state (id, rec) VALUES (1, $1) ON CONFLICT (id) DO UPDATE SET rec = EXCLUDED.rec", rec)
}
