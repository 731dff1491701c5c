package actors

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/loci-dev/loci/store"
)

// changeLog is a store whose only readable part is a change log.
type changeLog struct {
	store.DB
	mu      sync.Mutex
	changes []store.Change
}

func (l *changeLog) add(n int) uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	for range n {
		l.changes = append(l.changes, store.Change{Seq: uint64(len(l.changes) + 1), Kind: store.ChangeDrawer, ID: "d"})
	}
	return uint64(len(l.changes))
}

func (l *changeLog) View(_ context.Context, fn func(store.Reader) error) error {
	return fn(logReader{l: l})
}

type logReader struct {
	store.Reader
	l *changeLog
}

func (r logReader) Changes(after uint64, fn func(store.Change) bool) error {
	r.l.mu.Lock()
	cs := append([]store.Change(nil), r.l.changes...)
	r.l.mu.Unlock()
	for _, c := range cs {
		if c.Seq > after && !fn(c) {
			break
		}
	}
	return nil
}

// applied records what a follower applied.
type applied struct {
	mu    sync.Mutex
	seqs  []uint64
	fail  error
	panic bool
}

func (a *applied) apply(_ store.Reader, batch []store.Change) (func() error, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.panic {
		a.panic = false
		panic("consumer broke")
	}
	if a.fail != nil {
		return nil, a.fail
	}
	return func() error {
		a.mu.Lock()
		defer a.mu.Unlock()
		for _, c := range batch {
			a.seqs = append(a.seqs, c.Seq)
		}
		return nil
	}, nil
}

func (a *applied) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.seqs)
}

// A kick is gathered for Delay, but a Sync cuts it short and returns as
// soon as its sequence is applied: woken, not polling. Batches are
// bounded and every change is applied once, in order.
func TestFollowerSyncCutsTheDelayShort(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, a := &changeLog{}, &applied{}
		f := NewFollower(l, slog.New(slog.DiscardHandler), FollowerSpec{Name: "t", Apply: a.apply, Batch: 7, Delay: time.Hour})
		f.Start()
		defer f.Stop(context.Background())
		synctest.Wait()
		target := l.add(20)
		f.Kick()
		t0 := time.Now()
		f.Sync(context.Background(), target, time.Minute)
		if f.Position() != target || time.Since(t0) >= time.Minute {
			t.Fatalf("position %d after %s, want %d at once", f.Position(), time.Since(t0), target)
		}
		if a.count() != 20 {
			t.Fatalf("applied %d changes, want 20", a.count())
		}
		for i, s := range a.seqs {
			if s != uint64(i+1) {
				t.Fatalf("applied %v, want 1..20 in order", a.seqs)
			}
		}
		// Nothing new: a Sync on what is applied returns at once; one on a
		// sequence never written waits its timeout.
		t1 := time.Now()
		f.Sync(context.Background(), target+1, 3*time.Second)
		if time.Since(t1) != 3*time.Second {
			t.Fatalf("a Sync past the log's end returned after %s, want its 3 s timeout", time.Since(t1))
		}
	})
}

// A consumer that panics does not stop the follower (nor the daemon): it
// starts again after a wait, and the batch is applied then.
func TestFollowerRecoversFromAPanic(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, a := &changeLog{}, &applied{panic: true}
		f := NewFollower(l, slog.New(slog.DiscardHandler), FollowerSpec{Name: "t", Apply: a.apply})
		f.Start()
		defer f.Stop(context.Background())
		target := l.add(3)
		f.Kick()
		synctest.Wait()
		if f.Err() == nil || f.Position() != 0 {
			t.Fatalf("after the panic: err %v, position %d", f.Err(), f.Position())
		}
		time.Sleep(followerRestartMin)
		synctest.Wait()
		if f.Position() != target || a.count() != 3 || f.Err() != nil {
			t.Fatalf("after the restart: position %d, applied %d, err %v", f.Position(), a.count(), f.Err())
		}
	})
}

// A batch that fails is read again at the next catch-up; a Sync waiting
// for it returns at once with the failure instead of waiting its timeout.
func TestFollowerRetriesAFailedBatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, a := &changeLog{}, &applied{fail: errors.New("disk full")}
		f := NewFollower(l, slog.New(slog.DiscardHandler), FollowerSpec{Name: "t", Apply: a.apply, Every: time.Second})
		f.Start()
		defer f.Stop(context.Background())
		target := l.add(2)
		t0 := time.Now()
		f.Sync(context.Background(), target, time.Minute)
		if f.Err() == nil || time.Since(t0) >= time.Minute {
			t.Fatalf("Sync on a failing follower: err %v after %s", f.Err(), time.Since(t0))
		}
		a.mu.Lock()
		a.fail = nil
		a.mu.Unlock()
		time.Sleep(time.Second) // the next periodic catch-up
		synctest.Wait()
		if f.Position() != target || a.count() != 2 {
			t.Fatalf("after the retry: position %d, applied %d", f.Position(), a.count())
		}
	})
}

// Open runs before the follower follows, and is retried until it works;
// the follower then starts from the position it returned.
func TestFollowerOpensFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l, a := &changeLog{}, &applied{}
		l.add(5)
		tries := 0
		f := NewFollower(l, slog.New(slog.DiscardHandler), FollowerSpec{Name: "t", Apply: a.apply,
			Open: func(context.Context) (uint64, error) {
				if tries++; tries < 3 {
					return 0, errors.New("not yet")
				}
				return 4, nil
			}})
		f.Start()
		defer f.Stop(context.Background())
		time.Sleep(time.Minute)
		synctest.Wait()
		if tries != 3 || f.Position() != 5 || a.count() != 1 || a.seqs[0] != 5 {
			t.Fatalf("tries %d, position %d, applied %v", tries, f.Position(), a.seqs)
		}
	})
}

func (r logReader) LastSeq() (uint64, error) {
	r.l.mu.Lock()
	defer r.l.mu.Unlock()
	return uint64(len(r.l.changes)), nil
}

// created appends n drawer-created entries.
func (l *changeLog) created(n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for range n {
		l.changes = append(l.changes, store.Change{Seq: uint64(len(l.changes) + 1), Kind: store.ChangeDrawer,
			Action: store.ActionCreated, ID: "d"})
	}
}
