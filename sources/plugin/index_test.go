package plugin

import (
	"testing"

	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/sources/pack"
)

// TestIndexInfo: a plugin archive's index entry is its manifest's id,
// version, description and loci requirement with its modules' highest
// contract, and it indexes with pack.BuildIndexWith; an archive that is
// not a plugin is Read's error.
func TestIndexInfo(t *testing.T) {
	raw := archive(t, goodEntries())
	info, err := IndexInfo(raw)
	if err != nil {
		t.Fatal(err)
	}
	p := readGood(t)
	if info.ID != p.Manifest.ID || info.Version != p.Manifest.Version || info.Description != p.Manifest.Description ||
		info.Loci != p.Manifest.Loci || info.Contract != 1 {
		t.Fatalf("IndexInfo = %+v, manifest %+v", info, p.Manifest)
	}
	ix, err := pack.BuildIndexWith([]pack.IndexArchive{{File: "plugins/p.tar.gz", Bytes: raw}}, pack.IndexOptions{Plugin: IndexInfo})
	if err != nil || len(ix.Plugins) != 1 || ix.Plugins[0].ID != p.Manifest.ID || len(ix.Sources) != 0 {
		t.Fatalf("BuildIndexWith: %v %s", err, ix.Marshal())
	}
	if _, err := IndexInfo([]byte("not a plugin")); !fault.Is(err, fault.InputInvalid) {
		t.Fatalf("IndexInfo of junk = %v", err)
	}
}
