package postgres_test

import (
	"context"
	"testing"

	"github.com/loci-dev/loci/store"
)

// The external tests' helpers, one copy for every family's tests.

// mustUpdate runs fn in an Update of db, failing the test on an error.
func mustUpdate(t testing.TB, db store.DB, fn func(store.Tx) error) {
	t.Helper()
	if err := db.Update(context.Background(), fn); err != nil {
		t.Fatal(err)
	}
}

// mustView runs fn in a View of db, failing the test on an error.
func mustView(t testing.TB, db store.DB, fn func(store.Reader) error) {
	t.Helper()
	if err := db.View(context.Background(), fn); err != nil {
		t.Fatal(err)
	}
}
