package actors

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/loci-dev/loci/index/lexical"
	"github.com/loci-dev/loci/store"
)

// Indexer keeps the lexical index in step with the store: a follower of
// the change log from the index's last applied sequence, kicked by every
// commit and catching up once a second, that first rebuilds the index from
// the drawers when it was missing or unreadable.
type Indexer struct {
	DB  store.DB
	Lex *lexical.Index
	Log *slog.Logger

	f *Follower
}

// indexBatch bounds the change-log entries applied in one batch by a
// rebuild and by the vector follower.
const indexBatch = 2000

// lexBatch bounds the change-log entries the lexical follower applies in
// one Bleve batch: a search that waits for its own writes waits for the
// batch in progress, and 500 drawers take about 45 ms (2,000 took 210 ms)
// at the same throughput (BenchmarkIndexing: 11,400 documents a second in
// batches of 500, 9,400 in batches of 2,000).
const lexBatch = 500

// indexDelay gathers the commits of a burst into one index batch: Bleve
// pays for every batch (a segment, later merged), and indexing after each
// group commit halved the write throughput of a loaded daemon. A search
// does not wait for it (Sync cuts it short).
const indexDelay = time.Second

// NewIndexer builds the follower; Start runs it.
func NewIndexer(db store.DB, lex *lexical.Index, log *slog.Logger) *Indexer {
	ix := &Indexer{DB: db, Lex: lex, Log: log.With("component", "indexer")}
	ix.f = NewFollower(db, ix.Log, FollowerSpec{Name: "lexical", Open: ix.open, Apply: ix.apply,
		Batch: lexBatch, Delay: indexDelay, Every: time.Second})
	return ix
}

// Start rebuilds when needed and follows the change log until Stop.
func (ix *Indexer) Start() { ix.f.Start() }

// Kick asks for a catch-up (non-blocking).
func (ix *Indexer) Kick() { ix.f.Kick() }

// Position is the change-log sequence the lexical index has applied.
func (ix *Indexer) Position() uint64 { return ix.f.Position() }

// Stop ends the follower after the batch in progress.
func (ix *Indexer) Stop(ctx context.Context) { ix.f.Stop(ctx) }

// Sync waits, up to timeout, until the index has applied every change up
// to target (the change log's last sequence when the search began), so
// that a search sees the caller's own writes; it reports whether it had.
func (ix *Indexer) Sync(ctx context.Context, target uint64, timeout time.Duration) bool {
	return ix.f.Sync(ctx, target, timeout)
}

// DocFreqs answers embed.DocFreqs from the lexical index as it is: it
// never waits (a search's query is embedded with it).
func (ix *Indexer) DocFreqs(words []string) (uint64, []uint64) {
	return ix.Lex.DocFreqs(words)
}

// SettleWait bounds how long an embed job's batch waits for the lexical
// index to reach the change log's end before its words are weighed.
const SettleWait = 2 * time.Second

// Settle implements embed.Settler: it waits up to SettleWait for the
// lexical index to apply the change log up to now, so that a batch of
// stored drawers (embed.ForStored) is embedded with the frequencies of
// the palace that holds them, not of the palace before a burst of filing
// (R@10 0.43 instead of 0.53). Only embed jobs wait: before, every
// embedding did, a search's query too (issue 38, point 8).
func (ix *Indexer) Settle(ctx context.Context) {
	var last uint64
	_ = ix.DB.View(ctx, func(r store.Reader) error { last, _ = r.LastSeq(); return nil })
	ix.Sync(ctx, last, SettleWait)
}

// open rebuilds a missing or unreadable index, then follows from its
// sequence.
func (ix *Indexer) open(context.Context) (uint64, error) {
	if ix.Lex.Rebuilt {
		t0 := time.Now()
		n, err := ix.rebuild()
		if err != nil {
			return 0, fmt.Errorf("rebuilding the lexical index: %w", err)
		}
		ix.Lex.Rebuilt = false
		ix.Log.Info("lexical index rebuilt from the store", "drawers", n, "took", time.Since(t0).Round(time.Millisecond))
	}
	return ix.Lex.Seq(), nil
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
	return n, err
}

// apply reads the drawers a batch changed, as they are now (the drawer as
// it is stands for every change to it), and indexes them with the batch's
// last sequence.
func (ix *Indexer) apply(r store.Reader, batch []store.Change) (func() error, error) {
	seen := map[string]bool{}
	var ids []string
	for _, c := range batch {
		if c.Kind == store.ChangeDrawer && !seen[c.ID] {
			seen[c.ID] = true
			ids = append(ids, c.ID)
		}
	}
	ds, err := r.DrawersByID(ids)
	if err != nil {
		return nil, err
	}
	var docs []lexical.Doc
	var deletes []string
	for i, d := range ds {
		if d == nil {
			deletes = append(deletes, ids[i])
		} else {
			docs = append(docs, docOf(d))
		}
	}
	last := batch[len(batch)-1].Seq
	return func() error { return ix.Lex.Apply(docs, deletes, last) }, nil
}
