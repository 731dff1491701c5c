package actors

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loci-dev/loci/store"
	"github.com/loci-dev/loci/store/badgerdb"
)

// A near copy written into a big room right after a start is stored at
// once (its index still loading) and linked to its original once the
// index is loaded, through the writer.
func TestLateNearLinksAfterTheLoad(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "p")
	dd := store.Dedup{Enabled: true, Threshold: 0.9}
	in := func(content string) store.NewDrawer {
		return store.NewDrawer{Wing: "w", Room: "r", Content: content, Source: store.Source{Kind: store.KindManual},
			Provenance: store.Provenance{RequestedBy: store.ByHTTP}}
	}
	text := func(i int) string {
		return fmt.Sprintf("Drawer %d of a big room, about the %d lamps in window %d and the copper kettle number %d.", i, i*31, i*7, i*7919)
	}
	db, err := badgerdb.Open(dir, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	sys := Start(db, slog.New(slog.DiscardHandler), slog.LevelInfo)
	p := &Palace{DB: db, Sys: sys, Dedup: dd}
	var original *store.Drawer
	for i := range 150 {
		res, err := p.CreateDrawer(context.Background(), in(text(i)))
		if err != nil {
			t.Fatal(err)
		}
		if i == 42 {
			original = res.Drawer
		}
	}
	sys.Stop(context.Background())
	db.Close()

	db, err = badgerdb.Open(dir, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetBigScope(100)
	sys = Start(db, slog.New(slog.DiscardHandler), slog.LevelInfo)
	defer sys.Stop(context.Background())
	late := NewLateNear(sys, dd, slog.New(slog.DiscardHandler))
	db.OnLateNear(late.Add)
	late.Start()
	defer late.Stop()
	p = &Palace{DB: db, Sys: sys, Dedup: dd}
	res, err := p.CreateDrawer(context.Background(), in(strings.Replace(original.Content, "kettle", "kettles", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Created || len(res.Similar) != 0 {
		t.Fatalf("the write judged near copies against a loading index: %+v", res.Similar)
	}
	// The load hands the drawer over; Wait returns once it is judged.
	var links []store.Link
	for range 500 {
		late.Wait()
		err := db.View(context.Background(), func(r store.Reader) error {
			var err error
			links, err = r.Links(res.Drawer.ID)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(links) > 0 {
			break
		}
		time.Sleep(10 * time.Millisecond) // the load may not have handed it over yet
	}
	if len(links) == 0 || links[0].Older != original.ID || links[0].Newer != res.Drawer.ID || links[0].Kind != "near" {
		t.Fatalf("links %+v, want the strongest to %s first", links, original.ID)
	}
}
