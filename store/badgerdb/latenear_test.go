package badgerdb

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loci-dev/loci/store"
)

// A big scope loads in the background: a write into it right after a
// start answers without waiting, its near judgment is handed over once the
// scope is loaded, and LinkNear then records the link the write would
// have. Writes and deletes made during the load are in the loaded index.
func TestBigScopeLoadsInTheBackground(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	var first *store.Drawer
	for i := range 400 {
		d := create(t, db, nearDrawer(fmt.Sprintf("Drawer %d of the big room: %s %d", i, sentenceFor(i), i*7919))).Drawer
		if i == 5 {
			first = d
		}
	}
	db.Close()

	db, err = Open(dir, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetBigScope(100)
	var mu sync.Mutex
	var late []string
	got := make(chan struct{}, 8)
	db.OnLateNear(func(ids []string) {
		mu.Lock()
		late = append(late, ids...)
		mu.Unlock()
		got <- struct{}{}
	})
	// The first write starts the load and does not wait for it: its near
	// judgment is deferred.
	near := create(t, db, nearDrawer(strings.Replace(first.Content, "big room", "bog room", 1)))
	if len(near.Similar) != 0 {
		t.Fatalf("the write judged against a scope still loading: %v", near.Similar)
	}
	other := create(t, db, nearDrawer("A drawer written while the index loads, about the garden shed and its roof."))
	var removed *store.Drawer
	err = db.Update(context.Background(), func(tx store.Tx) error {
		d, err := tx.Drawer(first.ID)
		if err != nil || d == nil {
			return fmt.Errorf("drawer: %v", err)
		}
		removed = d
		return store.DeleteDrawer(tx, d)
	})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.After(10 * time.Second)
	for {
		db.near.mu.RLock()
		loading := len(db.near.loading)
		db.near.mu.RUnlock()
		if loading == 0 && len(candidates(t, db, other.Drawer.Content)) > 0 {
			break
		}
		select {
		case <-deadline:
			t.Fatal("the scope was not loaded in the background")
		case <-time.After(10 * time.Millisecond):
		}
	}
	// The index holds what was written during the load, not what was
	// deleted during it.
	if c := candidates(t, db, other.Drawer.Content); len(c) != 1 || c[0] != other.Drawer.ID {
		t.Fatalf("a drawer written during the load: candidates %v", c)
	}
	for _, c := range candidates(t, db, removed.Content) {
		if c == removed.ID {
			t.Fatal("a drawer deleted during the load is in the index")
		}
	}
	select {
	case <-got:
	case <-time.After(5 * time.Second):
		t.Fatal("the deferred judgments were not handed over")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(late) == 0 || late[0] != near.Drawer.ID {
		t.Fatalf("late %v, want %s first", late, near.Drawer.ID)
	}
}

// LinkNear links a late drawer to its near duplicate, once.
func TestLinkNearAfterLoad(t *testing.T) {
	db, err := Open(t.TempDir(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	a := create(t, db, nearDrawer(base)).Drawer
	b := create(t, db, nearDrawer(strings.Replace(base, "Redis", "Rediss", 1))).Drawer
	// b was linked at its write; LinkNear adds nothing twice.
	link := func(id string) int {
		var n int
		err := db.Update(context.Background(), func(tx store.Tx) error {
			var err error
			n, err = store.LinkNear(tx, id, ndd)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := link(b.ID); n != 0 {
		t.Fatalf("LinkNear made %d links for a drawer already linked", n)
	}
	// Remove the write's link, as if the judgment had been deferred.
	err = db.Update(context.Background(), func(tx store.Tx) error {
		ls, err := tx.Links(b.ID)
		if err != nil {
			return err
		}
		for i := range ls {
			if err := tx.DeleteLink(&ls[i]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := link(b.ID); n != 1 {
		t.Fatalf("LinkNear made %d links, want 1", n)
	}
	err = db.View(context.Background(), func(r store.Reader) error {
		ls, err := r.Links(b.ID)
		if err != nil {
			return err
		}
		if len(ls) != 1 || ls[0].Older != a.ID || ls[0].Newer != b.ID || ls[0].Kind != "near" {
			return fmt.Errorf("links %+v", ls)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := link(b.ID); n != 0 {
		t.Fatalf("a second LinkNear made %d links", n)
	}
}

// sentenceFor is a distinct filler text for drawer i.
func sentenceFor(i int) string {
	words := []string{"apple", "river", "stone", "cloud", "lamp", "window", "garden", "letter", "copper", "meadow", "ticket", "violin"}
	out := ""
	for j := range 14 {
		out += words[(i*31+j*17+i*j)%len(words)] + " "
	}
	return out
}

// PreloadNear loads big scopes in the background at start, before any
// write needs them; a read then finds candidates.
func TestPreloadNear(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	var last *store.Drawer
	for i := range 150 {
		last = create(t, db, nearDrawer(fmt.Sprintf("Drawer %d: %s %d", i, sentenceFor(i), i*7919))).Drawer
	}
	db.Close()
	db, err = Open(dir, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetBigScope(100)
	if c := candidates(t, db, last.Content); len(c) != 0 {
		t.Fatalf("a scope was loaded before the preload: %v", c)
	}
	db.PreloadNear()
	deadline := time.Now().Add(10 * time.Second)
	for len(candidates(t, db, last.Content)) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the big scope was not preloaded")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
