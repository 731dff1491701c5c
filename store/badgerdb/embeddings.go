package badgerdb

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"

	"github.com/loci-dev/loci/store"
)

// Vector keys:
//
//	e/<profile>\0<drawer>   4-byte length of the JSON identity, the identity, then float32s (little endian)
//	ed/<drawer>/<profile>   the drawer's vectors, to delete them with it
const (
	pEmbed       = "e/"
	pDrawerEmbed = "ed/"
)

func embedKey(profile, drawer string) []byte { return k(pEmbed, profile, "\x00", drawer) }

func encodeEmbedding(e *store.Embedding) ([]byte, error) {
	meta, err := json.Marshal(embeddingMeta{DrawerID: e.DrawerID, Profile: e.Profile, Provider: e.Provider,
		Model: e.Model, Dimension: e.Dimension, Pipeline: e.Pipeline, CreatedAt: e.CreatedAt})
	if err != nil {
		return nil, err
	}
	out := make([]byte, 4, 4+len(meta)+4*len(e.Vector))
	binary.LittleEndian.PutUint32(out, uint32(len(meta)))
	out = append(out, meta...)
	for _, v := range e.Vector {
		out = binary.LittleEndian.AppendUint32(out, math.Float32bits(v))
	}
	return out, nil
}

func decodeEmbedding(raw []byte) (*store.Embedding, error) {
	if len(raw) < 4 {
		return nil, errors.New("short embedding record")
	}
	n := int(binary.LittleEndian.Uint32(raw))
	if len(raw) < 4+n || (len(raw)-4-n)%4 != 0 {
		return nil, errors.New("malformed embedding record")
	}
	var m embeddingMeta
	if err := json.Unmarshal(raw[4:4+n], &m); err != nil {
		return nil, err
	}
	e := store.Embedding{DrawerID: m.DrawerID, Profile: m.Profile, Provider: m.Provider, Model: m.Model,
		Dimension: m.Dimension, Pipeline: m.Pipeline, CreatedAt: m.CreatedAt}
	vec := raw[4+n:]
	e.Vector = make([]float32, len(vec)/4)
	for i := range e.Vector {
		e.Vector[i] = math.Float32frombits(binary.LittleEndian.Uint32(vec[4*i:]))
	}
	return &e, nil
}

func (t *tx) PutEmbedding(e *store.Embedding) error {
	raw, err := encodeEmbedding(e)
	if err != nil {
		return err
	}
	if err := t.set(embedKey(e.Profile, e.DrawerID), raw); err != nil {
		return err
	}
	if err := t.set(k(pDrawerEmbed, e.DrawerID, "/", e.Profile), nil); err != nil {
		return err
	}
	return t.Log(store.ChangeEmbedding, store.ActionCreated, e.Profile+"/"+e.DrawerID)
}

func (t *tx) Embedding(drawerID, profile string) (*store.Embedding, error) {
	raw, err := t.getRaw(embedKey(profile, drawerID))
	if err != nil || raw == nil {
		return nil, err
	}
	return decodeEmbedding(raw)
}

func (t *tx) Embeddings(profile string, fn func(*store.Embedding) bool) error {
	var err error
	if cerr := t.keys(k(pEmbed, profile, "\x00"), false, func(_ []byte, val valueFn) bool {
		var raw []byte
		if raw, err = val(); err != nil {
			return false
		}
		var e *store.Embedding
		if e, err = decodeEmbedding(raw); err != nil {
			return false
		}
		return fn(e)
	}); cerr != nil {
		return cerr
	}
	return err
}

// deleteEmbeddings removes a drawer's vectors (with the drawer).
func (t *tx) deleteEmbeddings(drawerID string) error {
	profiles, err := t.idsUnder(k(pDrawerEmbed, drawerID, "/"))
	if err != nil {
		return err
	}
	for _, p := range profiles {
		if err := t.del(embedKey(p, drawerID)); err != nil {
			return err
		}
		if err := t.del(k(pDrawerEmbed, drawerID, "/", p)); err != nil {
			return err
		}
	}
	return nil
}
