package export

import (
	"slices"
	"time"

	"github.com/loci-dev/loci/store"
)

// The conversions below give the store's record of each export record, as
// the exporting palace held it: the one mapping an importer uses, kept
// beside the one Write uses (a round trip test holds them together).

// Store is the wing's store record.
func (w *Wing) Store() *store.Wing {
	return &store.Wing{ID: w.ID, Name: w.Name, Description: w.Description, CreatedAt: w.CreatedAt}
}

// Store is the room's store record.
func (r *Room) Store() *store.Room {
	return &store.Room{ID: r.ID, WingID: r.WingID, Name: r.Name, Description: r.Description, CreatedAt: r.CreatedAt}
}

// Store is the drawer's store record.
func (d *Drawer) Store() *store.Drawer {
	return &store.Drawer{ID: d.ID, WingID: d.WingID, RoomID: d.RoomID, Name: d.Name, Content: d.Content, Tags: slices.Clone(d.Tags),
		Source:     store.Source{Kind: d.Source.Kind, URI: d.Source.URI, Agent: d.Source.Agent, Origin: slices.Clone(d.Source.Origin)},
		Provenance: store.Provenance{RequestedBy: d.Provenance.RequestedBy, JobID: d.Provenance.JobID},
		ValidFrom:  d.ValidFrom, ValidTo: timep(d.ValidTo), CreatedAt: d.CreatedAt, SupersededBy: d.SupersededBy, Supersedes: d.Supersedes, Diary: d.Diary}
}

// Store is the mention's store record.
func (m *Mention) Store() *store.Mention {
	return &store.Mention{Drawer: m.DrawerID, Entity: m.EntityID, Name: m.Name, Rule: m.Rule, Confidence: m.Confidence,
		Extractor: m.Extractor, Origin: m.Origin, CreatedAt: m.CreatedAt}
}

// Store is the vector's store record.
func (v *Vector) Store() *store.Embedding {
	return &store.Embedding{DrawerID: v.DrawerID, Profile: v.Profile, Provider: v.Provider, Model: v.Model, Dimension: v.Dimension,
		Pipeline: v.Pipeline, CreatedAt: v.CreatedAt, Vector: slices.Clone(v.Vector)}
}

// Store is the entity's store record.
func (e *Entity) Store() *store.Entity {
	return &store.Entity{ID: e.ID, Name: e.Name, Kind: e.Kind, Key: e.Key, Aliases: slices.Clone(e.Aliases), CreatedAt: e.CreatedAt}
}

// Store is the entity link's store record.
func (l *EntityLink) Store() *store.EntityLink {
	return &store.EntityLink{ID: l.ID, From: l.From, To: l.To, Kind: l.Kind, CreatedAt: l.CreatedAt}
}

// Store is the source's store record, without a cursor (never exported):
// the next mine reads the source from its start.
func (s *SourceState) Store() *store.SourceState {
	return &store.SourceState{Key: s.Key, Identity: store.SourceIdentity{Adapter: s.Adapter, Account: s.Account, Locator: s.Locator},
		WingID: s.WingID, Documents: s.Documents, LastJob: s.LastJob, LastRun: s.LastRun}
}

// Store is the document's store record.
func (d *Document) Store() *store.DocumentState {
	out := &store.DocumentState{Source: d.Source, ID: d.ID, WingID: d.WingID, Revision: d.Revision, Meta: d.Meta,
		Chunks: make([]store.ChunkState, len(d.Chunks))}
	for i, c := range d.Chunks {
		out.Chunks[i] = store.ChunkState{Drawer: c.DrawerID, Hash: c.Hash}
	}
	return out
}

// Store is the fact's store record.
func (f *Fact) Store() *store.Relationship {
	out := &store.Relationship{ID: f.ID, Subject: f.Subject, Predicate: f.Predicate, Object: f.Object, Confidence: f.Confidence,
		ValidFrom: f.ValidFrom, ValidTo: timep(f.ValidTo), RecordedAt: f.RecordedAt, RetractedAt: timep(f.RetractedAt),
		Drawer: f.DrawerID, Job: f.JobID, Extractor: f.Extractor, SupersededBy: f.SupersededBy, Reason: f.Reason, ClosedBy: f.ClosedBy}
	for _, e := range f.Evidence {
		out.Evidence = append(out.Evidence, store.Evidence{ID: e.ID, Drawer: e.DrawerID, Job: e.JobID, Extractor: e.Extractor,
			Confidence: e.Confidence, RecordedAt: e.RecordedAt})
	}
	return out
}

// Store is the decision's store record.
func (d *Decision) Store() *store.RelationshipLink {
	return &store.RelationshipLink{ID: d.ID, From: d.From, To: d.To, Kind: d.Kind, Reason: d.Reason, Drawer: d.DrawerID, Job: d.JobID, CreatedAt: d.CreatedAt}
}

func timep(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	c := *t
	return &c
}
