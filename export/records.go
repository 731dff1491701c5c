// Package export writes and reads loci's portable export format: JSON
// Lines, one record per line, each a JSON object with a "type". A file is
// a header record, then the palace's records in an order where a record
// never names one that comes after it (wings, rooms, entities, drawers
// with their mentions and vectors, sources and their documents, facts,
// their decisions, entity links), and a final end record holding the
// count of records and the SHA-256 digest of every line before it, so a
// truncated file is told from a complete one.
//
// Write makes an export of a palace (every wing, or some, and what
// changed since an instant) from one consistent read view. NewReader
// reads one back, streaming, checking each record against the palace's
// rules and the configured limits before the importer sees it. Encrypt
// and Decrypt wrap a file in age encryption. docs/EXPORT.md describes the
// format, docs/export.schema.json is its JSON Schema.
package export

import (
	"encoding/json"
	"time"
)

// Format is the header's format name; Version is the format version this
// package writes and the newest it reads.
const (
	Format  = "loci-export"
	Version = 1
)

// Record types, the "type" of each line.
const (
	TypeHeader     = "header"
	TypeWing       = "wing"
	TypeRoom       = "room"
	TypeEntity     = "entity"
	TypeDrawer     = "drawer"
	TypeMention    = "mention"
	TypeVector     = "vector"
	TypeSource     = "source"
	TypeDocument   = "document"
	TypeFact       = "fact"
	TypeDecision   = "decision"
	TypeEntityLink = "entity_link"
	TypeEnd        = "end"
)

// Types lists every record type of this version, in the order a file
// first meets them.
var Types = []string{TypeHeader, TypeWing, TypeRoom, TypeEntity, TypeDrawer, TypeMention, TypeVector,
	TypeSource, TypeDocument, TypeFact, TypeDecision, TypeEntityLink, TypeEnd}

// Header is the first record: what the file is, where it came from and
// what was selected.
type Header struct {
	Type      string    `json:"type"`
	Format    string    `json:"format"`
	Version   int       `json:"version"`
	CreatedAt time.Time `json:"created_at"`
	// PalaceID is the exporting palace's identity (store.PalaceID).
	PalaceID string `json:"palace_id"`
	// Generator is the program that wrote the file, e.g. "loci 1.4.0".
	Generator string    `json:"generator,omitempty"`
	Selection Selection `json:"selection"`
}

// Selection is what an export holds: the wings by name (empty: every
// wing), what changed at or after Since (absent: everything) and whether
// vectors of which profiles are in it.
type Selection struct {
	Wings    []string   `json:"wings"`
	Since    *time.Time `json:"since,omitempty"`
	Vectors  bool       `json:"vectors"`
	Profiles []string   `json:"profiles,omitempty"`
}

// Wing is a wing.
type Wing struct {
	Type        string    `json:"type"`
	ID          string    `json:"id"`
	Name        string    `json:"name"`
	Description string    `json:"description,omitempty"`
	CreatedAt   time.Time `json:"created_at"`
}

// Room is a room of a wing written before it.
type Room struct {
	Type        string    `json:"type"`
	ID          string    `json:"id"`
	WingID      string    `json:"wing_id"`
	Name        string    `json:"name"`
	Description string    `json:"description,omitempty"`
	CreatedAt   time.Time `json:"created_at"`
}

// Drawer is one version of a drawer, current or superseded. The versions
// of a chain come oldest first: Supersedes names the version before it
// (written before it, in the same room), SupersededBy the one after it
// (written after it).
type Drawer struct {
	Type       string     `json:"type"`
	ID         string     `json:"id"`
	WingID     string     `json:"wing_id"`
	RoomID     string     `json:"room_id"`
	Name       string     `json:"name"`
	Content    string     `json:"content"`
	Tags       []string   `json:"tags"`
	Source     Source     `json:"source"`
	Provenance Provenance `json:"provenance"`
	ValidFrom  time.Time  `json:"valid_from"`
	ValidTo    *time.Time `json:"valid_to,omitempty"`
	CreatedAt  time.Time  `json:"created_at"`
	// Supersedes and SupersededBy are "" when there is none.
	Supersedes   string `json:"supersedes,omitempty"`
	SupersededBy string `json:"superseded_by,omitempty"`
	// Diary marks a diary entry (its agent is Source.Agent).
	Diary bool `json:"diary,omitempty"`
}

// Source is where a drawer's content came from.
type Source struct {
	Kind   string          `json:"kind"`
	URI    string          `json:"uri,omitempty"`
	Agent  string          `json:"agent,omitempty"`
	Origin json.RawMessage `json:"origin,omitempty"`
}

// Provenance is how a drawer was written: the channel and the job (an id
// of the exporting palace's jobs, which are not exported).
type Provenance struct {
	RequestedBy string `json:"requested_by,omitempty"`
	JobID       string `json:"job_id,omitempty"`
}

// Mention links a drawer written before it to an entity written before
// it.
type Mention struct {
	Type       string    `json:"type"`
	DrawerID   string    `json:"drawer_id"`
	EntityID   string    `json:"entity_id"`
	Name       string    `json:"name"`
	Rule       string    `json:"rule,omitempty"`
	Confidence float64   `json:"confidence"`
	Extractor  string    `json:"extractor,omitempty"`
	Origin     string    `json:"origin,omitempty"`
	CreatedAt  time.Time `json:"created_at"`
}

// Vector is a drawer's vector in one embedding profile, tagged with the
// identity of what made it: an importer whose profile differs (provider,
// model, dimension or pipeline) re-embeds the drawer instead.
type Vector struct {
	Type      string    `json:"type"`
	DrawerID  string    `json:"drawer_id"`
	Profile   string    `json:"profile"`
	Provider  string    `json:"provider"`
	Model     string    `json:"model"`
	Dimension int       `json:"dimension"`
	Pipeline  string    `json:"pipeline"`
	CreatedAt time.Time `json:"created_at"`
	Vector    []float32 `json:"vector"`
}

// Entity is a node of the knowledge graph with its aliases.
type Entity struct {
	Type      string    `json:"type"`
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Kind      string    `json:"kind"`
	Key       string    `json:"key"`
	Aliases   []string  `json:"aliases"`
	CreatedAt time.Time `json:"created_at"`
}

// EntityLink links two entities written before it (possibly_same_as).
type EntityLink struct {
	Type      string    `json:"type"`
	ID        string    `json:"id"`
	From      string    `json:"from"`
	To        string    `json:"to"`
	Kind      string    `json:"kind"`
	CreatedAt time.Time `json:"created_at"`
}

// SourceState is what mining keeps of a source mined into a wing: its
// identity and its documents' count. The adapter's cursor is never
// exported (it is the adapter's own data and may hold a service's paging
// token): the importing palace mines the source from the start, and the
// documents' revisions make unchanged documents no-ops.
type SourceState struct {
	Type string `json:"type"`
	// Key is the state's key: store.TargetKey of the identity's key and
	// the wing's id.
	Key       string    `json:"key"`
	Adapter   string    `json:"adapter"`
	Account   string    `json:"account,omitempty"`
	Locator   string    `json:"locator"`
	WingID    string    `json:"wing_id"`
	Documents int       `json:"documents"`
	LastJob   string    `json:"last_job,omitempty"`
	LastRun   time.Time `json:"last_run"`
}

// Document is the last filed revision of a document of a source written
// before it, with its chunks' drawers.
type Document struct {
	Type     string  `json:"type"`
	Source   string  `json:"source"`
	ID       string  `json:"id"`
	WingID   string  `json:"wing_id"`
	Revision string  `json:"revision"`
	Meta     string  `json:"meta"`
	Chunks   []Chunk `json:"chunks"`
}

// Chunk is one chunk of a document: its drawer's id and its text's hash.
// The drawer may be absent from the file (deleted since it was filed, or
// outside a --since selection): the document is then filed again at the
// next mine.
type Chunk struct {
	DrawerID string `json:"drawer_id"`
	Hash     string `json:"hash"`
}

// Fact is a relates_to edge between entities written before it, with
// both time axes: valid time (valid_from, valid_to: when it held in the
// world) and record time (recorded_at, retracted_at: when it was learnt
// and stopped being believed); superseded_by, reason and closed_by are
// its decisions' outcome. Its drawer references (drawer_id, closed_by,
// evidence) name drawers by id and may name drawers outside the file.
type Fact struct {
	Type         string     `json:"type"`
	ID           string     `json:"id"`
	Subject      string     `json:"subject"`
	Predicate    string     `json:"predicate"`
	Object       string     `json:"object"`
	Confidence   float64    `json:"confidence"`
	ValidFrom    time.Time  `json:"valid_from"`
	ValidTo      *time.Time `json:"valid_to,omitempty"`
	RecordedAt   time.Time  `json:"recorded_at"`
	RetractedAt  *time.Time `json:"retracted_at,omitempty"`
	DrawerID     string     `json:"drawer_id,omitempty"`
	JobID        string     `json:"job_id,omitempty"`
	Extractor    string     `json:"extractor,omitempty"`
	SupersededBy string     `json:"superseded_by,omitempty"`
	Reason       string     `json:"reason,omitempty"`
	ClosedBy     string     `json:"closed_by,omitempty"`
	Evidence     []Evidence `json:"evidence"`
}

// Evidence is one more assertion of a fact.
type Evidence struct {
	ID         string    `json:"id"`
	DrawerID   string    `json:"drawer_id,omitempty"`
	JobID      string    `json:"job_id,omitempty"`
	Extractor  string    `json:"extractor,omitempty"`
	Confidence float64   `json:"confidence"`
	RecordedAt time.Time `json:"recorded_at"`
}

// Decision is a lifecycle link between two facts written before it
// (confirms, contradicts, refines).
type Decision struct {
	Type      string    `json:"type"`
	ID        string    `json:"id"`
	From      string    `json:"from"`
	To        string    `json:"to"`
	Kind      string    `json:"kind"`
	Reason    string    `json:"reason,omitempty"`
	DrawerID  string    `json:"drawer_id,omitempty"`
	JobID     string    `json:"job_id,omitempty"`
	CreatedAt time.Time `json:"created_at"`
}

// End is the last record: how many records came before it (the header
// included) and the digest of every byte before it ("sha256:<hex>"), with
// the count of each type.
type End struct {
	Type    string         `json:"type"`
	Records int64          `json:"records"`
	Digest  string         `json:"digest"`
	Counts  map[string]int `json:"counts"`
}

// Record is one record read: its type, where it is in the file (line
// from 1, byte offset of the line's start) and the one field of its type
// set. A record of an unknown type skipped by ReaderOptions.SkipUnknown
// is never returned.
type Record struct {
	Type   string
	Line   int64
	Offset int64
	// Unknown: a record of a type this version does not know, skipped
	// (ReaderOptions.SkipUnknown): no payload; Type is its type, or
	// UnknownType past the Reader's bound on the types it names.
	Unknown bool

	Header     *Header
	Wing       *Wing
	Room       *Room
	Entity     *Entity
	Drawer     *Drawer
	Mention    *Mention
	Vector     *Vector
	Source     *SourceState
	Document   *Document
	Fact       *Fact
	Decision   *Decision
	EntityLink *EntityLink
	End        *End
}
