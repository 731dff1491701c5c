package postgres_test

import (
	"context"
	"log/slog"
	"os"
	"testing"

	"github.com/loci-dev/loci/store"
	"github.com/loci-dev/loci/store/postgres"
	"github.com/loci-dev/loci/store/postgres/pgtest"
	"github.com/loci-dev/loci/store/storetest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// open opens the backend at url with its schema applied (not recorded:
// the suite's Migrations case starts from a store nothing migrated).
func open(t *testing.T, url string) *postgres.DB {
	t.Helper()
	db, err := postgres.Open(context.Background(), store.OpenOptions{Location: url, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.ApplySchema(context.Background()); err != nil {
		t.Fatal(err)
	}
	return db
}

// The PostgreSQL backend honours the store contract, with a second handle
// (a second daemon) on the same database.
func TestConformance(t *testing.T) {
	urls := map[store.DB]string{}
	storetest.Run(t, storetest.Backend{
		Open: func(t *testing.T) store.DB {
			url := pgtest.Database(t)
			db := open(t, url)
			urls[db] = url
			return db
		},
		Reopen: func(t *testing.T, old store.DB) store.DB {
			url := urls[old]
			if err := old.Close(); err != nil {
				t.Fatal(err)
			}
			db := open(t, url)
			urls[db] = url
			return db
		},
		OpenSecond: func(t *testing.T, db store.DB) store.DB {
			second := open(t, urls[db])
			urls[second] = urls[db]
			return second
		},
	})
}
