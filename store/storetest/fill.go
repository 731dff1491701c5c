package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/loci-dev/loci/store"
	"github.com/loci-dev/loci/store/dedup"
)

// FillEveryFamily writes a record of every family into db, through the
// store's rules where they exist (a supersession chain, a diary entry, a
// near duplicate and its link, an entity with an alias and a mention, a
// fact superseded with a lifecycle link, a vector) and the family writes
// otherwise (a job with its input and checkpoint facts, mining's state,
// a trigger's state and a delivery, an entity link, the credential state,
// an operational record): what a copy of a palace (store.Copy) must carry.
// drawers more drawers are filed (a bigger palace: more batches).
func FillEveryFamily(t testing.TB, db store.DB, drawers int) {
	t.Helper()
	ctx := context.Background()
	dd := store.Dedup{Enabled: true, Threshold: dedup.DefaultThreshold}
	file := func(in store.NewDrawer) *store.WriteResult {
		var res *store.WriteResult
		if err := db.Update(ctx, func(tx store.Tx) (err error) { res, err = store.CreateDrawer(tx, in, dd); return err }); err != nil {
			t.Fatal(err)
		}
		return res
	}
	nd := func(content string) store.NewDrawer {
		return store.NewDrawer{Wing: "w", Room: "r", Content: content,
			Source: store.Source{Kind: store.KindManual, Origin: json.RawMessage(`{"z": 1, "a": "x"}`)}, Provenance: store.Provenance{RequestedBy: store.ByHTTP}}
	}
	first := file(nd("The deploy script lives in tools/deploy.sh and needs bash."))
	diary := nd("Today I paired with Bob on the billing migration.")
	diary.Diary, diary.Source.Agent = true, "claude"
	file(diary)
	named := nd("Staging runs on port 8080 behind the proxy.")
	named.Name, named.Tags = "ports/staging", []string{"infra", "ports"}
	file(named)
	file(nd("Staging runs on port 8080 behind the proxy!! and nginx."))
	for i := range drawers {
		in := nd(fmt.Sprintf("Drawer %d of a bigger palace: note %d says the build %d took %d minutes on runner %d.", i, i*7, i*13, i%17, i%5))
		in.Room = fmt.Sprintf("r%d", i%4)
		file(in)
	}
	err := db.Update(ctx, func(tx store.Tx) error {
		now := tx.Now()
		s := "The deploy script lives in tools/deploy.sh and needs bash 5."
		res, err := store.Supersede(tx, store.Supersession{DrawerID: first.Drawer.ID, Content: &s, RequestedBy: store.ByCLI}, dd)
		if err != nil {
			return err
		}
		m, ent, _, err := store.LinkMention(tx, first.Drawer.ID, "Bob Stone", "person", false, "manual", "http", 1)
		if err != nil || m == nil {
			return fmt.Errorf("mention: %v", err)
		}
		if _, err := store.AddAlias(tx, ent.ID, "Bobby"); err != nil {
			return err
		}
		other, err := store.ResolveEntity(tx, "billing", "project", false, "")
		if err != nil {
			return err
		}
		until := now.Add(time.Hour)
		f := &store.Relationship{ID: store.NewID(), Subject: ent.ID, Predicate: "works_on", Object: other.Entity.ID, Confidence: 0.8,
			ValidFrom: now.Add(-time.Hour), ValidTo: &until, RecordedAt: now, Drawer: first.Drawer.ID, Extractor: "manual"}
		if err := tx.PutRelationship(f, nil); err != nil {
			return err
		}
		f2 := *f
		f2.ID, f2.Predicate, f2.ValidTo = store.NewID(), "leads", nil
		if err := tx.PutRelationship(&f2, nil); err != nil {
			return err
		}
		if err := tx.PutRelationshipLink(&store.RelationshipLink{ID: store.NewID(), From: f2.ID, To: f.ID, Kind: "supersedes", CreatedAt: now}); err != nil {
			return err
		}
		if err := tx.PutEntityLink(&store.EntityLink{ID: store.NewID(), From: ent.ID, To: other.Entity.ID, Kind: "related", CreatedAt: now}); err != nil {
			return err
		}
		if err := tx.PutEmbedding(&store.Embedding{DrawerID: res.Replacement.ID, Profile: "p", Provider: "static", Model: "m", Dimension: 2,
			Pipeline: "v1", CreatedAt: now, Vector: []float32{0.5, 0.25}}); err != nil {
			return err
		}
		ids, err := tx.DrawerIDs(first.Drawer.RoomID)
		if err != nil || len(ids) < 2 {
			return fmt.Errorf("drawer ids: %v %v", ids, err)
		}
		if err := tx.PutLink(&store.Link{ID: store.NewID(), Older: ids[0], Newer: ids[1], Kind: dedup.Near,
			Signals: dedup.Signals{Similarity: 0.91, Threshold: 0.85}, CreatedAt: now}); err != nil {
			return err
		}
		j := &store.Job{ID: store.NewID(), Kind: "mine", Status: store.JobCompleted, RequestedBy: store.ByCLI, CreatedAt: now, UpdatedAt: now,
			Checkpoint: json.RawMessage(`{"b": 2, "a": [1, 2.5]}`), Result: json.RawMessage(`{"filed":1}`), Input: json.RawMessage(`{"source":"x"}`)}
		if err := tx.PutJob(j, nil); err != nil {
			return err
		}
		if err := tx.PutJob(&store.Job{ID: store.NewID(), Kind: "embed", Status: store.JobQueued, CreatedAt: now, UpdatedAt: now}, nil); err != nil {
			return err
		}
		for i := range 3 {
			if err := tx.PutJobFact(j.ID, i, json.RawMessage(fmt.Sprintf(`{"op":"add","i":%d}`, i))); err != nil {
				return err
			}
		}
		ident := store.SourceIdentity{Adapter: "folder", Locator: "/notes"}
		key := store.TargetKey(ident.Key(), first.Drawer.WingID)
		if err := tx.PutSource(&store.SourceState{Key: key, Identity: ident, WingID: first.Drawer.WingID, Cursor: json.RawMessage(`{"path": "a.md"}`),
			Documents: 1, LastJob: j.ID, LastRun: now}); err != nil {
			return err
		}
		if err := tx.PutSourceDocument(&store.DocumentState{Source: key, ID: "notes/a.md", WingID: first.Drawer.WingID, Revision: "r1",
			Chunks: []store.ChunkState{{Drawer: ids[0], Hash: "h"}}}); err != nil {
			return err
		}
		if err := tx.PutChunkOwner(ids[0], key, "notes/a.md"); err != nil {
			return err
		}
		if err := tx.PutStaleDocument(key, "notes/b.md"); err != nil {
			return err
		}
		if err := tx.PutTriggerState(&store.TriggerState{Name: "nightly", Due: &now, Fired: 3, LastFired: &now, LastJob: j.ID}); err != nil {
			return err
		}
		if err := tx.PutDelivery(&store.Delivery{Trigger: "nightly", ID: "d1", AcceptedAt: now, Job: j.ID}); err != nil {
			return err
		}
		return tx.PutAuthState(&store.AuthState{Digest: "abc", Algorithm: "sha256", Version: 1, CreatedAt: now})
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.PutMeta(ctx, "embedding/serving", "p|static|m|2|v1"); err != nil {
		t.Fatal(err)
	}
}
