package kinds

import (
	"context"

	"github.com/loci-dev/loci/actors"
	"github.com/loci-dev/loci/store/fault"
)

// extractParams are an extract submission's fields.
type extractParams struct {
	Wing string `json:"wing,omitempty" jsonschema:"only this wing (name or UUID)"`
}

// Extract is the extract kind: entities and facts read from drawers into
// the knowledge graph. It is refused until an extraction provider exists.
func Extract() actors.Kind {
	return actors.Define(KindExtract, actors.Spec[extractParams]{
		Background: true,
		Decode: func(context.Context, actors.Submission, extractParams) (actors.Plan, error) {
			return actors.Plan{}, fault.New(fault.ExtractNotConfigured, "extract jobs need an extraction provider, and none is configured",
				"extraction arrives with the knowledge graph")
		},
	})
}
