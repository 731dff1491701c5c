package store_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/store"
	_ "github.com/loci-dev/loci/store/badgerdb" // registers the embedded backend
)

// The registry opens a backend by its location's scheme: a path or a
// badger:// URL the embedded store; a scheme this build has no backend
// for is loci::store::backend_failed, naming the scheme and never the
// rest of the URL (it may hold a password).
func TestOpenByLocation(t *testing.T) {
	ctx := context.Background()
	t.Run("Schemes", func(t *testing.T) {
		for loc, want := range map[string]string{
			"/var/lib/loci/palace/store":             "badger",
			"relative/store":                         "badger",
			"badger:///var/lib/loci/store":           "badger",
			"postgres://loci:pw@db.example/loci":     "postgres",
			"POSTGRES://db.example/loci":             "postgres",
			"C:/palace/store":                        "badger",
			"mysql+tcp://u:p@[::1]:3306/loci?tls=no": "mysql+tcp",
		} {
			if got := store.Scheme(loc); got != want {
				t.Errorf("Scheme(%q) = %q, want %q", loc, got, want)
			}
		}
	})
	t.Run("Path", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "store")
		db, err := store.Open(ctx, store.OpenOptions{Location: dir})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if db.Backend() != "badger" || db.Location() != dir || db.Shared() {
			t.Fatalf("opened %s at %s (shared %v)", db.Backend(), db.Location(), db.Shared())
		}
		if _, ok := db.(store.Embedded); !ok {
			t.Fatal("the embedded store does not offer store.Embedded")
		}
	})
	t.Run("BadgerURL", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "store")
		db, err := store.Open(ctx, store.OpenOptions{Location: "badger://" + dir, Serving: true})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if db.Location() != dir {
			t.Fatalf("badger://%s opened %s", dir, db.Location())
		}
	})
	for _, c := range []struct{ name, loc, shows string }{
		{"UnknownScheme", "postgres://loci:hunter2-secret@db.example:5432/loci?sslmode=require", `"postgres"`},
		{"BadgerURLWithHost", "badger://hunter2-secret@host/palace", "badger:///absolute/path"},
	} {
		t.Run(c.name, func(t *testing.T) {
			db, err := store.Open(ctx, store.OpenOptions{Location: c.loc})
			if err == nil {
				db.Close()
				t.Fatalf("%s opened", c.loc)
			}
			if !fault.Is(err, fault.StoreBackendFailed) {
				t.Fatalf("answered %v, want %s", err, fault.StoreBackendFailed)
			}
			e := fault.As(err)
			if e.Help == "" || !strings.Contains(e.Msg+" "+e.Help, c.shows) {
				t.Fatalf("the error does not say what to do: %q / %q", e.Msg, e.Help)
			}
			if text := e.Msg + e.Help + err.Error(); strings.Contains(text, "hunter2") || strings.Contains(text, "db.example") {
				t.Fatalf("the error shows the URL: %q", text)
			}
		})
	}
	t.Run("RegisteredTwice", func(t *testing.T) {
		defer func() {
			if recover() == nil {
				t.Fatal("a second registration of badger was accepted")
			}
		}()
		store.RegisterBackend(store.EmbeddedScheme, nil)
	})
}
