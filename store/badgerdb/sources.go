package badgerdb

import (
	"github.com/loci-dev/loci/store"
)

// Source keys:
//
//	src/<source key>            the source's state (cursor, last job and run)
//	sd/<source key>/<document>  a document's filed revision and chunks
const (
	pSource    = "src/"
	pSourceDoc = "sd/"
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
	t.keys(k(pSource), false, func(_ []byte, val valueFn) bool {
		var r sourceRecord
		if err = withVal(val, func(b []byte) error { return decode(b, &r) }); err != nil {
			return false
		}
		return fn(r.state())
	})
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
	t.keys(k(pSourceDoc, source, "/"), false, func([]byte, valueFn) bool { n++; return true })
	return n, nil
}

func (t *tx) PutSource(s *store.SourceState) error {
	return t.put(k(pSource, s.Key), sourceRec(s))
}

func (t *tx) PutSourceDocument(d *store.DocumentState) error {
	return t.put(k(pSourceDoc, d.Source, "/", d.ID), documentRec(d))
}
