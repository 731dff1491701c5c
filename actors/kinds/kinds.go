// Package kinds holds loci's job kinds, one file each: what a submission of
// the kind may carry and how it is checked, its priority and limits, the
// MCP tool that submits it, and the handler that runs it on the runtime of
// package actors.
//
// To add a kind: write a file with a function returning actors.Define(name,
// actors.Spec[params]{...}), and list it in All. The runtime, POST
// /api/jobs, the job list's kind filter, the palace::busy guard and the MCP
// tools find it there.
package kinds

import (
	"context"
	"encoding/json"

	"github.com/loci-dev/loci/actors"
	"github.com/loci-dev/loci/extract"
	"github.com/loci-dev/loci/store"
)

// Kind names.
const (
	KindCheckpoint = "checkpoint"
	KindAudit      = "audit"
	KindRepair     = "repair"
	KindDemo       = "demo"
	KindMine       = "mine"
	KindEmbed      = "embed"
	KindExtract    = "extract"
)

// All is every kind, in the order messages list them. j is the runtime
// they are registered with; x the extraction provider (nil: none).
func All(j *actors.Jobs, m Mining, x extract.Extractor) []actors.Kind {
	if m.DB == nil {
		m.DB = j.DB
	}
	return []actors.Kind{Checkpoint(j), Audit(j), Repair(j), Demo(), Mine(m), Embed(j), Extract(j, x)}
}

// always is Writes for a kind whose jobs always write drawers.
func always(func() json.RawMessage) bool { return true }

// checkWing checks a submission's optional wing: an unknown one is
// palace::wing_not_found.
func checkWing(ctx context.Context, db store.DB, wing string) error {
	if wing == "" {
		return nil
	}
	return db.View(ctx, func(r store.Reader) error { _, err := actors.OptionalWing(r, wing); return err })
}
