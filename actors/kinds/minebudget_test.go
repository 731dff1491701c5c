package kinds

import (
	"fmt"
	"strings"
	"testing"
)

// A file of the default max_file_bytes (2 MiB) is filed in one
// transaction with dedup on: Badger bounds a transaction at 15 % of its
// memtable (badgerdb.MemTableSize), and a memtable of 16 MB skipped it.
func TestMineFilesABigFileWithDedupWithinTheMemtableBudget(t *testing.T) {
	j := mineRuntime(t, 0, 6000, 2<<20)
	if !j.Palace.Dedup.Enabled {
		t.Fatal("dedup is off in the mining runtime; this test is about dedup's records")
	}
	root := t.TempDir()
	var big strings.Builder
	for i := 0; big.Len() < 1900<<10; i++ {
		fmt.Fprintf(&big, "line %d of a big file, river %d stone %d\n", i, i*17, i*7907)
	}
	write(t, root, "big.txt", big.String(), 1)
	res := mineOnce(t, j, `{"path":"`+root+`","wing":"w"}`)
	if res.Documents != 1 || res.Skipped != 0 || res.Ingested != 1 || res.Created < 300 {
		t.Fatalf("%+v", res)
	}
}
