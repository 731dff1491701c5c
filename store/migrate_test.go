package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/store"
)

func TestMigratorFailsClosedAndResumes(t *testing.T) {
	db := open(t)
	ctx := context.Background()
	var ran []int
	broken := true
	steps := []store.Step{
		{N: 1, Name: "one", Run: func(context.Context, store.DB) error { ran = append(ran, 1); return nil }},
		{N: 2, Name: "two", Run: func(context.Context, store.DB) error {
			if broken {
				return errors.New("boom")
			}
			ran = append(ran, 2)
			return nil
		}},
		{N: 3, Name: "three", Run: func(context.Context, store.DB) error { ran = append(ran, 3); return nil }},
	}
	m := &store.Runner{DB: db, Schema: "v1", Steps: steps}
	if _, err := m.Run(ctx); code(err) != fault.MigrateFailed {
		t.Fatalf("failing step: %v", err)
	}
	st, _ := m.State(ctx)
	if st.DataVersion != 1 || st.Pending != 2 || !st.SchemaSync {
		t.Fatalf("state after failure %+v", st)
	}
	broken = false
	done, err := m.Run(ctx)
	if err != nil || len(done) != 2 || done[0] != 2 {
		t.Fatalf("resume: %v %v", done, err)
	}
	if len(ran) != 3 {
		t.Fatalf("steps ran %v, want each once", ran)
	}
	again, err := m.Run(ctx)
	if err != nil || len(again) != 0 {
		t.Fatalf("third run: %v %v", again, err)
	}
	// A new schema is synced.
	m.Schema = "v2"
	if st, _ := m.State(ctx); st.SchemaSync {
		t.Fatal("changed schema reported in sync")
	}
	if _, err := m.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if st, _ := m.State(ctx); !st.SchemaSync {
		t.Fatal("schema not synced")
	}
}

func TestMigratorLock(t *testing.T) {
	db := open(t)
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	held, _ := json.Marshal(map[string]any{"owner": "x", "pid": 1, "expires_at": now.Add(time.Minute)})
	if err := db.PutMeta(ctx, "migrate_lock", string(held)); err != nil {
		t.Fatal(err)
	}
	m := &store.Runner{DB: db, Schema: "v1", Steps: store.Steps(), Now: func() time.Time { return now }}
	if _, err := m.Run(ctx); code(err) != fault.MigrateLocked {
		t.Fatalf("held lock: %v", err)
	}
	// The crashed holder's lock expires.
	now = now.Add(2 * time.Minute)
	if _, err := m.Run(ctx); err != nil {
		t.Fatalf("expired lock: %v", err)
	}
	if _, ok, _ := db.GetMeta(ctx, "migrate_lock"); ok {
		t.Fatal("lock not released")
	}
}

func TestDataSteps(t *testing.T) {
	db := open(t)
	ctx := context.Background()
	// Legacy data: a diary drawer without requested_by, a current drawer
	// without dedup keys, a superseded drawer without its successor link.
	err := db.Update(ctx, func(tx store.Tx) error {
		w, _, _ := store.EnsureWing(tx, "w", "")
		rm, _, _ := store.EnsureRoom(tx, w, "r", "")
		t0 := tx.Now().Add(-time.Hour)
		t1 := tx.Now()
		diary := &store.Drawer{ID: store.NewID(), WingID: w.ID, RoomID: rm.ID, Content: "diary entry", Diary: true,
			Source: store.Source{Kind: store.KindManual, Agent: "a"}, ValidFrom: t0, CreatedAt: t0}
		old := &store.Drawer{ID: store.NewID(), WingID: w.ID, RoomID: rm.ID, Name: "n", Content: "old", ValidFrom: t0, ValidTo: &t1, CreatedAt: t0,
			Source: store.Source{Kind: store.KindManual}}
		repl := &store.Drawer{ID: store.NewID(), WingID: w.ID, RoomID: rm.ID, Name: "n", Content: "new", ValidFrom: t1, CreatedAt: t1,
			Source: store.Source{Kind: store.KindManual}}
		for _, d := range []*store.Drawer{diary, old, repl} {
			if err := tx.PutDrawer(d, nil); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	m := &store.Runner{DB: db, Schema: "v1", Steps: store.Steps()}
	if _, err := m.Run(ctx); err != nil {
		t.Fatal(err)
	}
	db.View(ctx, func(r store.Reader) error {
		w, _ := r.WingByName("w")
		rm, _ := r.RoomByName(w.ID, "r")
		return r.Drawers(rm.ID, false, func(d *store.Drawer) bool {
			switch d.Content {
			case "diary entry":
				if d.Provenance.RequestedBy != store.ByUnknown {
					t.Errorf("step 1: requested_by %q", d.Provenance.RequestedBy)
				}
			case "old":
				if d.SupersededBy == "" {
					t.Error("step 2: successor not paired")
				}
			case "new":
				if d.Supersedes == "" {
					t.Error("step 2: predecessor not paired")
				}
			}
			if d.Current() {
				if rec, _ := r.DedupRecord(d.ID); rec == nil {
					t.Errorf("step 3: no dedup keys for %q", d.Content)
				}
			} else if rec, _ := r.DedupRecord(d.ID); rec != nil {
				t.Errorf("step 3: superseded drawer %q got dedup keys", d.Content)
			}
			return true
		})
	})
}

// Step 4 moves mining's per-source state (before cursors were per wing)
// to per source and wing: one wing keeps the cursor, a source spread over
// wings starts each without one, a dead wing's documents are forgotten,
// chunk owners are written and a document whose drawer was deleted is
// marked to be filed again. Running it again changes nothing.
func TestDataStepMiningPerWing(t *testing.T) {
	db := open(t)
	ctx := context.Background()
	one := store.SourceIdentity{Adapter: "directory", Locator: "/home/u/one"}
	spread := store.SourceIdentity{Adapter: "directory", Locator: "/home/u/spread"}
	at := time.Date(2026, 2, 3, 4, 5, 6, 0, time.UTC)
	var wa, wb, kept string
	err := db.Update(ctx, func(tx store.Tx) error {
		a, _, _ := store.EnsureWing(tx, "wa", "")
		b, _, _ := store.EnsureWing(tx, "wb", "")
		wa, wb = a.ID, b.ID
		rm, _, _ := store.EnsureRoom(tx, a, "files", "")
		d := &store.Drawer{ID: store.NewID(), WingID: a.ID, RoomID: rm.ID, Name: "a.md", Content: "a", ValidFrom: at, CreatedAt: at,
			Source: store.Source{Kind: store.KindFile}}
		kept = d.ID
		if err := tx.PutDrawer(d, nil); err != nil {
			return err
		}
		doc := func(src store.SourceIdentity, id, wing, drawer string) *store.DocumentState {
			return &store.DocumentState{Source: src.Key(), ID: id, WingID: wing, Revision: "r", Meta: "m",
				Chunks: []store.ChunkState{{Drawer: drawer, Hash: "h"}}}
		}
		for _, f := range []func() error{
			func() error {
				return tx.PutSource(&store.SourceState{Key: one.Key(), Identity: one, Cursor: []byte(`{"mtime_ns":5,"path":"b.md"}`), LastJob: "j1", LastRun: at})
			},
			func() error {
				return tx.PutSource(&store.SourceState{Key: spread.Key(), Identity: spread, Cursor: []byte(`{"mtime_ns":9,"path":"z"}`), LastRun: at})
			},
			func() error { return tx.PutSourceDocument(doc(one, "a.md", wa, kept)) },
			func() error { return tx.PutSourceDocument(doc(one, "b.md", wa, store.NewID())) }, // its drawer deleted
			func() error { return tx.PutSourceDocument(doc(spread, "x", wa, store.NewID())) },
			func() error { return tx.PutSourceDocument(doc(spread, "y", wb, store.NewID())) },
			func() error { return tx.PutSourceDocument(doc(spread, "z", store.NewID(), store.NewID())) }, // a deleted wing
		} {
			if err := f(); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	m := &store.Runner{DB: db, Schema: "v1", Steps: store.Steps()}
	if _, err := m.Run(ctx); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		err := db.View(ctx, func(r store.Reader) error {
			var keys []string
			if err := r.Sources(func(s *store.SourceState) bool { keys = append(keys, s.Key); return true }); err != nil {
				return err
			}
			if len(keys) != 3 {
				t.Errorf("%s: %d states, want 3 (one source in wa, the other in wa and wb)", when, len(keys))
			}
			st, err := r.Source(store.TargetKey(one.Key(), wa))
			if err != nil || st == nil || st.WingID != wa || st.Identity != one || string(st.Cursor) != `{"mtime_ns":5,"path":"b.md"}` || st.LastJob != "j1" || st.Documents != 2 {
				t.Errorf("%s: the one-wing source's state %+v %v", when, st, err)
			}
			for _, w := range []string{wa, wb} {
				st, err := r.Source(store.TargetKey(spread.Key(), w))
				if err != nil || st == nil || st.Cursor != nil || st.Documents != 1 {
					t.Errorf("%s: the spread source's state in %s: %+v %v", when, w, st, err)
				}
			}
			if n, _ := r.CountSourceDocuments(store.TargetKey(one.Key(), wa)); n != 2 {
				t.Errorf("%s: %d documents of the one-wing source, want 2", when, n)
			}
			for key, want := range map[string]int{one.Key(): 0, spread.Key(): 0, store.TargetKey(spread.Key(), wa): 1, store.TargetKey(spread.Key(), wb): 1} {
				if n, _ := r.CountSourceDocuments(key); n != want {
					t.Errorf("%s: %d documents under %s, want %d", when, n, key, want)
				}
			}
			if src, doc, err := r.ChunkOwner(kept); err != nil || src != store.TargetKey(one.Key(), wa) || doc != "a.md" {
				t.Errorf("%s: a.md's drawer's owner %q %q %v", when, src, doc, err)
			}
			var stale []string
			_ = r.StaleDocuments(store.TargetKey(one.Key(), wa), func(doc string) bool { stale = append(stale, doc); return true })
			if len(stale) != 1 || stale[0] != "b.md" {
				t.Errorf("%s: documents to file again %v, want [b.md]", when, stale)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	check("after the step")
	if err := store.Steps()[3].Run(ctx, db); err != nil {
		t.Fatal(err)
	}
	check("after running it again")
}
