package store

import (
	"encoding/json"
	"testing"
)

// A mined chunk says its document and number (from 1) from its origin,
// whatever else the origin holds; anything else says nothing.
func TestChunkPlace(t *testing.T) {
	for _, c := range []struct {
		src   Source
		doc   string
		chunk int
	}{
		{Source{Kind: KindFile, URI: "/r/docs/a.md", Origin: json.RawMessage(`{"path":"docs/a.md","mode":"0644","chunk":2}`)}, "docs/a.md", 3},
		{Source{Kind: KindFile, URI: "/r/a.md", Origin: json.RawMessage(`{"chunk":0,"redacted":[{"kind":"x"}]}`)}, "/r/a.md", 1},
		{Source{Kind: KindFile, URI: "/r/a.md", Origin: json.RawMessage(`{"path":"a.md"}`)}, "", 0},
		{Source{Kind: "note"}, "", 0},
		{Source{Kind: "note", Origin: json.RawMessage(`"not an object"`)}, "", 0},
		{Source{Kind: "note", Origin: json.RawMessage(`{"chunk":-1}`)}, "", 0},
	} {
		t.Run(string(c.src.Kind)+" "+string(c.src.Origin), func(t *testing.T) {
			if doc, chunk := ChunkPlace(c.src); doc != c.doc || chunk != c.chunk {
				t.Errorf("%s: %q %d, want %q %d", c.src.Origin, doc, chunk, c.doc, c.chunk)
			}
		})
	}
}
