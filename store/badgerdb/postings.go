package badgerdb

import (
	"encoding/binary"

	"github.com/google/uuid"

	"github.com/loci-dev/loci/fault"
)

// Dedup keys (exact hash, fingerprint, MinHash bands) are posting lists:
// one key per (scope, value) whose value lists the drawers carrying it, 20
// bytes each (16-byte id, 4-byte normalised length). Looking one up is a
// point read, which Badger answers from its bloom filters when the key is
// absent (the common case), instead of a prefix seek through every table.

const postingSize = 20

// MaxBandPostings caps a MinHash band's posting list. A band shared by that
// many drawers is uninformative (like a stop word): it is neither extended
// nor read, so a room of near-identical drawers stays linear. Exact and
// fingerprint lists are not capped.
const MaxBandPostings = 512

type posting struct {
	id string
	n  int
}

// rawPostings reads a posting list, through the cache of a write
// transaction.
func (t *tx) rawPostings(key []byte) ([]byte, error) {
	if t.postingCache != nil {
		if raw, ok := t.postingCache[string(key)]; ok {
			return raw, nil
		}
	}
	raw, err := t.getRaw(key)
	if err == nil && t.postingCache != nil {
		t.postingCache[string(key)] = raw
	}
	return raw, err
}

// setPostings writes a posting list (nil deletes it) and caches it.
func (t *tx) setPostings(key, raw []byte) error {
	if t.postingCache != nil {
		t.postingCache[string(key)] = raw
	}
	if len(raw) == 0 {
		return t.del(key)
	}
	return t.set(key, raw)
}

func (t *tx) postings(key []byte) ([]posting, error) {
	raw, err := t.rawPostings(key)
	if err != nil || raw == nil {
		return nil, err
	}
	if len(raw)%postingSize != 0 {
		return nil, fault.New(fault.StoreMalformed, "a dedup posting list has an unexpected length", "run loci migrate or restore a backup")
	}
	out := make([]posting, 0, len(raw)/postingSize)
	for i := 0; i < len(raw); i += postingSize {
		id, _ := uuid.FromBytes(raw[i : i+16])
		out = append(out, posting{id: id.String(), n: int(binary.BigEndian.Uint32(raw[i+16 : i+20]))})
	}
	return out, nil
}

func (t *tx) postingIDs(key []byte) ([]string, error) {
	ps, err := t.postings(key)
	ids := make([]string, len(ps))
	for i, p := range ps {
		ids[i] = p.id
	}
	return ids, err
}

func idBytes(id string) ([]byte, error) {
	u, err := uuid.Parse(id)
	if err != nil {
		return nil, fault.Wrap(fault.StoreMalformed, err, "a drawer id is not a UUID", "report this as a bug")
	}
	return u[:], nil
}

func (t *tx) addPosting(key []byte, id string, n int) error {
	return t.addPostingCapped(key, id, n, 0)
}

// addPostingCapped adds id to the list unless the list already holds max
// entries (0: no cap).
func (t *tx) addPostingCapped(key []byte, id string, n, max int) error {
	b, err := idBytes(id)
	if err != nil {
		return err
	}
	raw, err := t.rawPostings(key)
	if err != nil {
		return err
	}
	if max > 0 && len(raw)/postingSize >= max {
		return nil
	}
	for i := 0; i+postingSize <= len(raw); i += postingSize {
		if string(raw[i:i+16]) == string(b) {
			return nil
		}
	}
	var nb [4]byte
	binary.BigEndian.PutUint32(nb[:], uint32(n))
	out := make([]byte, 0, len(raw)+postingSize)
	out = append(append(append(out, raw...), b...), nb[:]...)
	return t.setPostings(key, out)
}

func (t *tx) removePosting(key []byte, id string) error {
	b, err := idBytes(id)
	if err != nil {
		return err
	}
	raw, err := t.rawPostings(key)
	if err != nil || raw == nil {
		return err
	}
	out := make([]byte, 0, len(raw))
	for i := 0; i+postingSize <= len(raw); i += postingSize {
		if string(raw[i:i+16]) != string(b) {
			out = append(out, raw[i:i+postingSize]...)
		}
	}
	return t.setPostings(key, out)
}
