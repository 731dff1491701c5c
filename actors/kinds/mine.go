package kinds

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/loci-dev/loci/actors"
	"github.com/loci-dev/loci/store"
	"github.com/loci-dev/loci/store/fault"
)

// mineParams are a mine submission's fields.
type mineParams struct {
	Path    string            `json:"path,omitempty" jsonschema:"absolute path of a directory or file (or give source)"`
	Source  string            `json:"source,omitempty" jsonschema:"an installed source (or give path)"`
	Locator string            `json:"locator,omitempty" jsonschema:"what the source should read"`
	Options map[string]string `json:"options,omitempty" jsonschema:"source options"`
	Full    bool              `json:"full,omitempty" jsonschema:"re-read everything, not only changes"`
	Wing    string            `json:"wing,omitempty" jsonschema:"wing to file into"`
}

// Mine is the mine kind: read a directory or a source into drawers. Its
// submission is checked; it is refused as not available until mining
// ships.
func Mine() actors.Kind {
	return actors.Define(KindMine, actors.Spec[mineParams]{
		Background: true,
		Files:      true,
		Abortable:  true,
		Writes:     always,
		Tool: &actors.Tool{Name: "loci_mine", Description: "Submit a mine job for a directory (absolute path) or an installed source; returns the job at once.",
			Idempotent: true, OpenWorld: true},
		Decode: func(_ context.Context, s actors.Submission, p mineParams) (actors.Plan, error) {
			if (p.Source == "") == (p.Path == "") {
				return actors.Plan{}, fault.Invalid("path", "give exactly one of path or source")
			}
			if p.Path != "" && !filepath.IsAbs(p.Path) {
				return actors.Plan{}, fault.Invalid("path", fmt.Sprintf("%q is relative; an absolute path is required", p.Path))
			}
			return actors.Plan{}, fault.New(fault.InputInvalid, "mining is not available in this version of loci",
				"mine jobs arrive in a later version; "+fileInstead(s.Channel))
		},
	})
}

// fileInstead says how to file a drawer meanwhile, in the terms of the
// channel the caller used.
func fileInstead(channel string) string {
	switch channel {
	case store.ByMCP:
		return "file memories with loci_checkpoint meanwhile"
	case store.ByCLI:
		return "file drawers with loci drawer add meanwhile"
	}
	return "file drawers with POST /api/wings/{wing}/rooms/{room}/drawers meanwhile"
}
