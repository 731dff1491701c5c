package actors

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/loci-dev/loci/index/lexical"
	"github.com/loci-dev/loci/store"
)

// Indexer keeps the lexical index in step with the store: it follows the
// change log from the index's last applied sequence, after every commit
// (the writer's hook) and once a second, and rebuilds the index from the
// drawers when it was missing or unreadable.
type Indexer struct {
	DB  store.DB
	Lex *lexical.Index
	Log *slog.Logger

	kick   chan struct{} // a commit: catch up after indexDelay
	urgent chan struct{} // a search waits: catch up now
	stop   chan struct{}
	done   chan struct{}

	mu      sync.Mutex
	applied *sync.Cond
	failed  error
}

// indexBatch bounds the change-log entries applied in one index batch.
const indexBatch = 2000

// indexDelay gathers the commits of a burst into one index batch: Bleve
// pays for every batch (a segment, later merged), and indexing after each
// group commit halved the write throughput of a loaded daemon. A search
// does not wait for it (Sync asks for an urgent catch-up).
const indexDelay = time.Second

// NewIndexer builds the follower; Start runs it.
func NewIndexer(db store.DB, lex *lexical.Index, log *slog.Logger) *Indexer {
	ix := &Indexer{DB: db, Lex: lex, Log: log.With("component", "indexer"),
		kick: make(chan struct{}, 1), urgent: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	ix.applied = sync.NewCond(&ix.mu)
	return ix
}

// Start rebuilds when needed and follows the change log until Stop.
func (ix *Indexer) Start() {
	go ix.run()
}

// Kick asks for a catch-up (non-blocking).
func (ix *Indexer) Kick() {
	select {
	case ix.kick <- struct{}{}:
	default:
	}
}

// Stop ends the follower after the batch in progress.
func (ix *Indexer) Stop() {
	close(ix.stop)
	<-ix.done
}

func (ix *Indexer) run() {
	defer close(ix.done)
	if ix.Lex.Rebuilt {
		t0 := time.Now()
		n, err := ix.rebuild()
		if err != nil {
			ix.Log.Error("rebuilding the lexical index failed; search may miss drawers", "err", err)
		} else {
			ix.Log.Info("lexical index rebuilt from the store", "drawers", n, "took", time.Since(t0).Round(time.Millisecond))
		}
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		if err := ix.catchUp(); err != nil {
			ix.Log.Warn("indexing failed; retrying", "err", err)
		}
		select {
		case <-ix.stop:
			return
		case <-ix.urgent:
		case <-tick.C:
		case <-ix.kick:
			// Let the burst gather, unless a search is waiting.
			t := time.NewTimer(indexDelay)
			select {
			case <-ix.stop:
				t.Stop()
				return
			case <-ix.urgent:
			case <-t.C:
			}
			t.Stop()
		}
	}
}

func docOf(d *store.Drawer) lexical.Doc {
	return lexical.Doc{ID: d.ID, Content: d.Content, WingID: d.WingID, RoomID: d.RoomID, Tags: d.Tags,
		Kind: d.Source.Kind}
}

// rebuild indexes every stored drawer of one snapshot and records the
// snapshot's last sequence.
func (ix *Indexer) rebuild() (int, error) {
	n := 0
	err := ix.DB.View(context.Background(), func(r store.Reader) error {
		seq, err := r.LastSeq()
		if err != nil {
			return err
		}
		var batch []lexical.Doc
		var ierr error
		err = r.EachDrawer(func(d *store.Drawer) bool {
			batch = append(batch, docOf(d))
			if len(batch) == indexBatch {
				// Sequence 0 until the end: a rebuild cut short replays
				// the log from the start.
				ierr = ix.Lex.Apply(batch, nil, 0)
				n += len(batch)
				batch = batch[:0]
			}
			return ierr == nil
		})
		if err != nil {
			return err
		}
		if ierr != nil {
			return ierr
		}
		n += len(batch)
		return ix.Lex.Apply(batch, nil, seq)
	})
	ix.signal(err)
	return n, err
}

// catchUp applies the change log after the index's sequence.
func (ix *Indexer) catchUp() error {
	for {
		from := ix.Lex.Seq()
		last := from
		var docs []lexical.Doc
		var deletes []string
		err := ix.DB.View(context.Background(), func(r store.Reader) error {
			seen := map[string]bool{}
			var ids []string
			err := r.Changes(from, func(c store.Change) bool {
				last = c.Seq
				if c.Kind == store.ChangeDrawer && !seen[c.ID] {
					seen[c.ID] = true
					ids = append(ids, c.ID)
				}
				return last-from < indexBatch
			})
			if err != nil {
				return err
			}
			// The drawer as it is now stands for every change to it.
			for _, id := range ids {
				d, err := r.Drawer(id)
				if err != nil {
					return err
				}
				if d == nil {
					deletes = append(deletes, id)
				} else {
					docs = append(docs, docOf(d))
				}
			}
			return nil
		})
		if err == nil && last > from {
			err = ix.Lex.Apply(docs, deletes, last)
		}
		ix.signal(err)
		if err != nil || last == from {
			return err
		}
	}
}

func (ix *Indexer) signal(err error) {
	ix.mu.Lock()
	ix.failed = err
	ix.applied.Broadcast()
	ix.mu.Unlock()
}

// Sync waits, up to timeout, until the index has applied every change up
// to target (the change log's last sequence when the search began), so
// that a search sees the caller's own writes.
func (ix *Indexer) Sync(ctx context.Context, target uint64, timeout time.Duration) {
	if ix.Lex.Seq() >= target {
		return
	}
	select {
	case ix.urgent <- struct{}{}:
	default:
	}
	deadline := time.Now().Add(timeout)
	timer := time.AfterFunc(timeout, func() {
		ix.mu.Lock()
		ix.applied.Broadcast()
		ix.mu.Unlock()
	})
	defer timer.Stop()
	ix.mu.Lock()
	defer ix.mu.Unlock()
	for ix.Lex.Seq() < target && time.Now().Before(deadline) && ctx.Err() == nil {
		ix.applied.Wait()
	}
}
