package badgerdb

import "github.com/loci-dev/loci/store"

// keyAuthState holds the generated token's digest: the spec's auth_state
// table, one record per palace (it travels with a backup).
var keyAuthState = []byte("auth_state")

func (t *tx) AuthState() (*store.AuthState, error) {
	var a authRecord
	ok, err := t.get(keyAuthState, &a)
	if err != nil || !ok {
		return nil, err
	}
	return &store.AuthState{Digest: a.Digest, Algorithm: a.Algorithm, Version: a.Version, CreatedAt: a.CreatedAt}, nil
}

func (t *tx) PutAuthState(a *store.AuthState) error {
	if a == nil {
		return t.del(keyAuthState)
	}
	return t.put(keyAuthState, authRecord{Digest: a.Digest, Algorithm: a.Algorithm, Version: a.Version, CreatedAt: a.CreatedAt})
}
