package actors

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/loci-dev/loci/store"
)

// FollowerSpec defines a change-log follower: what it does once before it
// follows, what it makes of each batch of changes, and how eagerly it
// catches up.
type FollowerSpec struct {
	// Name names the follower in logs.
	Name string
	// Open runs once in the follower's goroutine before it follows (a
	// rebuild, a load) and returns the sequence it has applied up to. A
	// failure is logged and retried after a wait.
	Open func(ctx context.Context) (uint64, error)
	// Apply reads a batch of changes (oldest first, none empty) in r, a read
	// transaction of the store, and returns the work that applies it, run
	// after the transaction ends (nil: nothing more to do). The work must
	// persist the batch's last sequence if the follower's position survives
	// a restart. An error leaves the position where it was: the batch is
	// read again at the next catch-up.
	Apply func(r store.Reader, batch []store.Change) (work func() error, err error)
	// Batch bounds the changes of one batch (default 1,000).
	Batch int
	// Delay gathers the commits of a burst: after a kick the follower waits
	// this long before it catches up, unless a Sync is waiting.
	Delay time.Duration
	// Every also catches up this often (0: only when kicked), then calls
	// Tick.
	Every time.Duration
	// Tick runs after the periodic catch-up (a save, a deferred action).
	Tick func()
}

// Follower applies the change log to one consumer (the lexical index, the
// vector indexes, the event bus): one goroutine that it owns, started by
// Start and ended by Stop, that catches up when kicked (every commit kicks
// it) and on its schedule. A panic in the consumer is recovered and logged,
// and the follower starts again after a growing wait; it never stops the
// daemon. Sync lets a reader wait until a sequence is applied, woken by the
// follower, not by polling.
type Follower struct {
	spec FollowerSpec
	db   store.DB
	log  *slog.Logger

	pos    atomic.Uint64
	opened bool

	kick   chan struct{}
	urgent chan struct{}
	stop   chan struct{}
	done   chan struct{}
	once   sync.Once

	mu sync.Mutex
	// moved is closed (and replaced) whenever the position advances or a
	// catch-up fails, waking Sync.
	moved  chan struct{}
	failed error
}

// followerRestart bounds the wait before a follower that panicked starts
// again.
const (
	followerRestartMin = 100 * time.Millisecond
	followerRestartMax = 30 * time.Second
)

// NewFollower makes a follower of db's change log; Start runs it.
func NewFollower(db store.DB, log *slog.Logger, spec FollowerSpec) *Follower {
	if spec.Batch <= 0 {
		spec.Batch = 1000
	}
	return &Follower{spec: spec, db: db, log: log.With("follower", spec.Name),
		kick: make(chan struct{}, 1), urgent: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
		moved: make(chan struct{})}
}

// Start runs the follower in its own goroutine.
func (f *Follower) Start() { go f.supervise() }

// Kick asks for a catch-up; it never blocks.
func (f *Follower) Kick() {
	select {
	case f.kick <- struct{}{}:
	default:
	}
}

// Position is the last sequence the follower applied.
func (f *Follower) Position() uint64 { return f.pos.Load() }

// Err is the last catch-up's failure, nil once one succeeds.
func (f *Follower) Err() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.failed
}

// Stop ends the follower after the batch in progress, waiting at most
// until ctx ends; it is safe to call twice.
func (f *Follower) Stop(ctx context.Context) {
	f.once.Do(func() { close(f.stop) })
	select {
	case <-f.done:
	case <-ctx.Done():
		f.log.Warn("the follower did not stop in time")
	}
}

// Sync waits, up to timeout, until the follower has applied every change
// up to target (the change log's last sequence when a search began), so
// that a reader sees its own writes, and reports whether it had. A
// waiting Sync cuts a kick's Delay short. It returns early when ctx ends
// or a catch-up fails.
func (f *Follower) Sync(ctx context.Context, target uint64, timeout time.Duration) bool {
	if f.pos.Load() >= target {
		return true
	}
	select {
	case f.urgent <- struct{}{}:
	default:
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		f.mu.Lock()
		moved, failed := f.moved, f.failed
		f.mu.Unlock()
		if f.pos.Load() >= target {
			return true
		}
		if failed != nil {
			return false
		}
		select {
		case <-moved:
		case <-timer.C:
			return f.pos.Load() >= target
		case <-ctx.Done():
			return false
		case <-f.done:
			return f.pos.Load() >= target
		}
	}
}

// signal records a catch-up's outcome and wakes the waiting Syncs.
func (f *Follower) signal(err error) {
	f.mu.Lock()
	f.failed = err
	close(f.moved)
	f.moved = make(chan struct{})
	f.mu.Unlock()
}

// supervise runs the follower, starting it again after a panic.
func (f *Follower) supervise() {
	defer close(f.done)
	wait := followerRestartMin
	for {
		if !f.runSafely() {
			return
		}
		select {
		case <-f.stop:
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, followerRestartMax)
	}
}

// runSafely runs the follower until it stops (false) or panics (true).
func (f *Follower) runSafely() (panicked bool) {
	defer func() {
		if p := recover(); p != nil {
			f.log.Error("the follower panicked; it starts again", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			f.signal(fmt.Errorf("the %s follower panicked: %v", f.spec.Name, p))
			panicked = true
		}
	}()
	f.run()
	return false
}

func (f *Follower) run() {
	var tick <-chan time.Time
	if f.spec.Every > 0 {
		t := time.NewTicker(f.spec.Every)
		defer t.Stop()
		tick = t.C
	}
	retry, wait := time.NewTimer(0), time.Second
	defer retry.Stop()
	for !f.opened {
		select {
		case <-f.stop:
			return
		case <-retry.C:
		}
		pos, err := uint64(0), error(nil)
		if f.spec.Open != nil {
			pos, err = f.spec.Open(context.Background())
		}
		if err != nil {
			f.log.Error("opening the follower failed; retrying", "err", err)
			f.signal(err)
			retry.Reset(wait)
			wait = min(2*wait, followerRestartMax)
			continue
		}
		f.pos.Store(pos)
		f.opened = true
		f.signal(nil)
	}
	failing := false
	for {
		// A failure is logged once until a catch-up succeeds again (a
		// shared store out of reach fails every wake, each second).
		switch err := f.catchUp(); {
		case err != nil && !failing:
			failing = true
			f.log.Warn("following the change log failed; retrying at the next kick", "err", err)
		case err != nil:
			f.log.Debug("following the change log failed again", "err", err)
		case failing:
			failing = false
			f.log.Info("following the change log again")
		}
		select {
		case <-f.stop:
			return
		case <-f.urgent:
		case <-tick:
			if f.spec.Tick != nil {
				f.spec.Tick()
			}
		case <-f.kick:
			if f.spec.Delay > 0 {
				t := time.NewTimer(f.spec.Delay)
				select {
				case <-f.stop:
					t.Stop()
					return
				case <-f.urgent:
				case <-t.C:
				}
				t.Stop()
			}
		}
	}
}

// catchUp applies the change log after the position, batch by batch.
func (f *Follower) catchUp() error {
	for {
		from := f.pos.Load()
		var work func() error
		var last uint64
		err := f.db.View(context.Background(), func(r store.Reader) error {
			batch := make([]store.Change, 0, min(f.spec.Batch, 64))
			err := r.Changes(from, func(c store.Change) bool {
				batch = append(batch, c)
				return len(batch) < f.spec.Batch
			})
			if err != nil || len(batch) == 0 {
				return err
			}
			last = batch[len(batch)-1].Seq
			work, err = f.spec.Apply(r, batch)
			return err
		})
		if err == nil && work != nil {
			err = work()
		}
		if err != nil {
			f.signal(err)
			return err
		}
		if last == 0 {
			f.signal(nil)
			return nil
		}
		f.pos.Store(last)
		f.signal(nil)
	}
}
