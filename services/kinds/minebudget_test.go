package kinds

import (
	"fmt"
	"strings"
	"testing"
)

// A file of about the default max_file_bytes (2 MiB) is filed in one
// transaction with dedup on, plain text or markup: Badger bounds a
// transaction at 15 % of its memtable (badgerdb.MemTableSize). With 16 MB
// memtables the text was skipped; with 32 MB the markup was, while records
// escaped <, > and & to six bytes each.
func TestMineFilesABigFileWithDedupWithinTheMemtableBudget(t *testing.T) {
	for _, c := range []struct{ name, line string }{
		{"big.txt", "line %d of a big file, river %d stone %d\n"},
		{"big.xml", "<row id=\"%d\"><a href=\"x&y\">river %d</a><b>stone %d</b></row>\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			j := mineRuntime(t, 0, 6000, 2<<20)
			if !j.Palace.Dedup.Enabled {
				t.Fatal("dedup is off in the mining runtime; this test is about dedup's records")
			}
			root := t.TempDir()
			var big strings.Builder
			for i := 0; big.Len() < 1990<<10; i++ {
				fmt.Fprintf(&big, c.line, i, i*17, i*7907)
			}
			write(t, root, c.name, big.String(), 1)
			res := mineOnce(t, j, `{"path":"`+root+`","wing":"w"}`)
			if res.Documents != 1 || res.Skipped != 0 || res.Ingested != 1 || res.Created < 300 {
				t.Fatalf("%+v", res)
			}
		})
	}
}
