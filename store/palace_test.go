package store_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/store"
	"github.com/loci-dev/loci/store/badgerdb"
	"github.com/loci-dev/loci/store/dedup"
)

var dd = store.Dedup{Enabled: true, Threshold: dedup.DefaultThreshold}

func open(t *testing.T) *badgerdb.DB {
	t.Helper()
	db, err := badgerdb.Open(t.TempDir(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func openB(b *testing.B) *badgerdb.DB {
	b.Helper()
	db, err := badgerdb.Open(b.TempDir(), slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	return db
}

func create(t *testing.T, db store.DB, in store.NewDrawer) (*store.WriteResult, error) {
	t.Helper()
	var res *store.WriteResult
	err := db.Update(context.Background(), func(tx store.Tx) error {
		var err error
		res, err = store.CreateDrawer(tx, in, dd)
		return err
	})
	return res, err
}

func must(t *testing.T, db store.DB, in store.NewDrawer) *store.WriteResult {
	t.Helper()
	res, err := create(t, db, in)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func drawer(content string) store.NewDrawer {
	return store.NewDrawer{Wing: "w", Room: "r", Content: content,
		Source: store.Source{Kind: store.KindManual}, Provenance: store.Provenance{RequestedBy: store.ByHTTP}}
}

func code(err error) fault.Code {
	if err == nil {
		return ""
	}
	return fault.As(err).Code
}

const sentence = "We decided to move the job queue from Redis to PostgreSQL for durability."

func TestDedupVerdictsPerWriter(t *testing.T) {
	tests := []struct {
		name        string
		second      func() store.NewDrawer
		wantCreated bool
		wantKind    dedup.Verdict // "" for no link
	}{
		{"unnamed exact copy returns the existing drawer", func() store.NewDrawer { return drawer(sentence) }, false, ""},
		{"named exact copy is stored and linked", func() store.NewDrawer {
			d := drawer(sentence)
			d.Name, d.Policy = "n", store.ExactStoredLinked
			return d
		}, true, dedup.Exact},
		{"normalized copy is stored and linked", func() store.NewDrawer { return drawer(strings.ToUpper(sentence)) }, true, dedup.Normalized},
		{"near copy is stored and linked", func() store.NewDrawer {
			return drawer(strings.Replace(sentence, "durability", "durabilty", 1))
		}, true, dedup.Near},
		{"distinct text records nothing", func() store.NewDrawer { return drawer("Lunch is at noon on Tuesdays in the big room.") }, true, ""},
		{"copy in another room is no duplicate", func() store.NewDrawer {
			d := drawer(sentence)
			d.Room = "other"
			return d
		}, true, ""},
		{"mining-style exact copy is stored and linked", func() store.NewDrawer {
			d := drawer(sentence)
			d.Policy = store.ExactStoredLinked
			return d
		}, true, dedup.Exact},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := open(t)
			first := must(t, db, drawer(sentence))
			res := must(t, db, tt.second())
			if res.Created != tt.wantCreated {
				t.Fatalf("created = %v, want %v", res.Created, tt.wantCreated)
			}
			if !tt.wantCreated && res.Drawer.ID != first.Drawer.ID {
				t.Fatalf("returned %s, want the existing %s", res.Drawer.ID, first.Drawer.ID)
			}
			if tt.wantKind == "" {
				if len(res.Similar) != 0 {
					t.Fatalf("links %+v, want none", res.Similar)
				}
				return
			}
			if len(res.Similar) != 1 || res.Similar[0].Kind != tt.wantKind || res.Similar[0].Older != first.Drawer.ID {
				t.Fatalf("links %+v, want one %s link to %s", res.Similar, tt.wantKind, first.Drawer.ID)
			}
			// Read from both sides.
			db.View(context.Background(), func(r store.Reader) error {
				views, _ := store.Similar(r, res.Drawer)
				if len(views) != 1 || views[0].Side != "older" || views[0].Drawer != first.Drawer.ID {
					t.Errorf("newer side reads %+v", views)
				}
				if want := res.Similar[0].CreatedAt.UTC().Format(time.RFC3339Nano); len(views) == 1 && views[0].CreatedAt != want {
					t.Errorf("the link's created_at reads %q, the write answered %q", views[0].CreatedAt, want)
				}
				views, _ = store.Similar(r, first.Drawer)
				if len(views) != 1 || views[0].Side != "newer" || views[0].Drawer != res.Drawer.ID {
					t.Errorf("older side reads %+v", views)
				}
				return nil
			})
		})
	}
}

func TestDedupDisabledStoresCopies(t *testing.T) {
	db := open(t)
	off := store.Dedup{Enabled: false, Threshold: 0.9}
	for range 2 {
		err := db.Update(context.Background(), func(tx store.Tx) error {
			res, err := store.CreateDrawer(tx, drawer(sentence), off)
			if err == nil && !res.Created {
				t.Fatal("copy not stored with dedup off")
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestDiaryScopeIsTheAgent(t *testing.T) {
	db := open(t)
	entry := func(agent string) store.NewDrawer {
		d := drawer("Today I refactored the writer and fixed the flaky test.")
		d.Room, d.Diary, d.Source.Agent = "diary", true, agent
		return d
	}
	a := must(t, db, entry("claude"))
	b := must(t, db, entry("codex"))
	if !b.Created || len(b.Similar) != 0 {
		t.Fatalf("another agent's diary counted as a duplicate: %+v", b)
	}
	again := must(t, db, entry("claude"))
	if again.Created || again.Drawer.ID != a.Drawer.ID {
		t.Fatalf("same agent's copy: created=%v id=%s", again.Created, again.Drawer.ID)
	}
}

func TestShortTextsAreNeverNear(t *testing.T) {
	db := open(t)
	must(t, db, drawer("deploy fri"))
	res := must(t, db, drawer("deploy fry"))
	if len(res.Similar) != 0 {
		t.Fatalf("short near text linked: %+v", res.Similar)
	}
}

func TestNames(t *testing.T) {
	db := open(t)
	named := func(name, content string) store.NewDrawer {
		d := drawer(content)
		d.Name, d.Policy = name, store.ExactStoredLinked
		return d
	}
	first := must(t, db, named("src/main.go", "package main"))
	same := must(t, db, named("src/main.go", "package main"))
	if same.Created || same.Drawer.ID != first.Drawer.ID {
		t.Fatalf("same name, same content: %+v", same)
	}
	if _, err := create(t, db, named("src/main.go", "package other")); code(err) != fault.PalaceDrawerNameTaken {
		t.Fatalf("same name, other content: %v", err)
	}
	for _, bad := range []string{" x", "a//b", "../x", "6ba7b810-9dad-11d1-80b4-00c04fd430c8"} {
		if _, err := create(t, db, named(bad, "c")); code(err) != fault.PalacePathInvalid {
			t.Errorf("name %q: %v", bad, err)
		}
	}
	for _, bad := range []string{"a/b", " w", ""} {
		d := drawer("text")
		d.Wing = bad
		if _, err := create(t, db, d); code(err) != fault.PalacePathInvalid {
			t.Errorf("wing %q: %v", bad, err)
		}
	}
	// Refusals wrote nothing.
	db.View(context.Background(), func(r store.Reader) error {
		c, _ := r.Counts()
		if c.DrawersStored != 1 || c.Wings != 1 {
			t.Errorf("counts after refusals %+v", c)
		}
		return nil
	})
}

func TestSupersedeAndHistory(t *testing.T) {
	db := open(t)
	d := drawer("The release is on Friday.")
	d.Name, d.Tags = "release", []string{"plan"}
	v1 := must(t, db, d).Drawer
	sup := func(id string, content *string, tags *[]string) (*store.SupersedeResult, error) {
		var res *store.SupersedeResult
		err := db.Update(context.Background(), func(tx store.Tx) error {
			var err error
			res, err = store.Supersede(tx, store.Supersession{DrawerID: id, Content: content, Tags: tags, RequestedBy: store.ByCLI}, dd)
			return err
		})
		return res, err
	}
	c2 := "The release moved to Monday."
	r2, err := sup(v1.ID, &c2, nil)
	if err != nil {
		t.Fatal(err)
	}
	v2 := r2.Replacement
	if !r2.Superseded.ValidTo.Equal(v2.ValidFrom) || v2.Name != "release" || strings.Join(v2.Tags, ",") != "plan" {
		t.Fatalf("replacement %+v, old %+v", v2, r2.Superseded)
	}
	if v2.Supersedes != v1.ID || r2.Superseded.SupersededBy != v2.ID {
		t.Fatal("links not set together")
	}
	if _, err := sup(v1.ID, &c2, nil); code(err) != fault.PalaceDrawerSuperseded {
		t.Fatalf("superseding again: %v", err)
	}
	c3 := "The release moved to Tuesday."
	tags := []string{"plan", "moved"}
	r3, err := sup(v2.ID, &c3, &tags)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(r3.Replacement.Tags, ",") != "plan,moved" {
		t.Fatalf("tags not replaced: %v", r3.Replacement.Tags)
	}
	for _, from := range []string{v1.ID, v2.ID, r3.Replacement.ID} {
		db.View(context.Background(), func(r store.Reader) error {
			_, versions, err := store.History(r, from)
			if err != nil || len(versions) != 3 || versions[0].ID != v1.ID || versions[2].ID != r3.Replacement.ID {
				t.Errorf("history from %s: %v %+v", from, err, versions)
			}
			holder, _ := r.DrawerByName(v1.RoomID, "release")
			if holder == nil || holder.ID != r3.Replacement.ID {
				t.Errorf("name not taken over: %+v", holder)
			}
			return nil
		})
	}
	// Invalidate without content: no replacement, the name is released.
	r4, err := sup(r3.Replacement.ID, nil, nil)
	if err != nil || r4.Replacement != nil || r4.Superseded.ValidTo == nil {
		t.Fatalf("invalidate: %v %+v", err, r4)
	}
	// A superseded drawer never counts as a duplicate.
	back := drawer("The release is on Friday.")
	if res := must(t, db, back); !res.Created || len(res.Similar) != 0 {
		t.Fatalf("superseded drawer counted as duplicate: %+v", res)
	}
}

func TestDeleteUndoesLinksAndCounts(t *testing.T) {
	db := open(t)
	first := must(t, db, drawer(sentence)).Drawer
	second := must(t, db, drawer(strings.ToUpper(sentence)))
	if len(second.Similar) != 1 {
		t.Fatal("no link")
	}
	err := db.Update(context.Background(), func(tx store.Tx) error { return store.DeleteDrawer(tx, second.Drawer) })
	if err != nil {
		t.Fatal(err)
	}
	db.View(context.Background(), func(r store.Reader) error {
		links, _ := r.Links(first.ID)
		if len(links) != 0 {
			t.Errorf("link survives deleting the newer drawer: %+v", links)
		}
		return nil
	})
	must(t, db, drawer("Another memory in the same room about lunch."))
	d := drawer("third room memory")
	d.Room = "r2"
	must(t, db, d)
	var removed store.Removed
	err = db.Update(context.Background(), func(tx store.Tx) error {
		w, err := store.FindWing(tx, "w")
		if err != nil {
			return err
		}
		removed, err = store.DeleteWing(tx, w)
		return err
	})
	if err != nil || removed != (store.Removed{Wings: 1, Rooms: 2, Drawers: 3}) {
		t.Fatalf("removed %+v %v", removed, err)
	}
	db.View(context.Background(), func(r store.Reader) error {
		c, _ := r.Counts()
		if c != (store.Counts{}) {
			t.Errorf("counts after delete %+v", c)
		}
		return nil
	})
}

func TestChangeLogInSameTransaction(t *testing.T) {
	db := open(t)
	must(t, db, drawer(sentence))
	_, err := create(t, db, store.NewDrawer{Wing: "w", Room: "r", Content: " ", Source: store.Source{Kind: store.KindManual}})
	if code(err) != fault.InputInvalid {
		t.Fatalf("blank content: %v", err)
	}
	var kinds []string
	var last uint64
	db.View(context.Background(), func(r store.Reader) error {
		r.Changes(0, func(c store.Change) bool {
			if c.Seq != last+1 {
				t.Errorf("sequence gap: %d after %d", c.Seq, last)
			}
			last = c.Seq
			kinds = append(kinds, c.Kind+":"+c.Action)
			return true
		})
		return nil
	})
	if got := strings.Join(kinds, " "); got != "wing:created room:created drawer:created" {
		t.Fatalf("change log %q", got)
	}
	// A reopened store continues the sequence.
	dir := db.Location()
	db.Close()
	db2, err := badgerdb.Open(dir, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	must(t, db2, drawer("A second, different memory after reopening the store."))
	db2.View(context.Background(), func(r store.Reader) error {
		if s, _ := r.LastSeq(); s != 4 {
			t.Errorf("last seq %d, want 4", s)
		}
		return nil
	})
}

func TestPreparedJudgementsAndLaterWrites(t *testing.T) {
	db := open(t)
	ctx := context.Background()
	a := must(t, db, drawer(sentence)).Drawer
	in := drawer(strings.Replace(sentence, "durability", "durabilty", 1))
	db.View(ctx, func(r store.Reader) error {
		in.Prepared = store.Prepare(r, in, dd)
		return nil
	})
	if j := in.Prepared.Judged[a.ID]; j.Verdict != dedup.Near {
		t.Fatalf("snapshot judgement %+v", j)
	}
	// After the snapshot: a second near drawer appears, and a is superseded.
	b := must(t, db, drawer(strings.Replace(sentence, "Redis", "Rediss", 1))).Drawer
	repl := "Something else entirely, about the lunch menu on Thursday."
	err := db.Update(ctx, func(tx store.Tx) error {
		_, err := store.Supersede(tx, store.Supersession{DrawerID: a.ID, Content: &repl, RequestedBy: store.ByCLI}, dd)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	res := must(t, db, in)
	if len(res.Similar) != 1 || res.Similar[0].Older != b.ID {
		t.Fatalf("links %+v: want only the later, still current drawer %s", res.Similar, b.ID)
	}
}

// A link's created_at is shown as every API time is: RFC 3339 in UTC,
// nanoseconds with trailing zeros trimmed (the duplicates list once padded
// them to nine digits while a write's answer trimmed them).
func TestLinkTime(t *testing.T) {
	at := time.Date(2026, 11, 22, 12, 0, 0, 120000000, time.FixedZone("x", 3600))
	if got := store.LinkTime(at); got != "2026-11-22T11:00:00.12Z" {
		t.Fatalf("LinkTime = %q", got)
	}
}
