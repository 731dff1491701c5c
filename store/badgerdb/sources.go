package badgerdb

import (
	"github.com/loci-dev/loci/store"
)

// Source keys (a state is a source mined into a wing, its key
// store.TargetKey):
//
//	src/<state key>             the state (source, wing, cursor, last job and run)
//	sd/<state key>/<document>   a document's filed revision and chunks
//	sdo/<drawer>                the state and document a drawer was filed as a chunk of
//	sds/<state key>/<document>  a document whose drawers were deleted: to file again
const (
	pSource      = "src/"
	pSourceDoc   = "sd/"
	pChunkOwner  = "sdo/"
	pStaleSource = "sds/"
)

func (t *tx) Source(key string) (*store.SourceState, error) {
	var r sourceRecord
	ok, err := t.get(k(pSource, key), &r)
	if !ok || err != nil {
		return nil, err
	}
	return r.state(), nil
}

func (t *tx) Sources(fn func(*store.SourceState) bool) error {
	var err error
	if cerr := t.keys(k(pSource), false, func(_ []byte, val valueFn) bool {
		var r sourceRecord
		if err = withVal(val, func(b []byte) error { return decode(b, &r) }); err != nil {
			return false
		}
		return fn(r.state())
	}); cerr != nil {
		return cerr
	}
	return err
}

func (t *tx) SourceDocument(source, id string) (*store.DocumentState, error) {
	var r documentRecord
	ok, err := t.get(k(pSourceDoc, source, "/", id), &r)
	if !ok || err != nil {
		return nil, err
	}
	return r.state(), nil
}

func (t *tx) CountSourceDocuments(source string) (int, error) {
	n := 0
	if cerr := t.keys(k(pSourceDoc, source, "/"), false, func([]byte, valueFn) bool { n++; return true }); cerr != nil {
		return 0, cerr
	}
	return n, nil
}

func (t *tx) PutSource(s *store.SourceState) error {
	return t.put(k(pSource, s.Key), sourceRec(s))
}

func (t *tx) PutSourceDocument(d *store.DocumentState) error {
	return t.put(k(pSourceDoc, d.Source, "/", d.ID), documentRec(d))
}

func (t *tx) SourceDocuments(source string, fn func(*store.DocumentState) bool) error {
	var err error
	if cerr := t.keys(k(pSourceDoc, source, "/"), false, func(_ []byte, val valueFn) bool {
		var r documentRecord
		if err = withVal(val, func(b []byte) error { return decode(b, &r) }); err != nil {
			return false
		}
		return fn(r.state())
	}); cerr != nil {
		return cerr
	}
	return err
}

func (t *tx) ChunkOwner(drawer string) (string, string, error) {
	var r chunkOwnerRecord
	ok, err := t.get(k(pChunkOwner, drawer), &r)
	if !ok || err != nil {
		return "", "", err
	}
	return r.Source, r.Doc, nil
}

func (t *tx) StaleDocuments(source string, fn func(doc string) bool) error {
	prefix := k(pStaleSource, source, "/")
	if cerr := t.keys(prefix, false, func(key []byte, _ valueFn) bool {
		return fn(string(key[len(prefix):]))
	}); cerr != nil {
		return cerr
	}
	return nil
}

func (t *tx) DeleteSource(key string) error { return t.del(k(pSource, key)) }

func (t *tx) DeleteSourceDocument(source, id string) error {
	return t.del(k(pSourceDoc, source, "/", id))
}

func (t *tx) PutChunkOwner(drawer, source, doc string) error {
	return t.put(k(pChunkOwner, drawer), &chunkOwnerRecord{Source: source, Doc: doc})
}

func (t *tx) DeleteChunkOwner(drawer string) error { return t.del(k(pChunkOwner, drawer)) }

func (t *tx) PutStaleDocument(source, doc string) error {
	return t.set(k(pStaleSource, source, "/", doc), nil)
}

func (t *tx) DeleteStaleDocument(source, doc string) error {
	return t.del(k(pStaleSource, source, "/", doc))
}
