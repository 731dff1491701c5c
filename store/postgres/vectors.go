package postgres

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/store"
)

// The vector family (schema/15_vectors.sql): one row per drawer and
// profile. The vector is a bytea of little-endian float32s (4 bytes a
// dimension, read back exactly, one copy to decode) beside rec, the
// embedding's record without its vector: a JSON array of floats would
// take 3 to 4 times the room and a parse per number, and real[] 8 bytes a
// dimension on the wire (a length before each element). DeleteDrawer
// (palace.go) deletes a drawer's rows with it.

// The reads' statements (explained in schema_test.go).
const (
	qEmbedding  = "SELECT rec, vector FROM embeddings WHERE profile = $1 AND drawer_id = $2"
	qEmbeddings = "SELECT drawer_id, rec, vector FROM embeddings WHERE profile = $1 AND drawer_id > $2 ORDER BY drawer_id LIMIT $3"
)

// vectorBytes is a vector as stored.
func vectorBytes(v []float32) []byte {
	out := make([]byte, 0, 4*len(v))
	for _, f := range v {
		out = binary.LittleEndian.AppendUint32(out, math.Float32bits(f))
	}
	return out
}

// decEmbedding is an embeddings row as the store's record.
func decEmbedding(rec, vec []byte) (*store.Embedding, error) {
	e := new(store.Embedding)
	if err := dec(rec, e); err != nil {
		return nil, err
	}
	if len(vec)%4 != 0 {
		return nil, fault.Wrap(fault.StoreMalformed, fmt.Errorf("a vector of %d bytes", len(vec)), "a stored vector does not decode",
			"the database was changed by something other than loci; restore it from a backup")
	}
	e.Vector = make([]float32, len(vec)/4)
	for i := range e.Vector {
		e.Vector[i] = math.Float32frombits(binary.LittleEndian.Uint32(vec[4*i:]))
	}
	return e, nil
}

// Embedding is a drawer's vector in a profile; nil when it has none.
func (t *tx) Embedding(drawerID, profile string) (*store.Embedding, error) {
	var rec, vec []byte
	ok, err := t.row(qEmbedding, []any{profile, drawerID}, &rec, &vec)
	if err != nil || !ok {
		return nil, err
	}
	return decEmbedding(rec, vec)
}

// Embeddings visits every vector of a profile by drawer id, a page at a
// time (a range scan of the primary key), until fn returns false.
func (t *tx) Embeddings(profile string, fn func(*store.Embedding) bool) error {
	type row struct {
		drawer   string
		rec, vec []byte
	}
	return pages(t, palacePages, func(last *row, limit int) (string, []any) {
		after := ""
		if last != nil {
			after = last.drawer
		}
		return qEmbeddings, []any{profile, after, limit}
	}, func(x *row) []any { return []any{&x.drawer, &x.rec, &x.vec} }, func(x *row) (bool, error) {
		e, err := decEmbedding(x.rec, x.vec)
		if err != nil {
			return false, err
		}
		return fn(e), nil
	})
}

// PutEmbedding stores a drawer's vector in a profile (replacing one) and
// logs it, as the embedded store does: the daemons' vector indexes follow
// the log.
func (t *tx) PutEmbedding(e *store.Embedding) error {
	meta := *e
	meta.Vector = nil
	rec, err := enc(&meta)
	if err != nil {
		return err
	}
	if err := t.exec(`INSERT INTO embeddings(profile, drawer_id, vector, rec) VALUES ($1, $2, $3, $4)
		ON CONFLICT (profile, drawer_id) DO UPDATE SET vector = EXCLUDED.vector, rec = EXCLUDED.rec`,
		e.Profile, e.DrawerID, vectorBytes(e.Vector), rec); err != nil {
		return err
	}
	return t.Log(store.ChangeEmbedding, store.ActionCreated, e.Profile+"/"+e.DrawerID)
}
