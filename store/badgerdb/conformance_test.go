package badgerdb

import (
	"log/slog"
	"testing"

	"github.com/loci-dev/loci/store"
	"github.com/loci-dev/loci/store/storetest"
)

// The Badger backend honours the store contract.
func TestConformance(t *testing.T) {
	storetest.Run(t, storetest.Backend{
		Open: func(t *testing.T) store.DB {
			db, err := Open(t.TempDir(), slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			return db
		},
		Reopen: func(t *testing.T, old store.DB) store.DB {
			dir := old.Location()
			if err := old.Close(); err != nil {
				t.Fatal(err)
			}
			db, err := Open(dir, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			return db
		},
	})
}
