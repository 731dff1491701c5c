// Package kinds holds loci's job kinds, one file each: what a submission of
// the kind may carry and how it is checked, its priority and limits, the
// MCP tool that submits it, and the handler that runs it on the runtime of
// package actors.
//
// To add a kind: write a file with a function returning actors.Define(name,
// actors.Spec[params]{...}), and list it in All. The runtime, POST
// /api/jobs, the job list's kind filter, the palace::busy guard and the MCP
// tools find it there. A kind that runs after others declares it in its
// own Follow (extract after mine, embed after any kind that Files).
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

// Settings is what the kinds need of the daemon besides the runtime they
// are registered with: the settings they read and the providers they
// call, never a whole service.
type Settings struct {
	// Dedup is the palace's duplicate rules, which the kinds that file
	// drawers apply.
	Dedup store.Dedup
	// Mining is the mine kind's sources and settings.
	Mining Mining
	// Vectors are the embedding profiles' indexes (nil: none configured).
	Vectors *actors.Vectors
	// Extractor is the extraction provider (nil: none configured).
	Extractor extract.Extractor
	// Backup is where the backup kind writes and how many it keeps.
	Backup BackupSettings
	// Imports is the folder the import kind reads its spooled files
	// from (<palace>/imports).
	Imports string
}

// All is every kind, in the order messages list them. j is the runtime
// they are registered with: the store they read, and the queue the kinds
// that follow others submit to.
func All(j *actors.Jobs, s Settings) []actors.Kind {
	m := s.Mining
	if m.DB == nil {
		m.DB = j.DB
	}
	m.Dedup = s.Dedup
	return []actors.Kind{Checkpoint(j.DB, s.Dedup), Audit(j.DB, s.Vectors), Repair(j.DB), Demo(s.Dedup), Mine(m),
		Embed(j, s.Vectors), Extract(j, s.Extractor, s.Dedup.EntityFuzzy), Backup(j.DB, s.Backup),
		Import(s.Imports, s.Dedup, s.Vectors)}
}

// always is Writes for a kind whose jobs always write drawers.
func always(func() json.RawMessage) bool { return true }

// checkWing checks a submission's optional wing: an unknown one is
// palace::wing_not_found.
func checkWing(ctx context.Context, db store.DB, wing string) error {
	if wing == "" {
		return nil
	}
	return db.View(ctx, func(r store.Reader) error { _, err := optionalWing(r, wing); return err })
}

// optionalWing resolves a job's optional wing to its id ("" when none is
// given); an unknown wing is palace::wing_not_found.
func optionalWing(r store.Reader, ref string) (string, error) {
	if ref == "" {
		return "", nil
	}
	w, err := store.FindWing(r, ref)
	if err != nil {
		return "", err
	}
	return w.ID, nil
}
