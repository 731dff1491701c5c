package store

import "encoding/json"

// ChunkPlace says where a mined drawer sits in its document, from its
// source's origin: the document's path (the origin's path, else the
// source's URI) and the chunk's number counted from 1. A drawer that is
// not a mined chunk (no chunk index in its origin) has neither. Every
// mined drawer's origin has carried both since mining was built, so old
// palaces need no migration.
func ChunkPlace(s Source) (document string, chunk int) {
	if len(s.Origin) == 0 {
		return "", 0
	}
	var o struct {
		Path  string `json:"path"`
		Chunk *int   `json:"chunk"`
	}
	if json.Unmarshal(s.Origin, &o) != nil || o.Chunk == nil || *o.Chunk < 0 {
		return "", 0
	}
	document = o.Path
	if document == "" {
		document = s.URI
	}
	return document, *o.Chunk + 1
}
