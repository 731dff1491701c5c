package actors

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/loci-dev/loci/store"
)

// SubscriptionBuffer is how many frames a subscriber may fall behind
// before it misses some and is sent resync.
const SubscriptionBuffer = 256

// Event is one change notice: identifiers and kinds only, never content.
type Event struct {
	Kind    string `json:"kind"`
	Action  string `json:"action"`
	ID      string `json:"id,omitempty"`
	JobKind string `json:"job_kind,omitempty"`
	Status  string `json:"status,omitempty"`
}

// Frame renders an event as one server-sent-events frame, named by its
// kind.
func (e Event) Frame() []byte {
	b, _ := json.Marshal(e)
	out := make([]byte, 0, len(b)+len(e.Kind)+16)
	out = append(out, "event: "...)
	out = append(out, e.Kind...)
	out = append(out, "\ndata: "...)
	out = append(out, b...)
	return append(out, "\n\n"...)
}

// Subscription is one listener of the bus: a bounded channel of frames.
// When it is full, frames are dropped and Missed is set: the listener
// sends resync.
type Subscription struct {
	C      chan []byte
	Missed atomic.Bool
	// Done is closed when the bus closes (the daemon stops).
	Done chan struct{}
}

// Subscribe's refusals.
var (
	// ErrBusClosed: the daemon is stopping.
	ErrBusClosed = errors.New("the event bus is closed")
	// ErrBusFull: Max subscribers are listening.
	ErrBusFull = errors.New("the event bus has its most subscribers")
)

// Bus publishes change notices after they are saved: it follows the change
// log (kicked by every commit) and fans each entry out to the subscribers
// without ever waiting for one. It runs beside the writer, which it never
// blocks.
type Bus struct {
	DB  store.DB
	Log *slog.Logger
	// Max caps the subscribers (0: no cap); set before the first
	// Subscribe.
	Max int

	mu     sync.Mutex
	subs   map[*Subscription]struct{}
	closed bool
	done   chan struct{} // closed by Close: subscriptions end

	f *Follower
	// origin is this daemon's store handle on a shared store
	// (store.Watcher's Origin): the bus announces only the changes it
	// logged ("" on a store one process holds: all of them).
	origin string
}

// NewBus makes a bus; Start runs its follower.
func NewBus(db store.DB, log *slog.Logger) *Bus {
	b := &Bus{DB: db, Log: log.With("component", "events"), subs: map[*Subscription]struct{}{}, done: make(chan struct{})}
	b.f = NewFollower(db, b.Log, FollowerSpec{Name: "events", Apply: b.apply})
	if w, ok := db.(store.Watcher); ok {
		b.origin = w.Origin()
	}
	return b
}

// Start follows the change log from its current end: only changes saved
// from now on are announced.
func (b *Bus) Start(ctx context.Context) error {
	var last uint64
	err := b.DB.View(ctx, func(r store.Reader) error {
		var err error
		last, err = r.LastSeq()
		return err
	})
	if err != nil {
		return err
	}
	b.f.spec.Open = func(context.Context) (uint64, error) { return last, nil }
	b.f.Start()
	return nil
}

// Kick asks for a catch-up (the writer's commit hook; never blocks).
func (b *Bus) Kick() { b.f.Kick() }

// Subscribe adds a listener; ErrBusClosed once the bus is closed,
// ErrBusFull while Max listeners are subscribed.
func (b *Bus) Subscribe() (*Subscription, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, ErrBusClosed
	}
	if b.Max > 0 && len(b.subs) >= b.Max {
		return nil, ErrBusFull
	}
	s := &Subscription{C: make(chan []byte, SubscriptionBuffer), Done: b.done}
	b.subs[s] = struct{}{}
	return s, nil
}

// Unsubscribe removes a listener.
func (b *Bus) Unsubscribe(s *Subscription) {
	b.mu.Lock()
	delete(b.subs, s)
	b.mu.Unlock()
}

// Subscribers is the number of listeners.
func (b *Bus) Subscribers() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.subs)
}

// Close ends every subscription (the streams end) and the follower.
func (b *Bus) Close() {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return
	}
	b.closed = true
	close(b.done)
	b.mu.Unlock()
	b.f.Stop(context.Background())
}

// Publish sends a frame to every subscriber that has room; the others miss
// it and are marked for resync.
func (b *Bus) Publish(frame []byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for s := range b.subs {
		select {
		case s.C <- frame:
		default:
			s.Missed.Store(true)
		}
	}
}

// apply turns a batch of changes into frames, published once the read
// ends.
func (b *Bus) apply(r store.Reader, batch []store.Change) (func() error, error) {
	var frames [][]byte
	for _, c := range batch {
		if b.origin != "" && c.Origin != b.origin {
			// Another daemon's write: its own bus announces it (spec: the
			// event stream is per daemon).
			continue
		}
		if e, ok := eventOf(r, c); ok {
			frames = append(frames, e.Frame())
		}
	}
	return func() error {
		for _, f := range frames {
			b.Publish(f)
		}
		return nil
	}, nil
}

// eventOf maps a change-log entry to its notice; entries the event table
// does not name (similarity links, vectors) are not announced.
func eventOf(r store.Reader, c store.Change) (Event, bool) {
	action := c.Action
	if action != store.ActionCreated && action != store.ActionDeleted {
		action = store.ActionUpdated
	}
	switch c.Kind {
	case store.ChangeWing, store.ChangeRoom, store.ChangeDrawer:
		return Event{Kind: c.Kind, Action: action, ID: c.ID}, true
	case store.ChangeEntity:
		return Event{Kind: store.ChangeEntity, Action: action, ID: c.ID}, true
	case store.ChangeTrigger:
		// The trigger's name and what happened: queued, coalesced, failed
		// or changed.
		return Event{Kind: store.ChangeTrigger, Action: store.ActionUpdated, ID: c.ID, Status: c.Action}, true
	case store.ChangeJob:
		// The status the change left (the record may have moved on since).
		e := Event{Kind: "job", Action: action, ID: c.ID}
		switch {
		case c.Action == store.ActionCreated:
			e.Status = store.JobQueued
		case c.Action == "claimed" || c.Action == "progress":
			e.Status = store.JobRunning
		case slices.Contains(store.JobStatuses, c.Action):
			e.Status = c.Action
		}
		if j, err := r.Job(c.ID); err == nil && j != nil {
			e.JobKind = j.Kind
			if e.Status == "" {
				e.Status = j.Status
			}
		}
		return e, true
	}
	return Event{}, false
}
