package postgres_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/store"
	"github.com/loci-dev/loci/store/postgres"
	"github.com/loci-dev/loci/store/postgres/pgtest"
)

// Issue 31 (trial): while the database is unreachable a read is refused
// with a read's wording (nothing was changed), a write with a write's
// (nothing was written); both 503 with Retry-After.
func TestUnreachableReadSaysNothingChanged(t *testing.T) {
	pgtest.Shared(t) // skips (or fails under LOCI_REQUIRE_POSTGRES) without PostgreSQL
	s, err := pgtest.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Remove)
	name, err := s.NewDatabase()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	db, err := postgres.Open(ctx, store.OpenOptions{Location: s.URLWithPassword(name), Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.ApplySchema(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	check := func(what string, err error, help string) {
		t.Helper()
		fe := fault.As(err)
		if fe.Code != fault.StoreBackendFailed || fe.HTTPStatus() != 503 || fe.RetryAfter != postgres.RetryAfter ||
			!strings.Contains(fe.Msg, "is unreachable") || !strings.HasPrefix(fe.Help, help) || !strings.Contains(fe.Help, "try again in 5 s") {
			t.Fatalf("%s: %+v", what, fe)
		}
	}
	check("a view", db.View(ctx, func(r store.Reader) error { _, err := r.Counts(); return err }), "nothing was changed;")
	_, _, err = db.GetMeta(ctx, "data_version")
	check("a meta read", err, "nothing was changed;")
	check("an update", db.Update(ctx, func(tx store.Tx) error { return nil }), "nothing was written;")
}
