package actors

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/store"
)

// System is the daemon's actor tree.
type System struct {
	as     *actor.ActorSystem
	writer *actor.PID
	log    *slog.Logger

	mu     sync.RWMutex // held for reading while a write is sent
	closed bool
	// onCommit is called by the writer after every durable commit.
	onCommit atomic.Pointer[func()]
	// gate, when set, is asked before a write is sent to the writer: an
	// error refuses the write (the disk's reserve, SetGate).
	gate atomic.Pointer[func() error]
}

// SetGate sets the check every write but the job runtime's own records
// (Bookkeeping) passes before it is sent to the writer: the free-space
// reserve, so that a full disk refuses writes with
// loci::store::disk_full before space runs out. It must be cheap.
func (s *System) SetGate(fn func() error) { s.gate.Store(&fn) }

type bookkeepingKey struct{}

// Bookkeeping marks ctx's writes as the job runtime's own small records
// (claims, leases, ends of jobs, pause and cancel requests, the progress
// message of a job waiting for space): they pass the gate, taking a
// little of the reserve, so that a job on a full disk waits instead of
// losing its lease or failing.
func Bookkeeping(ctx context.Context) context.Context {
	return context.WithValue(ctx, bookkeepingKey{}, true)
}

func isBookkeeping(ctx context.Context) bool {
	b, _ := ctx.Value(bookkeepingKey{}).(bool)
	return b
}

// OnCommit sets the function the writer calls after every durable commit
// (the indexes follow the change log from there). It must not block.
func (s *System) OnCommit(fn func()) { s.onCommit.Store(&fn) }

// ActorLogLevel is the level protoactor logs at: warnings, unless loci
// logs at debug.
func ActorLogLevel(level slog.Level) slog.Level {
	if level < slog.LevelInfo {
		return level
	}
	return max(level, slog.LevelWarn)
}

// Start builds the actor tree over db. protoactor's own logging goes to
// log's handler at ActorLogLevel(level).
func Start(db store.DB, log *slog.Logger, level slog.Level) *System {
	actorLog := slog.New(levelHandler{min: ActorLogLevel(level), Handler: log.Handler()}).With("component", "protoactor")
	as := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return actorLog }))
	s := &System{as: as, log: log}
	props := actor.PropsFromProducer(func() actor.Actor {
		return &writer{db: db, log: log.With("component", "writer"), sys: s}
	})
	s.writer = as.Root.Spawn(props)
	return s
}

// Write runs fn in the writer, in a transaction shared with other waiting
// writes, and returns its result once the transaction is durable. fn must
// make every check before its first write: a function failing after it
// wrote makes the writer run the batch again without it.
func (s *System) Write(ctx context.Context, fn func(store.Tx) (any, error)) (any, error) {
	if !isBookkeeping(ctx) {
		if err := s.Gate(); err != nil {
			return nil, err
		}
	}
	req := &writeReq{fn: fn, reply: make(chan writeResp, 1)}
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return nil, fault.New(fault.ServerFailed, "the daemon is shutting down", "start it again and retry")
	}
	s.as.Root.Send(s.writer, req)
	s.mu.RUnlock()
	select {
	case r := <-req.reply:
		return r.v, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Spawn starts an actor at the root of the tree: the job dispatcher, the
// trigger supervisor.
func (s *System) Spawn(props *actor.Props) *actor.PID { return s.as.Root.Spawn(props) }

// Send delivers msg to pid, without waiting.
func (s *System) Send(pid *actor.PID, msg any) { s.as.Root.Send(pid, msg) }

// Request sends msg to pid and returns the future of its answer, failing
// after timeout.
func (s *System) Request(pid *actor.PID, msg any, timeout time.Duration) *actor.Future {
	return s.as.Root.RequestFuture(pid, msg, timeout)
}

// Poison stops pid once it has handled the messages already sent, and
// waits for it to stop.
func (s *System) Poison(pid *actor.PID) error { return s.as.Root.PoisonFuture(pid).Wait() }

// Gate asks the check SetGate set (nil: none): an error means writes
// other than Bookkeeping are refused now.
func (s *System) Gate() error {
	if g := s.gate.Load(); g != nil {
		return (*g)()
	}
	return nil
}

// committed runs the OnCommit function: the writer calls it after every
// durable commit.
func (s *System) committed() {
	if fn := s.onCommit.Load(); fn != nil {
		(*fn)()
	}
}

// Stop refuses new writes, lets the writer commit what it holds, and
// stops the tree.
func (s *System) Stop(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	done := make(chan error, 1)
	go func() { done <- s.as.Root.PoisonFuture(s.writer).Wait() }()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		err = ctx.Err()
	}
	s.as.Shutdown()
	return err
}

// levelHandler filters a handler to a minimum level.
type levelHandler struct {
	min slog.Level
	slog.Handler
}

func (h levelHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}

func (h levelHandler) WithAttrs(a []slog.Attr) slog.Handler {
	return levelHandler{h.min, h.Handler.WithAttrs(a)}
}

func (h levelHandler) WithGroup(n string) slog.Handler {
	return levelHandler{h.min, h.Handler.WithGroup(n)}
}
