package backup

import (
	"strings"
	"testing"

	"github.com/loci-dev/loci/fault"
)

// Each way a chain of files goes wrong has its own message naming the
// files: the same file twice, files out of order, overlapping
// incrementals, two full backups and a real gap (all under
// loci::backup::gap: the code may stay, the words may not).
func TestChainErrorsSayWhatIsWrong(t *testing.T) {
	const pal = "0b6f4c1e-6a1d-4c5e-9a49-1f3c2d4e5f60"
	hd := func(since, to uint64, digest string) Header {
		return Header{PalaceID: pal, Backend: "badger", Since: since, StoreVersion: to, HeaderDigest: digest}
	}
	files := map[string]Header{
		"full1":    hd(0, 122, "d-full1"),
		"full2":    hd(0, 130, "d-full2"),
		"inc1":     hd(122, 175, "d-inc1"),
		"inc1copy": hd(122, 175, "d-inc1"),
		"inc2":     hd(175, 181, "d-inc2"),
		"inc3":     hd(181, 186, "d-inc3"),
		"a4":       hd(186, 191, "d-a4"),
		"fork":     hd(186, 192, "d-fork"),
		"late":     hd(181, 190, "d-late"),
		"old":      hd(122, 170, "d-old"),
	}
	tests := []struct {
		name  string
		chain []string
		want  []string
	}{
		{"whole", []string{"full1", "inc1", "inc2", "inc3", "a4"}, nil},
		{"the same file twice", []string{"full1", "inc1", "inc1"}, []string{"inc1: it is given twice (the 2nd and 3rd file)"}},
		{"the same backup under two names", []string{"full1", "inc1", "inc1copy"}, []string{"inc1copy: it is the same backup as inc1 (given twice)"}},
		{"out of order", []string{"full1", "inc2", "inc1", "inc3"}, []string{"the files are out of order", "inc2", "inc1 (since store version 122) comes first"}},
		{"an earlier one after a later one", []string{"full1", "inc1", "inc2", "inc3", "old"}, []string{"old: it reaches store version 170, which inc3 already passed (186)", "out of order"}},
		{"overlapping incrementals", []string{"full1", "inc1", "inc2", "inc3", "a4", "fork"}, []string{"fork: it starts at store version 186, before a4 ends (191): the two incrementals overlap", "both since 186"}},
		{"overlapping, other starts", []string{"full1", "inc1", "inc2", "inc3", "late"}, []string{"late: it starts at store version 181, before inc3 ends (186): the two incrementals overlap"}},
		{"two full backups", []string{"full1", "inc1", "full2"}, []string{"full2: it is a second full backup (full1 is the first)"}},
		{"an incremental first", []string{"inc1", "full1"}, []string{"inc1: the first file is an incremental backup", "full1 is a full backup: give it first"}},
		{"a real gap", []string{"full1", "inc2"}, []string{"inc2: it starts at store version 175, but full1 reaches only 122: the incrementals from 122 to 175 are missing"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hs := make([]Header, len(tt.chain))
			for i, n := range tt.chain {
				hs[i] = files[n]
			}
			err := Chain(tt.chain, hs)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("a whole chain refused: %v", err)
				}
				return
			}
			e := fault.As(err)
			if err == nil || e.Code != fault.BackupGap {
				t.Fatalf("%v, want loci::backup::gap", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(e.Msg, w) {
					t.Fatalf("message %q lacks %q", e.Msg, w)
				}
			}
			if tt.name != "a real gap" && strings.Contains(e.Msg, "gap") {
				t.Fatalf("message %q calls it a gap", e.Msg)
			}
		})
	}
}

// Counts read with their plurals ("1 wing", never "1 wings").
func TestCountsReadWithPlurals(t *testing.T) {
	if got := (Counts{Wings: 1, Rooms: 2, Drawers: 1}).String(); got != "1 wing, 2 rooms, 1 drawer" {
		t.Fatalf("%q", got)
	}
	if got := (Counts{}).String(); got != "0 wings, 0 rooms, 0 drawers" {
		t.Fatalf("%q", got)
	}
}
