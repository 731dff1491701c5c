package store

import (
	"encoding/json"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/loci-dev/loci/store/dedup"
)

// Wing is the top level of the palace.
type Wing struct {
	ID          string
	Name        string
	Description string
	CreatedAt   time.Time
}

// Room is a place inside a wing.
type Room struct {
	ID          string
	WingID      string
	Name        string
	Description string
	CreatedAt   time.Time
}

// Source kinds.
const (
	KindFile       = "file"
	KindManual     = "manual"
	KindTranscript = "transcript"
	KindNote       = "note"
	KindOther      = "other"
)

// SourceKinds lists the accepted source kinds.
var SourceKinds = []string{KindFile, KindManual, KindTranscript, KindNote, KindOther}

// StoredSourceKind is the source kind a drawer is stored with: a kind of
// SourceKinds as given, any other value (an installed source's own word,
// or none) other, as the spec says.
func StoredSourceKind(kind string) string {
	if slices.Contains(SourceKinds, kind) {
		return kind
	}
	return KindOther
}

// Channels a write may be requested by.
const (
	ByCLI     = "cli"
	ByHTTP    = "http"
	ByMCP     = "mcp"
	ByUnknown = "unknown"
	// ByDaemon is the requester of a job the daemon queued on its own (an
	// embed job after writes, an extract job after a mine); never accepted
	// from a client.
	ByDaemon = "daemon"
)

// Source says where a drawer's content came from.
type Source struct {
	Kind   string          `json:"kind"`
	URI    string          `json:"uri,omitempty"`
	Agent  string          `json:"agent,omitempty"`
	Origin json.RawMessage `json:"origin,omitempty"`
}

// Provenance says how a drawer was written.
type Provenance struct {
	RequestedBy string
	JobID       string
}

// Drawer is one immutable memory.
type Drawer struct {
	ID           string
	WingID       string
	RoomID       string
	Name         string
	Content      string
	Tags         []string
	Source       Source
	Provenance   Provenance
	ValidFrom    time.Time
	ValidTo      *time.Time
	CreatedAt    time.Time
	SupersededBy string
	Supersedes   string
	// Diary marks a diary entry; its dedup scope is its agent's entries.
	Diary bool
}

// Current reports whether the drawer is valid now (no end of validity).
func (d *Drawer) Current() bool { return d.ValidTo == nil }

// ValidAt reports whether the drawer is valid at instant t: valid_from is
// included and valid_to excluded.
func (d *Drawer) ValidAt(t time.Time) bool {
	return !t.Before(d.ValidFrom) && (d.ValidTo == nil || t.Before(*d.ValidTo))
}

// ValidIn reports whether the drawer is valid at some moment of the window
// [from, until): it opens before until and closes after from. A drawer
// closed exactly at from, or opened exactly at until, is not; a single
// instant t is the window [t, t+1ns).
func (d *Drawer) ValidIn(from, until time.Time) bool {
	return d.ValidFrom.Before(until) && (d.ValidTo == nil || d.ValidTo.After(from))
}

// DedupScope is the set of drawers a drawer is compared with: its room, or
// for a diary entry its agent's entries in that room.
func (d *Drawer) DedupScope() string {
	if d.Diary {
		return d.RoomID + "#" + d.Source.Agent
	}
	return d.RoomID
}

// DedupRecord is what the store keeps to find a drawer's duplicates. Only
// current drawers have one.
type DedupRecord struct {
	DrawerID    string
	Scope       string
	Hash        string
	Fingerprint string
	NormLen     int
	Bands       [][8]byte // kept in the near index
	// Mins and Distinct are the text's sketch (dedup.Sketch); Mins is kept
	// apart from the record, where candidates read it cheaply.
	Mins     []uint16
	Distinct int
	Bag      dedup.Bag // kept in the near index
	// Norm is the normalised text, kept with Mins so that candidates are
	// verified without loading and decoding their drawers.
	Norm string
}

// NearCandidate is a drawer that may be a near duplicate: it shares a
// MinHash band with the text asked about.
type NearCandidate struct {
	// ID is the drawer's id, as bytes: a write in a big room sees
	// thousands of candidates and keeps few, so their strings are made
	// only for those (DrawerID).
	ID      uuid.UUID
	NormLen int
	// Mins holds the low byte of each of its MinHash minimums, for
	// dedup.EstimateLow.
	Mins []byte
	// Bag is its character histogram, for dedup.BagCannotReach.
	Bag []byte
}

// DrawerID is the candidate's id as text.
func (c NearCandidate) DrawerID() string { return c.ID.String() }

// Link is a similar_to edge between an older and a newer drawer.
type Link struct {
	ID        string
	Older     string
	Newer     string
	Kind      dedup.Verdict
	Signals   dedup.Signals
	CreatedAt time.Time
}

// LinkEnd is a similar_to link as a drawer's link index holds it.
type LinkEnd struct {
	ID         string
	Kind       dedup.Verdict
	Similarity float64
	CreatedAt  time.Time
}

// Change is one entry of the change log. Derived indexes apply the log in
// sequence order and remember the last sequence they applied.
type Change struct {
	Seq    uint64
	At     time.Time
	Kind   string
	Action string
	ID     string
	// Origin is the store handle that logged it (a shared backend's
	// Watcher.Origin); "" on a store one process holds. The event bus
	// announces only its own daemon's changes, as the spec says.
	Origin string
}

// Change kinds and actions.
const (
	ChangeWing   = "wing"
	ChangeRoom   = "room"
	ChangeDrawer = "drawer"
	ChangeLink   = "link"
	ChangeJob    = "job"

	ActionCreated = "created"
	ActionUpdated = "updated"
	ActionDeleted = "deleted"
)

// Counts are the palace totals for status.
type Counts struct {
	Wings         int
	Rooms         int
	Drawers       int
	DrawersStored int
	Links         int
}

// ChangeEmbedding is the change-log kind of a stored vector; its id is
// "<profile>/<drawer>".
const ChangeEmbedding = "embedding"

// ChangeTrigger is the change-log kind of trigger notices (fired, joined,
// failed, defined or changed): the event stream's trigger frames.
const ChangeTrigger = "trigger"

// Embedding is a drawer's vector in one profile, with the identity of what
// made it (derived data, never returned in hits).
type Embedding struct {
	DrawerID  string
	Profile   string
	Provider  string
	Model     string
	Dimension int
	Pipeline  string
	CreatedAt time.Time
	Vector    []float32
}

// AuthState is the stored record of the generated token: only its SHA-256
// digest (hex), with the algorithm and format version. The token itself is
// shown once and never stored.
type AuthState struct {
	Digest    string
	Algorithm string
	Version   int
	CreatedAt time.Time
}
