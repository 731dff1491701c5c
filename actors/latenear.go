package actors

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/loci-dev/loci/store"
)

// LateNear links the near duplicates of drawers written while their room's
// near-duplicate index was still loading in the background (a write into a
// big room right after a start answers at once instead of waiting for the
// load). The store hands their ids over once the index is loaded; LateNear
// judges them through the writer, a few per transaction so that user writes
// interleave, and records the similar_to links the write would have
// recorded. Ids still queued at shutdown are dropped: such drawers keep
// their exact and normalised links, which were made at the write.
type LateNear struct {
	Sys   *System
	Dedup store.Dedup
	Log   *slog.Logger

	mu       sync.Mutex
	queue    []string
	inflight int        // queued or being judged
	idle     *sync.Cond // signalled when inflight drops to 0
	kick     chan struct{}
	stop     chan struct{}
	done     chan struct{}
}

// lateBatch is how many drawers one writer transaction judges.
const lateBatch = 16

// NewLateNear makes the worker; Start runs it.
func NewLateNear(sys *System, dd store.Dedup, log *slog.Logger) *LateNear {
	l := &LateNear{Sys: sys, Dedup: dd, Log: log, kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	l.idle = sync.NewCond(&l.mu)
	return l
}

// finished counts n ids as done.
func (l *LateNear) finished(n int) {
	l.mu.Lock()
	l.inflight -= n
	if l.inflight <= 0 {
		l.inflight = 0
		l.idle.Broadcast()
	}
	l.mu.Unlock()
}

// Add queues drawer ids; it never blocks (the store calls it after a
// commit).
func (l *LateNear) Add(ids []string) {
	l.mu.Lock()
	l.queue = append(l.queue, ids...)
	l.inflight += len(ids)
	l.mu.Unlock()
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

// Wait returns once every queued id has been judged (for tests).
func (l *LateNear) Wait() {
	l.mu.Lock()
	for l.inflight > 0 {
		l.idle.Wait()
	}
	l.mu.Unlock()
}

// Start runs the worker until Stop.
func (l *LateNear) Start() { go l.run() }

// Stop ends the worker after the batch in hand.
func (l *LateNear) Stop() {
	close(l.stop)
	<-l.done
}

func (l *LateNear) run() {
	defer close(l.done)
	linked, judged := 0, 0
	for {
		select {
		case <-l.stop:
			l.drop()
			return
		case <-l.kick:
		}
		for {
			l.mu.Lock()
			batch := l.queue[:min(len(l.queue), lateBatch)]
			l.queue = l.queue[len(batch):]
			l.mu.Unlock()
			if len(batch) == 0 {
				break
			}
			n, err := l.judge(batch)
			if err != nil {
				l.Log.Error("judging near duplicates after an index load failed; these drawers keep their exact and normalised links only",
					"drawers", len(batch), "err", err)
			}
			linked += n
			judged += len(batch)
			l.finished(len(batch))
			select {
			case <-l.stop:
				l.drop()
				return
			default:
			}
		}
		l.Log.Info("near duplicates judged after an index load", "drawers", judged, "links", linked)
	}
}

// drop forgets what is still queued at shutdown.
func (l *LateNear) drop() {
	l.mu.Lock()
	n := len(l.queue)
	l.queue = nil
	l.mu.Unlock()
	if n > 0 {
		l.Log.Warn("near-duplicate judgments left at shutdown", "drawers", n)
	}
	l.finished(n)
}

// judge runs LinkNear for a batch in one writer transaction; a panic is
// the batch's failure, not the daemon's.
func (l *LateNear) judge(batch []string) (n int, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = panicError(p)
		}
	}()
	// The judgment of drawers already written: small, and it passes the
	// disk's gate so that a full disk loses no similar_to link.
	_, err = l.Sys.Write(Bookkeeping(context.Background()), func(tx store.Tx) (any, error) {
		n = 0
		for _, id := range batch {
			k, err := store.LinkNear(tx, id, l.Dedup)
			if err != nil {
				return nil, err
			}
			n += k
		}
		return nil, nil
	})
	return n, err
}

// panicError turns a recovered panic into an error.
func panicError(p any) error { return fmt.Errorf("panic: %v", p) }
