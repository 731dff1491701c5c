package actors

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/store"
)

// maxBatch bounds the writes committed in one transaction.
const maxBatch = 512

type writeReq struct {
	fn    func(store.Tx) (any, error)
	reply chan writeResp
}

type writeResp struct {
	v   any
	err error
}

// flush is sent by the writer to itself after the first write of a batch:
// every write already waiting in the mailbox is ahead of it, so they all
// land in one transaction.
type flush struct{}

// writer is the one writer over the store.
type writer struct {
	db      store.DB
	log     *slog.Logger
	sys     *System
	pending []*writeReq
}

func (w *writer) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *writeReq:
		w.pending = append(w.pending, m)
		if len(w.pending) == 1 {
			c.Send(c.Self(), flush{})
		}
	case flush:
		w.flush()
	case *actor.Stopping:
		// A poison pill arrives after the writes queued before it; commit
		// what is held.
		w.flush()
	}
}

func (w *writer) flush() {
	batch := w.pending
	w.pending = nil
	for len(batch) > 0 {
		n := min(len(batch), maxBatch)
		w.commit(batch[:n])
		batch = batch[n:]
	}
}

var errRestart = errors.New("restart batch")

// maxConflictRetries bounds how often a batch the backend refused as
// conflicting is run again before its callers get the failure.
const maxConflictRetries = 5

// commit runs a batch in one transaction and answers every caller after
// the commit is durable.
func (w *writer) commit(batch []*writeReq) {
	results := make([]writeResp, len(batch))
	final := make([]bool, len(batch)) // the answer is settled: a refusal
	conflicts := 0
	for {
		dirty := -1
		err := w.db.Update(context.Background(), func(tx store.Tx) error {
			sp, _ := tx.(store.Savepointer)
			for i, r := range batch {
				if final[i] {
					continue
				}
				before := tx.Writes()
				if sp != nil {
					if err := sp.Savepoint(); err != nil {
						return err
					}
				}
				v, err := run(r.fn, tx)
				results[i] = writeResp{v, err}
				if errors.Is(err, store.ErrTxnTooBig) {
					// The batch outgrew one transaction: split it below.
					return err
				}
				if sp != nil && (err == nil || tx.Writes() == before) {
					if err := sp.ReleaseSavepoint(); err != nil {
						return err
					}
				}
				if err != nil {
					if sp != nil && tx.Writes() != before {
						// A backend with savepoints undoes the function's
						// writes alone; the batch goes on.
						if rerr := sp.RollbackToSavepoint(); rerr != nil {
							return rerr
						}
						final[i] = true
						continue
					}
					if tx.Writes() != before {
						// It wrote before failing: its writes, and what the
						// transaction keeps beside them, are in this
						// transaction, so run the batch again without it.
						dirty = i
						return errRestart
					}
					final[i] = true
				}
			}
			return nil
		})
		if errors.Is(err, errRestart) {
			final[dirty] = true
			continue
		}
		if errors.Is(err, store.ErrConflict) && conflicts < maxConflictRetries {
			// Another writer (of a shared backend) changed what this batch
			// read: nothing was kept; run it again on what is there now.
			conflicts++
			time.Sleep(time.Duration(conflicts*conflicts) * time.Millisecond)
			continue
		}
		if errors.Is(err, store.ErrTxnTooBig) {
			if len(batch) > 1 {
				half := len(batch) / 2
				w.commit(batch[:half])
				w.commit(batch[half:])
				return
			}
			err = fault.Wrap(fault.InputInvalid, store.ErrTxnTooBig, "this write is too large for one transaction",
				"write smaller content, or fewer drawers at once")
		}
		if err != nil {
			w.log.Error("commit failed", "err", err, "writes", len(batch))
			for i := range batch {
				if !final[i] {
					results[i] = writeResp{nil, fault.As(err)}
				}
			}
		}
		if err == nil && w.sys != nil {
			w.sys.committed()
		}
		break
	}
	for i, r := range batch {
		r.reply <- results[i]
	}
}

// run calls fn, turning a panic into a server failure.
func run(fn func(store.Tx) (any, error), tx store.Tx) (v any, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fault.Wrap(fault.ServerFailed, fmt.Errorf("panic: %v\n%s", p, debug.Stack()),
				"the write failed inside the daemon", "see the daemon log; report it if it repeats")
		}
	}()
	return fn(tx)
}
