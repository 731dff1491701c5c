package actors

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loci-dev/loci/store"
	"github.com/loci-dev/loci/store/badgerdb"
)

// sharedStandIn is an embedded store dressed as a shared one: the changes
// whose id starts with "other-" are another handle's (Change.Origin), and
// Watch wakes when the test says.
type sharedStandIn struct {
	store.DB
	wakes chan struct{}
}

func (s *sharedStandIn) Origin() string { return "me" }

func (s *sharedStandIn) Watch(ctx context.Context, wake func()) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.wakes:
			wake()
		}
	}
}

func (s *sharedStandIn) View(ctx context.Context, fn func(store.Reader) error) error {
	return s.DB.View(ctx, func(r store.Reader) error { return fn(originReader{r}) })
}

type originReader struct{ store.Reader }

func (r originReader) Changes(after uint64, fn func(store.Change) bool) error {
	return r.Reader.Changes(after, func(c store.Change) bool {
		c.Origin = "me"
		if strings.HasPrefix(c.ID, "other-") {
			c.Origin = "other"
		}
		return fn(c)
	})
}

func newSharedStandIn(t *testing.T) *sharedStandIn {
	t.Helper()
	db, err := badgerdb.Open(t.TempDir(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return &sharedStandIn{DB: db, wakes: make(chan struct{})}
}

func logChange(t *testing.T, db store.DB, id string) {
	t.Helper()
	if err := db.Update(context.Background(), func(tx store.Tx) error { return tx.Log(store.ChangeWing, store.ActionCreated, id) }); err != nil {
		t.Fatal(err)
	}
}

// Issue 31: on a shared store the event bus announces only the changes
// its own handle logged (spec: another daemon's writes are not
// announced), and still moves past the others'.
func TestBusAnnouncesOwnChangesOnly(t *testing.T) {
	db := newSharedStandIn(t)
	bus := NewBus(db, slog.New(slog.DiscardHandler))
	if err := bus.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer bus.Close()
	sub, err := bus.Subscribe()
	if err != nil {
		t.Fatal(err)
	}
	logChange(t, db, "other-1")
	logChange(t, db, "mine-1")
	logChange(t, db, "other-2")
	logChange(t, db, "mine-2")
	bus.Kick()
	var got []string
	timeout := time.After(5 * time.Second)
	for len(got) < 2 {
		select {
		case f := <-sub.C:
			got = append(got, string(f))
		case <-timeout:
			t.Fatalf("frames: %q", got)
		}
	}
	if !strings.Contains(got[0], `"mine-1"`) || !strings.Contains(got[1], `"mine-2"`) {
		t.Fatalf("frames: %q", got)
	}
	select {
	case f := <-sub.C:
		t.Fatalf("another handle's change announced: %s", f)
	case <-time.After(200 * time.Millisecond):
	}
	if pos := bus.f.Position(); pos != 4 {
		t.Fatalf("the bus stopped at %d, not past the others' changes (4)", pos)
	}
}

// Each wake of a shared store's watcher kicks every follower, and the
// dispatcher only when the change log moved since the last wake; on a
// store that is not shared WatchOthers does nothing.
func TestWatchOthersKicks(t *testing.T) {
	db := newSharedStandIn(t)
	var followers, dispatcher atomic.Int32
	stop := WatchOthers(db, slog.New(slog.DiscardHandler), []func(){func() { followers.Add(1) }, func() { followers.Add(1) }},
		func() { dispatcher.Add(1) })
	wake := func(wantFollowers, wantDispatcher int32) {
		t.Helper()
		db.wakes <- struct{}{}
		deadline := time.Now().Add(5 * time.Second)
		for followers.Load() != wantFollowers || dispatcher.Load() != wantDispatcher {
			if time.Now().After(deadline) {
				t.Fatalf("followers kicked %d times (want %d), dispatcher %d (want %d)", followers.Load(), wantFollowers, dispatcher.Load(), wantDispatcher)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	logChange(t, db, "other-1")
	wake(2, 1)
	wake(4, 1) // nothing new: the dispatcher is left alone
	logChange(t, db, "other-2")
	wake(6, 2)
	stop()

	plain, err := badgerdb.Open(t.TempDir(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	WatchOthers(plain, slog.New(slog.DiscardHandler), []func(){func() { t.Error("kicked") }}, nil)()
}
