package services

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/store"
)

// outageDB is a store whose reads and writes fail as a shared store's do
// while its database is unreachable (503), once down is set.
type outageDB struct {
	store.DB
	down atomic.Bool
}

func (d *outageDB) unreachable() error {
	return &fault.Error{Code: fault.StoreBackendFailed, Status: 503, RetryAfter: 5, Msg: "the shared store at h:5432/db is unreachable",
		Help: "try again", Err: errors.New("connection refused")}
}

func (d *outageDB) View(ctx context.Context, fn func(store.Reader) error) error {
	if d.down.Load() {
		return d.unreachable()
	}
	return d.DB.View(ctx, fn)
}

func (d *outageDB) Update(ctx context.Context, fn func(store.Tx) error) error {
	if d.down.Load() {
		return d.unreachable()
	}
	return d.DB.Update(ctx, fn)
}

func (d *outageDB) GetMeta(ctx context.Context, key string) (string, bool, error) {
	if d.down.Load() {
		return "", false, d.unreachable()
	}
	return d.DB.GetMeta(ctx, key)
}

// Issue 31 (trial): while the store is unreachable the status report says
// its counts and migration state are unknown (null on the wire), with the
// datastore unhealthy and its reason; before, it read 0 wings, data
// version 0 and schema out of sync, as an empty palace never migrated.
func TestStatusWhileTheStoreIsUnreachable(t *testing.T) {
	sys, inner := newSystem(t)
	db := &outageDB{DB: inner}
	p := &Palace{DB: db, Sys: sys}
	runner := &store.Runner{DB: db, Steps: store.Steps()}
	if _, err := runner.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	rp := &Reporter{Palace: p, Migrator: runner, Started: time.Now()}
	st := rp.Status(context.Background(), "")
	if !st.Datastore.Healthy || st.Counts == nil || st.Migrations == nil || !st.Migrations.SchemaSync || st.Migrations.DataVersion != st.Migrations.Latest {
		t.Fatalf("store up: %+v", st)
	}

	db.down.Store(true)
	st = rp.Status(context.Background(), "")
	if st.Datastore.Healthy || st.Datastore.Error != "the shared store at h:5432/db is unreachable" || st.Counts != nil || st.Migrations != nil {
		t.Fatalf("store down: %+v", st)
	}
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"counts":null`, `"migrations":null`, `"healthy":false`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the wire's status lacks %s: %s", want, b)
		}
	}
}
