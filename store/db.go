package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// DB is a palace store. The embedded backend is Badger; a remote backend
// (PostgreSQL) implements the same interface. Reads run concurrently in
// View; every change runs in Update, which only the writer calls, and is
// durable (synced) when Update returns nil.
type DB interface {
	View(ctx context.Context, fn func(Reader) error) error
	Update(ctx context.Context, fn func(Tx) error) error
	// Meta reads and writes operational records (schema hash, data-step
	// watermark, migration lock) outside the palace data.
	Meta
	// Backend names the backend, e.g. "badger".
	Backend() string
	// Location is where the data lives (a directory or a URL without
	// credentials).
	Location() string
	// Shared reports whether several daemons may use the store at once (a
	// remote database): job recovery at a start then takes only expired
	// leases, and a reaper recovers the leases of daemons that died. The
	// embedded store is not shared: at a start every running job is this
	// process's previous run's.
	Shared() bool
	// Migrator is the backend's migration runner over steps (Steps): its
	// schema sync and its lock are the backend's own.
	Migrator(steps []Step) Migrator
	// Close releases the store; it is safe to call twice.
	Close() error
}

// NearLoader is what a backend that keeps its near-duplicate candidates in
// the daemon's memory (Badger) offers besides DedupNear: big scopes load in
// the background after a start, and the near judgment of drawers written
// meanwhile is deferred until then. A backend that answers DedupNear from
// its own index (a database) needs neither, and does not implement it.
type NearLoader interface {
	// OnLateNear sets the receiver of drawers whose near judgment was
	// deferred; it gets their ids once their scope is loaded and must not
	// block. Set before serving.
	OnLateNear(fn func(ids []string))
	// PreloadNear starts loading every big scope in the background.
	PreloadNear()
}

// Watcher is what a shared backend offers besides DB: each daemon's
// followers (the lexical and vector indexes) learn of the commits of other
// daemons on the same database.
type Watcher interface {
	// Watch calls wake whenever another handle may have committed changes
	// (a notification, or a poll as the fallback), until ctx ends. It
	// reconnects on its own and never blocks on wake; wake must not block.
	Watch(ctx context.Context, wake func())
	// Origin is this handle's instance: the Change.Origin of what it logs.
	Origin() string
}

// Savepointer is what a transaction that can undo part of itself offers
// (a database's savepoints): the writer marks one before each function of
// a batch and rolls back to it when the function fails after writing,
// instead of running the batch again without it.
type Savepointer interface {
	// Savepoint marks the transaction's state.
	Savepoint() error
	// RollbackToSavepoint undoes every write since the last Savepoint.
	RollbackToSavepoint() error
	// ReleaseSavepoint forgets the last Savepoint, keeping its writes.
	ReleaseSavepoint() error
}

// Meta holds migration bookkeeping.
type Meta interface {
	GetMeta(ctx context.Context, key string) (string, bool, error)
	PutMeta(ctx context.Context, key, value string) error
	// CompareAndSwapMeta sets key to value when its current value is old
	// ("" meaning absent), atomically, and reports whether it did.
	CompareAndSwapMeta(ctx context.Context, key, old, value string) (bool, error)
	DeleteMeta(ctx context.Context, key string) error
}

// Reader is a consistent read view of the palace: every family's reads.
// A backend implements all of them; code that needs one family takes
// that family's interface.
type Reader interface {
	PalaceReader
	DedupReader
	ChangeLog
	VectorReader
	JobReader
	AuthReader
	SourceReader
	TriggerReader
	GraphReader
}

// PalaceReader reads wings, rooms and drawers.
type PalaceReader interface {
	Wing(id string) (*Wing, error)
	WingByName(name string) (*Wing, error)
	Wings() ([]Wing, error)
	Room(id string) (*Room, error)
	RoomByName(wingID, name string) (*Room, error)
	Rooms(wingID string) ([]Room, error)
	Drawer(id string) (*Drawer, error)
	// HasDrawer reports whether a drawer is stored, without reading it.
	HasDrawer(id string) (bool, error)
	// DrawersByID reads many drawers in one call (a search's candidates,
	// a follower's batch): out[i] is ids[i]'s drawer, nil when unknown.
	DrawersByID(ids []string) ([]*Drawer, error)
	// DrawerByName is the current drawer holding the name in the room.
	DrawerByName(roomID, name string) (*Drawer, error)
	// Drawers visits the room's drawers newest first until fn returns
	// false; with current set, only drawers valid now.
	Drawers(roomID string, current bool, fn func(*Drawer) bool) error
	// DrawersBefore is Drawers from the position after (createdAt, id) on:
	// the drawers filed before that one (or, at the same instant, with a
	// smaller id), newest first; a page's last drawer gives the next page.
	DrawersBefore(roomID string, current bool, createdAt time.Time, id string, fn func(*Drawer) bool) error
	// DrawerIDs lists the ids of the room's stored drawers (keys only).
	DrawerIDs(roomID string) ([]string, error)
	// Neighbours lists, for each drawer, the ids of up to n drawers filed
	// just before it in its room and up to n filed just after it (stored,
	// of any validity), nearest first on each side: a search scores a
	// drawer with its context. Write transactions read the committed
	// snapshot.
	Neighbours(ds []*Drawer, n int) ([][]string, error)
	// CountDrawers counts the room's current and stored drawers.
	CountDrawers(roomID string) (current, stored int, err error)
	// Filed counts the stored drawers (of any validity) filed in each of
	// buckets consecutive spans of step starting at since, every room of
	// the palace: out[i] counts created_at in [since+i*step,
	// since+(i+1)*step). It reads only the drawers filed in the window.
	// Write transactions read the committed snapshot.
	Filed(since time.Time, step time.Duration, buckets int) ([]int, error)
	// Counts is the palace's counts, kept by every write (not recounted):
	// it answers at once whatever the palace's size.
	Counts() (Counts, error)
	// Recount counts the palace by scanning it: what Counts must equal
	// (tests and audits).
	Recount() (Counts, error)
	// EachDrawer visits every stored drawer, in no useful order, until fn
	// returns false (audits).
	EachDrawer(fn func(*Drawer) bool) error
}

// DedupReader reads what deduplication keeps: exact and normalised copies,
// near candidates, sketches, similarity links.
type DedupReader interface {
	// DedupByHash and DedupByFingerprint list current drawers of a scope
	// with that exact hash or normalised fingerprint, oldest first.
	DedupByHash(scope, hash string) ([]string, error)
	DedupByFingerprint(scope, fp string) ([]string, error)
	// DedupNear visits, once each, the current drawers of a scope that share
	// at least one MinHash band with bands and whose normalised length is
	// within [lo, hi]. It may see fewer (never more) than a write would: a
	// read is advisory, the writer's answer is exact.
	DedupNear(scope string, bands [][8]byte, lo, hi int, fn func(NearCandidate)) error
	DedupRecord(drawerID string) (*DedupRecord, error)
	// DedupSketch is a current drawer's MinHash minimums and normalised
	// text; nil minimums when it has none.
	DedupSketch(drawerID string) (mins []uint16, norm string, err error)
	Links(drawerID string) ([]Link, error)
	// LinkEnds is a drawer's similar_to links as its link index holds
	// them: enough to count and rank them without reading each link.
	LinkEnds(drawerID string) ([]LinkEnd, error)
	Link(id string) (*Link, error)
}

// ChangeLog reads the change log. Its contract (store/storetest states it
// as tests): entries come in increasing sequence; an entry is visible only
// once its transaction committed, with the rest of that transaction; a
// failed transaction leaves none; and once an entry of sequence n has been
// read, no entry below n appears later.
type ChangeLog interface {
	// Changes visits change-log entries after seq in order until fn
	// returns false.
	Changes(after uint64, fn func(Change) bool) error
	LastSeq() (uint64, error)
}

// VectorReader reads stored vectors.
type VectorReader interface {
	// Embedding is a drawer's vector in a profile; nil when it has none.
	Embedding(drawerID, profile string) (*Embedding, error)
	// Embeddings visits every vector of a profile until fn returns false.
	Embeddings(profile string, fn func(*Embedding) bool) error
}

// JobReader reads jobs.
type JobReader interface {
	// Job reads a job; nil when unknown.
	Job(id string) (*Job, error)
	// JobInput is what a job was submitted with (kept apart from the job,
	// which every progress save rewrites).
	JobInput(id string) (json.RawMessage, error)
	// Jobs visits every job newest first until fn returns false.
	Jobs(fn func(*Job) bool) error
	// QueuedJobs visits queued jobs in claim order (highest priority, then
	// oldest) until fn returns false.
	QueuedJobs(fn func(*Job) bool) error
	// ActiveJobs visits queued, running and paused jobs, oldest first,
	// until fn returns false.
	ActiveJobs(fn func(*Job) bool) error
}

// AuthReader reads the credential state.
type AuthReader interface {
	// AuthState is the generated token's digest; nil when none is stored.
	AuthState() (*AuthState, error)
}

// SourceReader reads what mining keeps per source: its cursor and the
// last revision of each document filed from it.
type SourceReader interface {
	// Source is a source's state by key; nil when it was never mined.
	Source(key string) (*SourceState, error)
	// Sources visits every mined source until fn returns false.
	Sources(fn func(*SourceState) bool) error
	// SourceDocument is a document's last filed revision; nil when none.
	SourceDocument(source, id string) (*DocumentState, error)
	// CountSourceDocuments counts the documents filed from a source.
	CountSourceDocuments(source string) (int, error)
	// SourceDocuments visits a state's documents, by id, until fn returns
	// false.
	SourceDocuments(source string, fn func(*DocumentState) bool) error
	// ChunkOwner is the state key and document id a drawer was filed as a
	// chunk of; "" when it was not mined.
	ChunkOwner(drawer string) (source, doc string, err error)
	// StaleDocuments visits the ids of a state's documents whose drawers
	// were deleted since they were filed, until fn returns false.
	StaleDocuments(source string, fn func(doc string) bool) error
}

// Tx is a read-write transaction: every family's reads (seeing its own
// writes) and writes.
type Tx interface {
	Reader
	// Now is the transaction's clock.
	Now() time.Time
	// Writes is how many key writes (sets and deletes) the transaction
	// has made so far, counted in the one place every write method's
	// writes pass through, before the write or any state it keeps
	// changes. The writer reads it around each function of a batch: a
	// function that failed after writing is rolled back by running the
	// batch again without it, whichever methods it called.
	Writes() uint64
	PalaceWriter
	DedupWriter
	VectorWriter
	JobWriter
	LogWriter
	AuthWriter
	SourceWriter
	TriggerWriter
	GraphWriter
}

// PalaceWriter writes wings, rooms and drawers.
type PalaceWriter interface {
	PutWing(w *Wing) error
	DeleteWing(w *Wing) error
	PutRoom(r *Room) error
	DeleteRoom(r *Room) error
	// PutDrawer writes the drawer and keeps its name and time indexes
	// (prev is the stored version being replaced, nil for a new drawer).
	PutDrawer(d *Drawer, prev *Drawer) error
	DeleteDrawer(d *Drawer) error
}

// DedupWriter writes deduplication records and similarity links.
type DedupWriter interface {
	PutDedup(r *DedupRecord) error
	DeleteDedup(r *DedupRecord) error
	PutLink(l *Link) error
	DeleteLink(l *Link) error
}

// VectorWriter stores vectors.
type VectorWriter interface {
	// PutEmbedding stores a drawer's vector in a profile (replacing one).
	// Deleting the drawer deletes its vectors.
	PutEmbedding(e *Embedding) error
}

// JobWriter writes jobs.
type JobWriter interface {
	// PutJob writes a job and keeps its indexes (prev is the stored version,
	// nil for a new job).
	PutJob(j, prev *Job) error
	// PutJobFact stores a checkpoint item's fact operation as given.
	PutJobFact(jobID string, index int, fact json.RawMessage) error
}

// GraphReader reads the knowledge graph's entities.
type GraphReader interface {
	// Entity is an entity by id; nil when none.
	Entity(id string) (*Entity, error)
	// EntityIDs is the ids of the entities under a value of an index
	// (a name, a key, an alias's key, a deletion), oldest id first.
	EntityIDs(index EntityIndex, value string) ([]string, error)
	// Entities visits every entity in name order until fn returns false.
	Entities(fn func(*Entity) bool) error
	// EntityLinks is the links from or to an entity.
	EntityLinks(id string) ([]EntityLink, error)
	// Mention is the link of a drawer to an entity; nil when none.
	Mention(drawer, entity string) (*Mention, error)
	// Mentions visits the mentions of an entity (by drawer id) until fn
	// returns false.
	Mentions(entity string, fn func(*Mention) bool) error
	// DrawerMentions is the mentions a drawer makes.
	DrawerMentions(drawer string) ([]Mention, error)
	// MentioningDrawers visits the ids of the drawers that mention an
	// entity (without reading the mentions) until fn returns false.
	MentioningDrawers(entity string, fn func(drawer string) bool) error
	// Relationship is a fact by id; nil when none.
	Relationship(id string) (*Relationship, error)
	// EntityRelationships visits the facts an entity is the subject or
	// object of until fn returns false.
	EntityRelationships(entity string, fn func(*Relationship) bool) error
	// RelationshipLinks is the lifecycle links from or to a fact.
	RelationshipLinks(id string) ([]RelationshipLink, error)
}

// GraphWriter writes entities and their links.
type GraphWriter interface {
	// PutEntity writes an entity and keeps its indexes (prev is the stored
	// version being replaced, nil for a new entity).
	PutEntity(e, prev *Entity) error
	// PutEntityLink writes a link between entities.
	PutEntityLink(l *EntityLink) error
	// PutMention writes a drawer's mention of an entity.
	PutMention(m *Mention) error
	// PutRelationship writes a fact and keeps its entity indexes (prev:
	// the stored version, nil for a new fact).
	PutRelationship(r, prev *Relationship) error
	// PutRelationshipLink writes a lifecycle link between facts.
	PutRelationshipLink(l *RelationshipLink) error
}

// TriggerReader reads what the daemon remembers about triggers (never
// whether they are enabled: that lives only in the configuration file).
type TriggerReader interface {
	// TriggerState is a trigger's state by name; nil when none is kept.
	TriggerState(name string) (*TriggerState, error)
	// TriggerStates visits every trigger state until fn returns false.
	TriggerStates(fn func(*TriggerState) bool) error
	// Delivery is a webhook delivery remembered by its trigger and id; nil
	// when none.
	Delivery(trigger, id string) (*Delivery, error)
	// Deliveries visits every remembered delivery until fn returns false.
	Deliveries(fn func(*Delivery) bool) error
}

// TriggerWriter writes trigger state and webhook deliveries.
type TriggerWriter interface {
	// PutTriggerState stores a trigger's state (replacing it).
	PutTriggerState(s *TriggerState) error
	// DeleteTriggerState forgets a trigger: its state and its deliveries.
	DeleteTriggerState(name string) error
	// PutDelivery stores a delivery (replacing it).
	PutDelivery(d *Delivery) error
	// DeleteDelivery forgets a delivery.
	DeleteDelivery(trigger, id string) error
}

// SourceWriter writes mining's per-source state.
type SourceWriter interface {
	// PutSource stores a source's state (replacing it).
	PutSource(s *SourceState) error
	// PutSourceDocument stores a document's filed revision (replacing it).
	PutSourceDocument(d *DocumentState) error
	// DeleteSource removes a state's record (its cursor); its documents'
	// records are removed one by one.
	DeleteSource(key string) error
	// DeleteSourceDocument removes a document's filed revision.
	DeleteSourceDocument(source, id string) error
	// PutChunkOwner records the document a drawer is a chunk of;
	// DeleteChunkOwner forgets it.
	PutChunkOwner(drawer, source, doc string) error
	DeleteChunkOwner(drawer string) error
	// PutStaleDocument marks a document to be filed again;
	// DeleteStaleDocument clears the mark.
	PutStaleDocument(source, doc string) error
	DeleteStaleDocument(source, doc string) error
}

// LogWriter appends to the change log.
type LogWriter interface {
	// Log appends a change-log entry in this transaction.
	Log(kind, action, id string) error
}

// AuthWriter writes the credential state.
type AuthWriter interface {
	// PutAuthState stores the generated token's digest (replacing any);
	// nil removes it.
	PutAuthState(a *AuthState) error
}

// ErrTxnTooBig reports a transaction over the backend's size limit; the
// writer splits its batch when it sees it.
var ErrTxnTooBig = errors.New("store: transaction too big")

// ErrConflict reports a transaction the backend refused because another
// changed what it read (a serialization failure): nothing of it was kept,
// and running it again may succeed. The writer retries it a few times.
var ErrConflict = errors.New("store: conflicting transaction; retry")
