package api

import "encoding/json"

// ImportReport is what an import changed (an import job's result) or
// would change (POST /api/imports?dry_run=true): per record type, how many
// records were created, left unchanged, updated, merged, in conflict,
// duplicates or skipped, and the first conflicts and skipped records.
type ImportReport struct {
	// DryRun: nothing was changed; the counts say what an import would do.
	DryRun bool `json:"dry_run"`
	// Records counts the file's records before its end record, the
	// header included: the end record's own count, the number `loci
	// export` reports for the file.
	Records int64 `json:"records"`
	// Totals sums Types.
	Totals ImportCounts `json:"totals"`
	// Types are the counts per record type (wing, room, drawer, ...).
	Types map[string]ImportCounts `json:"types"`
	// Conflicts are the first records whose id holds another record in
	// the palace (never overwritten), at most MaxImportIssues.
	Conflicts []ImportIssue `json:"conflicts"`
	// Skipped are the first records left out, with why (a vector of
	// another embedding profile, a record of an unknown type with
	// skip_unknown), at most MaxImportIssues.
	Skipped []ImportIssue `json:"skipped"`
	// Notes say what the request's options do to this palace (a
	// --wing-map onto a wing the palace holds: merged into it), in a dry
	// run's report and the job's.
	Notes []string `json:"notes,omitempty"`
}

// MarshalJSON writes the report with its lists and table always present
// ([] and {} when empty, never null).
func (r ImportReport) MarshalJSON() ([]byte, error) {
	type plain ImportReport
	p := plain(r)
	if p.Types == nil {
		p.Types = map[string]ImportCounts{}
	}
	if p.Conflicts == nil {
		p.Conflicts = []ImportIssue{}
	}
	if p.Skipped == nil {
		p.Skipped = []ImportIssue{}
	}
	return json.Marshal(p)
}

// MaxImportIssues bounds the conflicts and skipped records an import
// report lists (their counts are complete).
const MaxImportIssues = 100

// ImportCounts are the outcomes of one type of record.
type ImportCounts struct {
	Created   int `json:"created"`
	Unchanged int `json:"unchanged"`
	// Updated: a drawer closed as the file shows it (superseded since an
	// earlier import), an entity's aliases added.
	Updated int `json:"updated"`
	// Merged: a wing, room or entity of the same name under another id
	// took the record.
	Merged    int `json:"merged"`
	Conflicts int `json:"conflicts"`
	// Duplicates: drawers the palace's duplicate rules do not store.
	Duplicates int `json:"duplicates"`
	// Similar counts the similar_to links the created drawers made.
	Similar int `json:"similar"`
	Skipped int `json:"skipped"`
}

// ImportIssue is one record in conflict or skipped: its line in the file,
// its type and id, and why.
type ImportIssue struct {
	Line   int64  `json:"line"`
	Type   string `json:"type"`
	ID     string `json:"id,omitempty"`
	Reason string `json:"reason"`
}
