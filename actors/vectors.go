package actors

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/index/embed"
	"github.com/loci-dev/loci/index/vector"
	"github.com/loci-dev/loci/store"
)

// Vectors holds one vector index per embedding profile, loaded from the
// stored vectors at start and kept in step with the change log, and the
// profiles' providers.
type Vectors struct {
	DB       store.DB
	Sys      *System
	Profiles map[string]*embed.Profile
	Default  string
	Log      *slog.Logger
	VectorOptions
	// onNewDrawers is Start's callback (see there).
	onNewDrawers func()
	// dirty: drawers were created since OnNewDrawers was last called (the
	// follower's goroutine only).
	dirty bool

	mu    sync.RWMutex
	index map[string]*vector.Index
	// serving is the profile searches use when they name none (Serving).
	serving string
	// BatchDelay pauses embed jobs after each batch (a test hook, from
	// LOCI_TEST_EMBED_DELAY: a switch of profiles observed while it runs).
	BatchDelay time.Duration
	// savedSeq is the sequence of the last saved indexes; the follower
	// saves again once saveEvery has passed with changes applied since.
	savedSeq uint64
	lastSave time.Time
	f        *Follower
}

// VectorOptions are where and how often the vector indexes are saved.
type VectorOptions struct {
	// Dir holds each profile's saved index (<profile>.vec), written at a
	// graceful stop and every SaveEvery while changes arrive, and read at
	// start; "" keeps nothing.
	Dir string
	// SaveEvery spaces the saves of a running daemon: a palace that is
	// never stopped gracefully (a crash, a kill -9) replays at most this
	// much of the change log into its graphs at the next start. A save
	// writes every vector (about 3 KB each at 768 dimensions) and blocks
	// no search. Default (0) 10 minutes.
	SaveEvery time.Duration
}

// NewVectors builds the vector side of search; Start loads it.
func NewVectors(db store.DB, sys *System, profiles map[string]*embed.Profile, def string, log *slog.Logger, opts VectorOptions) *Vectors {
	if opts.SaveEvery <= 0 {
		opts.SaveEvery = 10 * time.Minute
	}
	v := &Vectors{DB: db, Sys: sys, Profiles: profiles, Default: def, Log: log.With("component", "vectors"), VectorOptions: opts,
		index: map[string]*vector.Index{}, lastSave: time.Now(),
		dirty: true} // the start's check for missing vectors
	for name, p := range profiles {
		v.index[name] = vector.New(p.Dimension)
	}
	v.f = NewFollower(db, v.Log, FollowerSpec{Name: "vectors", Open: v.open, Apply: v.apply,
		Batch: indexBatch, Every: time.Second, Tick: v.tick})
	v.initServing()
	return v
}

// metaServing records the profile that serves searches, as
// "<name>|<identity>", so that a restart with another default keeps
// searching with it until the new default's vectors are all built.
const metaServing = "embedding/serving"

// PreviousServing is the profile that served searches when the daemon
// last ran ("" when none was recorded), read before the profiles are
// built so that a switched-away built-in profile can still serve.
func PreviousServing(ctx context.Context, db store.DB) string {
	raw, ok, err := db.GetMeta(ctx, metaServing)
	if err != nil || !ok {
		return ""
	}
	name, _, _ := strings.Cut(raw, "|")
	return name
}

// initServing picks the serving profile: the one recorded, while it is
// still configured with the same identity and the default differs (a
// switch in progress: the new default is built in the background, as a
// shadow, by the embed jobs), else the default.
func (v *Vectors) initServing() {
	v.serving = v.Default
	if v.Default == "" || v.Profiles[v.Default] == nil {
		return
	}
	raw, ok, err := v.DB.GetMeta(context.Background(), metaServing)
	if err == nil && ok {
		name, id, _ := strings.Cut(raw, "|")
		if p := v.Profiles[name]; p != nil && name != v.Default && identity(p) == id {
			v.serving = name
			v.Log.Info("switching the default embedding profile: searches use the previous one until the new one's vectors are built",
				"serving", name, "building", v.Default)
		}
	}
	v.recordServing()
}

func (v *Vectors) recordServing() {
	if p := v.Profiles[v.serving]; p != nil {
		if err := v.DB.PutMeta(context.Background(), metaServing, v.serving+"|"+identity(p)); err != nil {
			v.Log.Warn("recording the serving embedding profile failed", "err", err)
		}
	}
}

// Serving is the profile searches use when they name none: the default,
// or during a switch of the default the previous one (Switching).
func (v *Vectors) Serving() string {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return v.serving
}

// Switching reports a switch of the default profile in progress: the
// profile serving searches and the one being built.
func (v *Vectors) Switching() (from, to string, ok bool) {
	s := v.Serving()
	return s, v.Default, s != v.Default
}

// maybeSwap ends a switch once the new default holds a vector for every
// stored drawer: searches use it from then on (one assignment under the
// lock, so a search sees one profile or the other, never a mix).
func (v *Vectors) maybeSwap() {
	from, to, ok := v.Switching()
	if !ok {
		return
	}
	var stored int
	if err := v.DB.View(context.Background(), func(r store.Reader) error {
		c, err := r.Counts()
		stored = c.DrawersStored
		return err
	}); err != nil {
		return
	}
	if ix := v.Index(to); ix == nil || ix.Len() < stored {
		return
	}
	v.mu.Lock()
	v.serving = to
	v.mu.Unlock()
	v.recordServing()
	v.Log.Info("the new default embedding profile now serves searches", "profile", to, "previous", from, "vectors", stored)
}

// Start loads every profile's vectors in the background and follows the
// change log. onNewDrawers (nil: none) is called once a burst of new
// drawers has settled (the runtime queues an embed job), and once after
// the start's load and first catch-up: only then does an index know how
// many vectors it holds (drawers filed while no provider was configured,
// or while the daemon was down, get theirs).
func (v *Vectors) Start(onNewDrawers func()) {
	v.onNewDrawers = onNewDrawers
	v.f.Start()
}

// Sync waits, up to timeout, until the follower has applied every change
// up to target, as Indexer.Sync: a search sees the vectors stored before it
// (a PUT of a drawer's embedding, an embed job's batch) even when the
// follower had not caught up yet; it reports whether it had. Vectors still
// to be made are not waited for.
func (v *Vectors) Sync(ctx context.Context, target uint64, timeout time.Duration) bool {
	return v.f.Sync(ctx, target, timeout)
}

// Kick asks for a catch-up.
func (v *Vectors) Kick() { v.f.Kick() }

// Position is the change-log sequence the vector indexes have applied.
func (v *Vectors) Position() uint64 { return v.f.Position() }

// SavedSeq is the sequence of the indexes last saved to disk (0: never).
func (v *Vectors) SavedSeq() uint64 {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return v.savedSeq
}

// Stop ends the follower and saves every profile's index, so that the
// next start reads it instead of rebuilding the graph.
func (v *Vectors) Stop(ctx context.Context) {
	v.f.Stop(ctx)
	v.save()
}

// save writes every profile's index with the sequence it reflects; called
// by the follower between catch-ups, or after it stopped.
func (v *Vectors) save() {
	if v.Dir == "" {
		return
	}
	seq := v.f.Position()
	t0 := time.Now()
	for name, p := range v.Profiles {
		if err := v.Index(name).Save(v.file(name), seq, identity(p)); err != nil {
			v.Log.Warn("saving the vector index failed; it is rebuilt at the next start", "profile", name, "err", err)
			return
		}
	}
	v.mu.Lock()
	v.savedSeq, v.lastSave = seq, time.Now()
	v.mu.Unlock()
	v.Log.Debug("vector indexes saved", "seq", seq, "took", time.Since(t0).Round(time.Millisecond))
}

// saveDue: changes were applied since the last save, SaveEvery ago.
func (v *Vectors) saveDue() bool {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return v.Dir != "" && v.f.Position() > v.savedSeq && time.Since(v.lastSave) >= v.SaveEvery
}

func (v *Vectors) file(profile string) string { return filepath.Join(v.Dir, profile+".vec") }

func identity(p *embed.Profile) string {
	id := p.Identity()
	return fmt.Sprintf("%s|%s|%d|%s", id.Provider, id.Model, id.Dimension, id.Pipeline)
}

// open loads every profile's vectors: a saved index and the change log
// after it, or every stored vector.
func (v *Vectors) open(context.Context) (uint64, error) {
	t0 := time.Now()
	n, seq, err := v.load()
	if err != nil {
		return 0, fmt.Errorf("loading vectors: %w", err)
	}
	if len(v.Profiles) > 0 {
		v.Log.Info("vectors loaded", "vectors", n, "took", time.Since(t0).Round(time.Millisecond))
	}
	return seq, nil
}

// tick runs every second after a catch-up: a second without new changes
// after new drawers queues their embedding; an index with many deleted
// vectors is compacted; a save is made when due.
func (v *Vectors) tick() {
	if v.dirty && v.onNewDrawers != nil && v.settled() {
		v.dirty = false
		v.onNewDrawers()
	}
	for name := range v.Profiles {
		if ix := v.Index(name); ix.Tombstones() > 0.2 {
			ix.Compact()
		}
	}
	if v.saveDue() {
		v.save()
	}
	v.maybeSwap()
}

// settled reports that no change arrived since the last catch-up.
func (v *Vectors) settled() bool {
	var last uint64
	_ = v.DB.View(context.Background(), func(r store.Reader) error { last, _ = r.LastSeq(); return nil })
	return last <= v.f.Position()
}

func matches(p *embed.Profile, e *store.Embedding) bool {
	id := p.Identity()
	return e.Provider == id.Provider && e.Model == id.Model && e.Dimension == id.Dimension && e.Pipeline == id.Pipeline
}

func (v *Vectors) load() (int, uint64, error) {
	n := 0
	var start uint64
	err := v.DB.View(context.Background(), func(r store.Reader) error {
		seq, err := r.LastSeq()
		if err != nil {
			return err
		}
		fromFile := 0
		healed := false
		start = seq
		for name, p := range v.Profiles {
			if v.Dir != "" {
				// A saved index, then the change log after it. A file that
				// is missing, damaged or of another identity is rebuilt.
				if ix, saved, err := vector.Load(v.file(name), identity(p)); err == nil && saved <= seq {
					v.mu.Lock()
					v.index[name] = ix
					v.mu.Unlock()
					fromFile++
					v.Log.Info("vector index read from its file", "profile", name, "vectors", ix.Len(), "seq", saved)
					if h := ix.Healed(); h > 0 {
						// Vectors no link led to (a graph saved by an
						// earlier release) were relinked: the index differs
						// from its file, which the next tick saves again.
						healed = true
						v.Log.Info("vector index: unreachable vectors relinked", "profile", name, "relinked", h)
					}
					start = min(start, saved)
					n += ix.Len()
					continue
				}
			}
			// Rebuilt in the change log's order, as the follower built
			// it: HNSW's graph depends on the order of insertion, so a
			// palace whose index was removed (a restore) answers the same
			// searches as the one that followed its changes.
			ix := v.index[name]
			var ferr error
			err := r.Changes(0, func(c store.Change) bool {
				switch {
				case c.Kind == store.ChangeEmbedding:
					profile, drawer, _ := strings.Cut(c.ID, "/")
					if profile != name {
						return true
					}
					e, err := r.Embedding(drawer, name)
					if err != nil {
						ferr = err
						return false
					}
					if e != nil && matches(p, e) {
						if d, _ := r.Drawer(drawer); d != nil {
							_ = ix.Add(drawer, e.Vector)
						}
					}
				case c.Kind == store.ChangeDrawer && c.Action == store.ActionDeleted:
					ix.Delete(c.ID)
				}
				return true
			})
			if err == nil {
				err = ferr
			}
			if err == nil {
				// A vector stored without its change logged (none is
				// known; a safety net) is added after the others.
				err = r.Embeddings(name, func(e *store.Embedding) bool {
					if !ix.Has(e.DrawerID) && matches(p, e) {
						if d, _ := r.Drawer(e.DrawerID); d != nil {
							_ = ix.Add(e.DrawerID, e.Vector)
						}
					}
					return true
				})
			}
			if err != nil {
				return err
			}
			n += ix.Len()
		}
		v.mu.Lock()
		if fromFile == len(v.Profiles) && !healed {
			v.savedSeq = start
		}
		v.mu.Unlock()
		return nil
	})
	return n, start, err
}

// apply applies a batch of changes to the indexes: stored vectors added,
// deleted drawers' vectors removed; a created drawer marks vectors to make.
func (v *Vectors) apply(r store.Reader, batch []store.Change) (func() error, error) {
	for _, c := range batch {
		switch {
		case c.Kind == store.ChangeEmbedding:
			profile, drawer, _ := strings.Cut(c.ID, "/")
			p, ix := v.Profiles[profile], v.Index(profile)
			if p == nil {
				break
			}
			if e, err := r.Embedding(drawer, profile); err == nil && e != nil && matches(p, e) {
				_ = ix.Add(drawer, e.Vector)
			}
		case c.Kind == store.ChangeDrawer && c.Action == store.ActionCreated:
			v.dirty = true
		case c.Kind == store.ChangeDrawer && c.Action == store.ActionDeleted:
			for name := range v.Profiles {
				v.Index(name).Delete(c.ID)
			}
		}
	}
	return nil, nil
}

// Profile resolves a profile name ("" is the serving profile: the
// default, or the previous one during a switch): nil when none.
func (v *Vectors) Profile(name string) (*embed.Profile, error) {
	if name == "" {
		name = v.Serving()
		if name == "" {
			return nil, nil
		}
	}
	p, ok := v.Profiles[name]
	if !ok {
		names := make([]string, 0, len(v.Profiles))
		for n := range v.Profiles {
			names = append(names, n)
		}
		sort.Strings(names)
		return nil, fault.Newf(fault.InputInvalid, "configured profiles: "+strings.Join(names, ", "),
			"profile: %q is not a configured embedding profile", name)
	}
	return p, nil
}

// PutEmbedding stores a caller-made vector for a drawer in a profile.
func (v *Vectors) PutEmbedding(ctx context.Context, drawerRef, profile string, vec []float32) (*store.Embedding, error) {
	if profile == "" {
		return nil, fault.Invalid("profile", "is required: the configured embedding profile the vector belongs to")
	}
	p, err := v.Profile(profile)
	if err != nil {
		return nil, err
	}
	if len(vec) != p.Dimension {
		return nil, fault.Newf(fault.EmbedDimensionMismatch, fmt.Sprintf("send %d values", p.Dimension),
			"embedding has %d values; profile %s has %d", len(vec), p.Name, p.Dimension)
	}
	if _, ok := normalisable(vec); !ok {
		return nil, fault.Invalid("embedding", "must be finite and not all zero")
	}
	res, err := v.Sys.Write(ctx, func(tx store.Tx) (any, error) {
		d, err := store.FindDrawer(tx, drawerRef)
		if err != nil {
			return nil, err
		}
		id := p.Identity()
		e := &store.Embedding{DrawerID: d.ID, Profile: p.Name, Provider: id.Provider, Model: id.Model,
			Dimension: id.Dimension, Pipeline: id.Pipeline, CreatedAt: tx.Now(), Vector: vec}
		return e, tx.PutEmbedding(e)
	})
	if err != nil {
		return nil, err
	}
	v.Kick()
	return res.(*store.Embedding), nil
}

func normalisable(vec []float32) (float64, bool) {
	s := 0.0
	for _, x := range vec {
		f := float64(x)
		if f != f || f > 3e38 || f < -3e38 {
			return 0, false
		}
		s += f * f
	}
	return s, s > 0
}

// Index is a profile's vector index.
func (v *Vectors) Index(profile string) *vector.Index {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return v.index[profile]
}

// Has reports whether drawer id has a vector of profile p's provider,
// model and pipeline: in the profile's index, or stored.
func (v *Vectors) Has(r store.Reader, p *embed.Profile, id string) bool {
	if ix := v.Index(p.Name); ix != nil && ix.Has(id) {
		return true // the index holds only vectors of the profile's identity
	}
	e, err := r.Embedding(id, p.Name)
	return err == nil && e != nil && matches(p, e)
}

// TakeHurry reports, and clears, a Sync's request to hurry that the
// follower has not yet taken up: a caller that waited for the vector
// index asked for one (the search's tests check that a search does not
// wait for a backlog).
func (v *Vectors) TakeHurry() bool {
	select {
	case <-v.f.urgent:
		return true
	default:
		return false
	}
}
