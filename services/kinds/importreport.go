package kinds

import (
	"fmt"
	"slices"
	"strings"

	"github.com/loci-dev/loci/export"
	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/store"
)

// What an import report counts, kept apart from the import kind's
// machinery (import.go).

// countedRecord is 1 for a record an import report counts in Records:
// every record before the end record, the header included; the same
// count as the end record's "records" (what `loci export` reports), so
// that an export and its import say the same number.
func countedRecord(rec export.Record) int64 {
	if rec.End != nil {
		return 0
	}
	return 1
}

// countedRecords is countedRecord summed over a batch.
func countedRecords(batch []export.Record) int64 {
	var n int64
	for _, rec := range batch {
		n += countedRecord(rec)
	}
	return n
}

// skippedUnknown is the outcome of a record of a type this version does
// not know, read with --skip-unknown: skipped, with why.
func skippedUnknown(rec export.Record) store.Imported {
	return store.Imported{Outcome: store.ImportSkipped,
		Reason: fmt.Sprintf("unknown record type %q (written by a newer loci, or altered), skipped by --skip-unknown", rec.Type)}
}

// maxWingsNamed bounds the file's wings an error lists.
const maxWingsNamed = 20

// checkWingMap refuses a --wing-map whose FROM names no wing of the file
// (read whole by rd): a mistyped name would otherwise be ignored.
func checkWingMap(rd *export.Reader, wingMap map[string]string) error {
	var missing []string
	for from := range wingMap {
		if !rd.HasWing(from) {
			missing = append(missing, fmt.Sprintf("%q", fault.Clip(from, fault.MaxQuoted)))
		}
	}
	if len(missing) == 0 {
		return nil
	}
	slices.Sort(missing)
	held := rd.WingNames(maxWingsNamed)
	list := "none"
	if len(held) > 0 {
		q := make([]string, len(held))
		for i, n := range held {
			q[i] = fmt.Sprintf("%q", fault.Clip(n, fault.MaxQuoted))
		}
		list = strings.Join(q, ", ")
	}
	return fault.Newf(fault.InputInvalid,
		fmt.Sprintf("give --wing-map FROM=TO with FROM a wing of the file (its wings: %s); nothing was imported", list),
		"wing_map: the file holds no wing %s", strings.Join(missing, ", "))
}
