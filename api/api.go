// Package api holds the JSON shapes of loci's API: the requests and
// answers REST, MCP and the CLI exchange (requests.go, api.go). It imports
// nothing of loci's, so every layer may use it: the service layer builds
// the status report as api.Status, transport renders every other answer
// from the service's values (transport/render.go), and the CLI reads and
// sends these same types. The daemon's own types (package store, actors)
// carry no JSON shape, and the backend stores records of its own
// (store/badgerdb/records.go): an answer changes here and only here.
// transport/testdata/answers.json pins what clients read.
package api

import (
	"encoding/json"
	"time"
)

// Source of a drawer.
type Source struct {
	Kind  string `json:"kind"`
	URI   string `json:"uri,omitempty"`
	Agent string `json:"agent,omitempty"`
}

// Provenance of a drawer.
type Provenance struct {
	RequestedBy string `json:"requested_by"`
	JobID       string `json:"job_id,omitempty"`
}

// Drawer in full.
type Drawer struct {
	ID           string     `json:"id"`
	WingID       string     `json:"wing_id"`
	RoomID       string     `json:"room_id"`
	Name         string     `json:"name,omitempty"`
	Content      string     `json:"content"`
	Tags         []string   `json:"tags"`
	Source       Source     `json:"source"`
	Provenance   Provenance `json:"provenance"`
	ValidFrom    time.Time  `json:"valid_from"`
	ValidTo      *time.Time `json:"valid_to,omitempty"`
	CreatedAt    time.Time  `json:"created_at"`
	SupersededBy string     `json:"superseded_by,omitempty"`
	Supersedes   string     `json:"supersedes,omitempty"`
	Diary        bool       `json:"diary,omitempty"`
}

// Preview is a drawer in a listing.
type Preview struct {
	ID           string     `json:"id"`
	Name         string     `json:"name,omitempty"`
	Preview      string     `json:"preview"`
	Bytes        int        `json:"bytes"`
	Tags         []string   `json:"tags"`
	Source       Source     `json:"source"`
	ValidFrom    time.Time  `json:"valid_from"`
	ValidTo      *time.Time `json:"valid_to,omitempty"`
	CreatedAt    time.Time  `json:"created_at"`
	SupersededBy string     `json:"superseded_by,omitempty"`
}

// Similar is a similar_to link as read from one drawer.
type Similar struct {
	Drawer     string  `json:"drawer"`
	Side       string  `json:"side"`
	Kind       string  `json:"kind"`
	Similarity float64 `json:"similarity"`
	Signals    struct {
		SameHash        bool    `json:"same_hash"`
		SameFingerprint bool    `json:"same_fingerprint"`
		Similarity      float64 `json:"similarity"`
		Threshold       float64 `json:"threshold"`
	} `json:"signals"`
	CreatedAt string `json:"created_at"`
	LinkID    string `json:"link_id"`
}

// WriteResult answers a drawer, note or diary write.
type WriteResult struct {
	Created bool      `json:"created"`
	Drawer  Drawer    `json:"drawer"`
	Similar []Similar `json:"similar"`
}

// Room with counts.
type Room struct {
	ID          string    `json:"id"`
	WingID      string    `json:"wing_id"`
	Wing        string    `json:"wing"`
	Name        string    `json:"name"`
	Description string    `json:"description,omitempty"`
	CreatedAt   time.Time `json:"created_at"`
	Drawers     int       `json:"drawers"`
	Stored      int       `json:"drawers_stored"`
}

// Wing with counts, and rooms when one wing is read.
type Wing struct {
	ID          string    `json:"id"`
	Name        string    `json:"name"`
	Description string    `json:"description,omitempty"`
	CreatedAt   time.Time `json:"created_at"`
	RoomCount   int       `json:"rooms_count"`
	Drawers     int       `json:"drawers"`
	Rooms       []Room    `json:"rooms,omitempty"`
}

// WingList is GET /api/wings.
type WingList struct {
	Wings []Wing `json:"wings"`
}

// WingCreated is POST /api/wings (created false: it existed).
type WingCreated struct {
	Created bool `json:"created"`
	Wing    Wing `json:"wing"`
}

// RoomList is GET /api/wings/{wing}/rooms.
type RoomList struct {
	Rooms []Room `json:"rooms"`
}

// RoomCreated is POST /api/wings/{wing}/rooms (created false: it existed).
type RoomCreated struct {
	Created bool `json:"created"`
	Room    Room `json:"room"`
}

// RemovedAnswer answers the delete of a wing or a room.
type RemovedAnswer struct {
	Removed Removed `json:"removed"`
}

// Removed counts a delete.
type Removed struct {
	Wings   int `json:"wings"`
	Rooms   int `json:"rooms"`
	Drawers int `json:"drawers"`
}

// Supersede answers a correction.
type Supersede struct {
	Superseded  Drawer  `json:"superseded"`
	Replacement *Drawer `json:"replacement"`
}

// History is a supersession chain.
type History struct {
	Drawer   Drawer   `json:"drawer"`
	Versions []Drawer `json:"versions"`
}

// DrawerList is a room's drawers (GET …/drawers).
type DrawerList struct {
	Drawers []Preview `json:"drawers"`
	// NextCursor, present when more drawers follow, is the cursor query
	// parameter that reads the next page.
	NextCursor string `json:"next_cursor,omitempty"`
}

// DiaryEntries is GET /api/diary and loci_diary_read.
type DiaryEntries struct {
	Entries []Drawer `json:"entries"`
}

// LinkRemoved answers the delete of a similar_to link.
type LinkRemoved struct {
	Removed string `json:"removed"`
}

// Duplicates lists a drawer's links.
type Duplicates struct {
	Drawer  Drawer    `json:"drawer"`
	Similar []Similar `json:"similar"`
}

// Status is the daemon's status report (GET /api/status, loci_status):
// the daemon builds it as this type and the CLI reads it as this type.
type Status struct {
	Version    string    `json:"version"`
	StartedAt  string    `json:"started_at"`
	UptimeSecs int64     `json:"uptime_secs"`
	PID        int       `json:"pid"`
	Address    string    `json:"address"`
	Palace     string    `json:"palace"`
	Datastore  Datastore `json:"datastore"`
	// Migrations and Counts are null when the store could not be read
	// (the datastore unhealthy, a shared store's database unreachable):
	// unknown, not "empty and not migrated".
	Migrations  *Migrations `json:"migrations"`
	Counts      *Counts     `json:"counts"`
	Mode        string      `json:"mode"`
	AuthEnabled bool        `json:"auth_enabled"`
	// MCP is the address an agent connects to (streamable HTTP).
	MCP string `json:"mcp"`
	// Dashboard is the web dashboard's address; empty when it is off.
	Dashboard string `json:"dashboard,omitempty"`
	// Indexes is how far the derived indexes have followed the store; nil
	// when it could not be read.
	Indexes *Indexes `json:"indexes"`
	// Wings names the palace's wings with their current drawers, most
	// first (at most MaxStatusWings; WingsOmitted counts the rest). Only
	// loci_status sends them: an agent has no other way to learn the
	// names it can scope a search to (REST has GET /api/wings).
	Wings        []WingCount `json:"wings,omitempty"`
	WingsOmitted int         `json:"wings_omitted,omitempty"`
	// Disk is the free space of the palace's filesystem against the
	// reserve; nil when the daemon does not watch it.
	Disk *Disk `json:"disk,omitempty"`
	// Backup is the last successful backup and the warning when none is
	// recent (api/backups.go); nil when the daemon does not report it.
	Backup *BackupStatus `json:"backup,omitempty"`
}

// Disk is the free space of the palace's filesystem against the reserve
// (store.min_free_bytes): while less is free, writes are refused with
// loci::store::disk_full and jobs wait.
type Disk struct {
	// Path is the palace directory whose filesystem is watched.
	Path string `json:"path"`
	// FreeBytes is what an unprivileged writer may still use; -1 when the
	// filesystem cannot say (never full then).
	FreeBytes int64 `json:"free_bytes"`
	// MinFreeBytes is the reserve in force: the setting, raised to what
	// the store needs to start its next files.
	MinFreeBytes int64 `json:"min_free_bytes"`
	// Full: less than the reserve is free, or the store is read-only.
	Full bool `json:"full"`
	// ReadOnly: the daemon started on a full disk and opened the store
	// read-only; it is opened for writing once space is back.
	ReadOnly bool `json:"read_only,omitempty"`
}

// MaxStatusWings bounds the wings loci_status names.
const MaxStatusWings = 100

// WingCount is a wing's name and its current drawers.
type WingCount struct {
	Name    string `json:"name"`
	Drawers int    `json:"drawers"`
}

// Datastore is the store the daemon uses and whether it answers.
type Datastore struct {
	Backend  string `json:"backend"`
	Location string `json:"location"`
	Healthy  bool   `json:"healthy"`
	Error    string `json:"error,omitempty"`
}

// Migrations is the schema and data-step state.
type Migrations struct {
	SchemaHash  string `json:"schema_hash"`
	SchemaSync  bool   `json:"schema_in_sync"`
	DataVersion int    `json:"data_version"`
	Latest      int    `json:"latest"`
	Pending     int    `json:"pending"`
	LastRun     string `json:"last_run,omitempty"`
}

// Counts are the palace's contents.
type Counts struct {
	Wings         int `json:"wings"`
	Rooms         int `json:"rooms"`
	Drawers       int `json:"drawers"`
	DrawersStored int `json:"drawers_stored"`
	Links         int `json:"similar_links"`
}

// Filed is GET /api/stats/filed: the stored drawers (of any validity)
// filed in each of len(Counts) consecutive spans of StepSecs seconds from
// Since, over every room.
type Filed struct {
	Since    time.Time `json:"since"`
	StepSecs int64     `json:"step_secs"`
	Counts   []int     `json:"counts"`
	Total    int       `json:"total"`
}

// Indexes is where each derived index stands in the change log.
type Indexes struct {
	LastSeq uint64                 `json:"last_seq"`
	Lexical IndexState             `json:"lexical"`
	Vectors map[string]VectorIndex `json:"vectors"`
	// Serving is the embedding profile searches use when they name none.
	Serving string `json:"serving,omitempty"`
	// Switch is a change of the default profile in progress: searches use
	// From while To's vectors are built; To serves once it holds a vector
	// for every stored drawer.
	Switch *ProfileSwitch `json:"switch,omitempty"`
}

// ProfileSwitch is how far the new default profile's vectors are built.
type ProfileSwitch struct {
	From     string `json:"from"`
	To       string `json:"to"`
	Embedded uint64 `json:"embedded"`
	Total    uint64 `json:"total"`
}

// IndexState is one derived index: the last change it applied, how many
// it has yet to apply, and the drawers it holds.
type IndexState struct {
	Seq     uint64 `json:"seq"`
	Behind  uint64 `json:"behind"`
	Drawers uint64 `json:"drawers"`
}

// VectorIndex is one profile's vector index, with the change its saved
// file reflects.
type VectorIndex struct {
	IndexState
	SavedSeq uint64 `json:"saved_seq"`
}

// Progress is how far a job is.
type Progress struct {
	Current int64  `json:"current"`
	Total   *int64 `json:"total,omitempty"`
	Message string `json:"message,omitempty"`
}

// Job is a job as GET /api/jobs/{id} shows it.
type Job struct {
	ID               string          `json:"id"`
	Kind             string          `json:"kind"`
	Status           string          `json:"status"`
	Priority         string          `json:"priority"`
	RequestedBy      string          `json:"requested_by"`
	CreatedAt        time.Time       `json:"created_at"`
	UpdatedAt        time.Time       `json:"updated_at"`
	StartedAt        *time.Time      `json:"started_at,omitempty"`
	FinishedAt       *time.Time      `json:"finished_at,omitempty"`
	Progress         Progress        `json:"progress"`
	Attempt          int             `json:"attempt"`
	RecoveryAttempts int             `json:"recovery_attempts"`
	Checkpoint       json.RawMessage `json:"checkpoint"`
	Result           json.RawMessage `json:"result,omitempty"`
	Error            string          `json:"error,omitempty"`
	LeaseOwner       string          `json:"lease_owner,omitempty"`
	LeaseExpiresAt   *time.Time      `json:"lease_expires_at,omitempty"`
	PauseRequested   bool            `json:"pause_requested"`
	CancelRequested  bool            `json:"cancel_requested"`
	// Node is the daemon that must run the job on a shared store (it
	// reads that machine's files); absent when any daemon may.
	Node string `json:"node,omitempty"`
}

// Finished reports a job that is completed, failed or cancelled.
func (j *Job) Finished() bool {
	return j.Status == "completed" || j.Status == "failed" || j.Status == "cancelled"
}

// ForceCancel is POST /api/jobs/{id}/force-cancel.
type ForceCancel struct {
	Status string `json:"status"`
	Job    *Job   `json:"job"`
}

// JobList is GET /api/jobs.
type JobList struct {
	Jobs []Job `json:"jobs"`
}

// WakeUp is GET /api/wake-up.
type WakeUp struct {
	AgentIdentity string       `json:"agent_identity"`
	Wing          string       `json:"wing,omitempty"`
	Diary         *Drawer      `json:"diary"`
	Items         []WakeUpItem `json:"items"`
	// LastSession is the closing turns of the wing's latest mined
	// session (a transcript), when no checkpoint is newer than its end.
	LastSession *WakeUpSession `json:"last_session,omitempty"`
	Bytes       int            `json:"bytes"`
	Skipped     int            `json:"skipped"`
}

// WakeUpSession is a wake-up's closing turns of the last session: the
// last few turns, verbatim, of the wing's newest mined transcript (by the
// time of its last turn), each with its header line ("[user · 2026-11-25
// 10:03:12 UTC]"), oldest first. It is offered when no checkpoint wake-up
// could return is newer than the session's end; it counts as one item and
// its content's bytes count in bytes.
type WakeUpSession struct {
	// Agent is the agent the session was held with, SessionID its id
	// there, Title and Project its title and working directory where
	// the agent recorded them.
	Agent     string `json:"agent,omitempty"`
	SessionID string `json:"session_id,omitempty"`
	Title     string `json:"title,omitempty"`
	Project   string `json:"project,omitempty"`
	// Ended is the time of the session's last turn.
	Ended time.Time `json:"ended"`
	// Drawers are the transcript drawers the turns are from, newest
	// first (the full text is one request away).
	Drawers []string `json:"drawers"`
	// Turns counts the turns in Content; Clipped says the oldest of them
	// lost its start to fit the budget.
	Turns   int    `json:"turns"`
	Clipped bool   `json:"clipped,omitempty"`
	Content string `json:"content"`
}

// WakeUpItem is a wake-up's checkpoint drawer: the agent's own, or, marked
// unattributed, one that no agent signed (after the agent's own).
type WakeUpItem struct {
	Drawer
	Unattributed bool `json:"unattributed,omitempty"`
}

// Hit is a search hit: the drawer, the names of its wing and room (where
// it lives, without another request), its score and the legs that found
// it.
type Hit struct {
	Drawer
	Wing string `json:"wing"`
	Room string `json:"room"`
	// Document and Chunk say where a mined drawer sits: its document's
	// path and the chunk's number from 1 (only the first chunk carries
	// the document's name). Absent on drawers that were not mined.
	Document string      `json:"document,omitempty"`
	Chunk    int         `json:"chunk,omitempty"`
	Score    float64     `json:"score"`
	Signals  *HitSignals `json:"signals,omitempty"`
	// Via names the entities an expanded hit was reached through (only on
	// expanded hits).
	Via []string `json:"via,omitempty"`
	// Turn says, for a hit from a transcript, who said what matched and
	// when.
	Turn *HitTurn `json:"turn,omitempty"`
	Clip
}

// HitTurn is the turn of a transcript drawer (source.kind transcript) that
// matched a search: the speaker's role ("user", "assistant"), whether a
// sub-agent spoke, and when (RFC 3339 UTC, to the second; absent when the
// session did not record it).
type HitTurn struct {
	Role     string `json:"role"`
	SubAgent bool   `json:"sub_agent,omitempty"`
	At       string `json:"at,omitempty"`
}

// Clip marks a hit whose content was clipped to a byte budget: Content
// is then the verbatim window [Window[0], Window[1]) (byte offsets) of
// the drawer's FullBytes bytes, around the passage that matched. The
// whole drawer is one request away (GET /api/drawers/{id}/history,
// loci_history). Absent on a hit sent whole.
type Clip struct {
	Truncated bool    `json:"truncated,omitempty"`
	FullBytes int     `json:"full_bytes,omitempty"`
	Window    *[2]int `json:"window,omitempty"`
}

// BriefHit is a search hit as MCP sends it by default: where it lives in
// words, one timestamp (valid_from, and valid_to once it ended), the
// score and the content (clipped to the answer's budget); everything
// else is one call away (loci_history with its id).
type BriefHit struct {
	ID        string   `json:"id"`
	Wing      string   `json:"wing"`
	Room      string   `json:"room"`
	Name      string   `json:"name,omitempty"`
	Document  string   `json:"document,omitempty"`
	Chunk     int      `json:"chunk,omitempty"`
	ValidFrom string   `json:"valid_from"`
	ValidTo   string   `json:"valid_to,omitempty"`
	Score     float64  `json:"score"`
	Tags      []string `json:"tags,omitempty"`
	Via       []string `json:"via,omitempty"`
	Turn      *HitTurn `json:"turn,omitempty"`
	Content   string   `json:"content"`
	Clip
}

// BriefHistory is loci_history's answer: a drawer's versions, oldest
// first, each verbatim once, where they live by name.
type BriefHistory struct {
	Wing     string         `json:"wing"`
	Room     string         `json:"room"`
	Versions []BriefVersion `json:"versions"`
}

// BriefVersion is one version of a drawer in a BriefHistory.
type BriefVersion struct {
	ID           string   `json:"id"`
	Name         string   `json:"name,omitempty"`
	ValidFrom    string   `json:"valid_from"`
	ValidTo      string   `json:"valid_to,omitempty"`
	SupersededBy string   `json:"superseded_by,omitempty"`
	Tags         []string `json:"tags,omitempty"`
	Content      string   `json:"content"`
}

// BriefResult is a search answer as MCP sends it by default.
type BriefResult struct {
	Ranking string     `json:"ranking"`
	Hits    []BriefHit `json:"hits"`
	// Omitted counts the hits left out because even clipped they did not
	// fit the answer's budget (the lowest ranked).
	Omitted int `json:"omitted,omitempty"`
	// Warning says the results may be stale (SearchResult.Warning).
	Warning string `json:"warning,omitempty"`
}

// HitSignals say which legs found a hit, and where it ranked in each.
type HitSignals struct {
	Lexical  *LexicalSignal  `json:"lexical,omitempty"`
	Semantic *SemanticSignal `json:"semantic,omitempty"`
	Graph    *GraphSignal    `json:"graph,omitempty"`
	Context  *ContextSignal  `json:"context,omitempty"`
}

// ContextSignal says how much a hit's neighbours added to its lexical
// score in the auto ranking: the neighbour that scored best and the share
// of its score added.
type ContextSignal struct {
	Neighbour string  `json:"neighbour"`
	Added     float64 `json:"added"`
}

// GraphSignal says how an expanded hit was reached: through entities a
// direct hit mentions (hops 0) or one open fact further (hops 1), and how
// many of them it mentions.
type GraphSignal struct {
	Hops     int `json:"hops"`
	Entities int `json:"entities"`
}

// LexicalSignal is a hit's place in the lexical leg: its rank, BM25 score
// and whether it holds every word of the query.
type LexicalSignal struct {
	Rank     int     `json:"rank"`
	Score    float64 `json:"score"`
	AllWords bool    `json:"all_words"`
}

// SemanticSignal is a hit's place in the semantic leg: its rank and cosine
// similarity to the query.
type SemanticSignal struct {
	Rank       int     `json:"rank"`
	Similarity float32 `json:"similarity"`
}

// SearchResult is a search answer.
type SearchResult struct {
	Query   string `json:"query"`
	Ranking string `json:"ranking"`
	Hits    []Hit  `json:"hits"`
	// Omitted counts the hits left out because even clipped they did not
	// fit max_bytes (the lowest ranked).
	Omitted int `json:"omitted,omitempty"`
	// Warning says the results may be stale: the store was out of reach
	// and the daemon answered from its own lexical index.
	Warning string `json:"warning,omitempty"`
}

// Config is GET /api/config: the effective configuration, without any
// secret, credential location, URL, key or command line.
type Config struct {
	Listener   Listener     `json:"listener"`
	Palace     string       `json:"palace"`
	Datastore  ConfigStore  `json:"datastore"`
	Auth       ConfigAuth   `json:"auth"`
	Dashboard  Enabled      `json:"dashboard"`
	Assets     Assets       `json:"assets"`
	DB         Endpoint     `json:"db"`
	Webhook    Webhook      `json:"webhook"`
	Dedup      ConfigDedup  `json:"dedup"`
	Jobs       ConfigJobs   `json:"jobs"`
	Mining     ConfigMining `json:"mining"`
	Providers  Providers    `json:"providers"`
	ConfigFile string       `json:"config_file"`
}

// Listener is where the daemon listens.
type Listener struct {
	Bind    string `json:"bind"`
	Port    int    `json:"port"`
	Address string `json:"address"`
}

// ConfigStore names the store.
type ConfigStore struct {
	Backend  string `json:"backend"`
	Location string `json:"location"`
	// Password says where a shared store's password came from ("env
	// LOCI_DATASTORE_PASSWORD", "file datastore.password_file", "none"),
	// never the password nor the file's path; empty for the embedded
	// store.
	Password string `json:"password,omitempty"`
}

// ConfigAuth is whether authentication is on and a secret configured.
type ConfigAuth struct {
	Enabled         bool `json:"enabled"`
	TokenConfigured bool `json:"token_configured"`
}

// Enabled is a feature switch.
type Enabled struct {
	Enabled bool `json:"enabled"`
}

// Assets is where the dashboard's assets come from.
type Assets struct {
	Origin string `json:"origin"`
}

// Endpoint is a listener of another service.
type Endpoint struct {
	Bind        string `json:"bind"`
	Port        int    `json:"port"`
	AllowRemote bool   `json:"allow_remote"`
}

// Webhook is the webhook listener.
type Webhook struct {
	Enable      bool   `json:"enable"`
	Bind        string `json:"bind"`
	Port        int    `json:"port"`
	AllowRemote bool   `json:"allow_remote"`
}

// ConfigDedup is deduplication's settings.
type ConfigDedup struct {
	Enabled       bool    `json:"enabled"`
	NearThreshold float64 `json:"near_threshold"`
	EntityFuzzy   bool    `json:"entity_fuzzy"`
}

// ConfigJobs is the job runtime's settings.
type ConfigJobs struct {
	MaxConcurrency        int `json:"max_concurrency"`
	BackgroundConcurrency int `json:"background_concurrency"`
	LeaseTTLSecs          int `json:"lease_ttl_secs"`
	DrainTimeoutSecs      int `json:"drain_timeout_secs"`
}

// ConfigMining is the mining pipeline's settings.
type ConfigMining struct {
	ChunkChars        int   `json:"chunk_chars"`
	MaxFileBytes      int64 `json:"max_file_bytes"`
	MaxDocuments      int   `json:"max_documents"`
	SourceTimeoutSecs int   `json:"source_timeout_secs"`
	// Secrets is what mining does with a credential in a document:
	// redact, skip or allow.
	Secrets string `json:"secrets"`
}

// Providers names the embedding and extraction providers (nil: none).
type Providers struct {
	Embedding  *EmbeddingProviders `json:"embedding"`
	Extraction *struct{}           `json:"extraction"`
}

// EmbeddingProviders are the embedding profiles: provider and model only.
type EmbeddingProviders struct {
	Default  string                      `json:"default"`
	Profiles map[string]EmbeddingProfile `json:"profiles"`
	SaveSecs int                         `json:"save_secs"`
}

// EmbeddingProfile is one profile's identity.
type EmbeddingProfile struct {
	Provider  string `json:"provider"`
	Model     string `json:"model"`
	Dimension int    `json:"dimension"`
	Pipeline  string `json:"pipeline"`
}

// MineResult is a mine job's result: what it read and what that changed.
type MineResult struct {
	// Documents were gone through (read or filtered) of the Discovered
	// past the cursor.
	Documents  int `json:"documents"`
	Discovered int `json:"discovered"`
	// Filtered were excluded by the source's rules (empty, too large, not
	// UTF-8, binary, blank).
	Filtered int `json:"filtered"`
	// Ingested changed the palace; Unchanged were as last filed; Skipped
	// were read but not filed (a secret under mining.secrets = skip, a
	// file gone before it was read).
	Ingested  int `json:"ingested"`
	Unchanged int `json:"unchanged"`
	Skipped   int `json:"skipped"`
	// Created, Superseded and Retired count drawers; Similar the
	// similar_to links the new drawers got.
	Created    int `json:"created"`
	Superseded int `json:"superseded"`
	Retired    int `json:"retired"`
	Similar    int `json:"similar"`
	// Redacted counts secrets replaced by a marker.
	Redacted int `json:"redacted"`
	// UnknownRecords counts the records a transcript source left out
	// because it does not know their type (never an error).
	UnknownRecords int `json:"unknown_records,omitempty"`
	// Truncated: the limit stopped the job with more left; the next job
	// goes on.
	Truncated bool `json:"truncated"`
	// Limit is the effective max_documents, null when unlimited.
	Limit *int `json:"limit"`
	// Bytes is what was read.
	Bytes int64 `json:"bytes"`
	// Wing is the wing mined into; Mode how the source was read: first
	// (never mined into this wing: everything), incremental (past the
	// cursor) or full (asked).
	Wing string `json:"wing"`
	Mode string `json:"mode"`
	// Refiled were gone through again because drawers of theirs had been
	// deleted; Pruned were gone from the source, their drawers closed
	// (the prune option).
	Refiled int `json:"refiled"`
	Pruned  int `json:"pruned"`
	// Tracked is how many documents of the source are filed in the wing
	// as the job ends.
	Tracked int `json:"tracked"`
	// Outcome says what the counts mean: changed, up_to_date (an
	// incremental read found nothing new), unchanged (a first or full
	// read found everything as filed), empty (the source lists no
	// documents) or nothing_filed (documents found, none could be filed);
	// Note says it in a sentence, with what to do when there is something.
	Outcome string `json:"outcome"`
	Note    string `json:"note"`
}

// Mine outcomes (MineResult.Outcome) and modes (MineResult.Mode).
const (
	MineChanged      = "changed"
	MineUpToDate     = "up_to_date"
	MineUnchanged    = "unchanged"
	MineEmpty        = "empty"
	MineNothingFiled = "nothing_filed"

	MineFirst       = "first"
	MineIncremental = "incremental"
	MineFull        = "full"
)

// SourceList is GET /api/sources: the adapters the daemon offers and the
// sources mined so far.
type SourceList struct {
	Adapters []SourceAdapter `json:"adapters"`
	Sources  []MinedSource   `json:"sources"`
	// Warnings are the retention guard's: agents' sessions about to be
	// deleted unmined, mined sessions the agent has deleted since.
	Warnings []SourceWarning `json:"warnings"`
}

// SourceWarning is one finding of the retention guard about an agent's
// sessions at one location.
type SourceWarning struct {
	// Kind is "expiring_unmined" (sessions near or past the agent's
	// cleanup period that no wing holds: mine them now) or
	// "deleted_by_agent" (sessions mined into Wing that the agent has
	// deleted since: loci keeps them).
	Kind    string `json:"kind"`
	Adapter string `json:"adapter"`
	Locator string `json:"locator"`
	Wing    string `json:"wing,omitempty"`
	// Sessions is how many sessions it is about.
	Sessions int `json:"sessions"`
	// Message says it in a sentence; Help what to do (empty when nothing
	// needs doing).
	Message string `json:"message"`
	Help    string `json:"help,omitempty"`
}

// SourceAdapter is a source adapter: its state, origin, declared option
// keys and capabilities.
type SourceAdapter struct {
	Name string `json:"name"`
	// State is the spec's installed-source state: installed, enabled,
	// disabled, unavailable or incompatible (built-in sources: enabled).
	State string `json:"state"`
	// Origin is built-in, bundled, registry, local or plugin.
	Origin string `json:"origin"`
	// Reason says why an unavailable or incompatible source is so.
	Reason       string             `json:"reason,omitempty"`
	Options      []string           `json:"options"`
	Capabilities SourceCapabilities `json:"capabilities"`
	// Format is the stated version of the session or export format the
	// adapter follows (transcript sources).
	Format string `json:"format,omitempty"`
	// DefaultLocator is what an empty locator stands for.
	DefaultLocator string `json:"default_locator,omitempty"`
}

// SourceCapabilities are what an adapter can do.
type SourceCapabilities struct {
	Incremental      bool     `json:"incremental"`
	KeepsRaw         bool     `json:"keeps_raw_documents"`
	NeedsCredentials bool     `json:"needs_credentials"`
	Triggers         []string `json:"triggers"`
}

// MinedSource is a source mined at least once into a wing (a source mined
// into two wings is listed twice, once per wing: each has its own cursor).
type MinedSource struct {
	Key     string `json:"key"`
	Adapter string `json:"adapter"`
	Account string `json:"account,omitempty"`
	Locator string `json:"locator"`
	// Wing and WingID are the wing it is mined into.
	Wing      string    `json:"wing"`
	WingID    string    `json:"wing_id"`
	Documents int       `json:"documents"`
	LastJob   string    `json:"last_job,omitempty"`
	LastRun   time.Time `json:"last_run"`
}

// CheckpointResult is a checkpoint job's result: the items written and how
// many of them were duplicates of a stored drawer.
type CheckpointResult struct {
	Items      int `json:"items"`
	Duplicates int `json:"duplicates"`
	// Facts are the items' facts, in item order, with the ids a later
	// supersede, invalidate, link or fact history names them by.
	Facts []CheckpointFact `json:"facts,omitempty"`
}

// CheckpointFact is what one item's fact operation is about now: the fact
// it added (or the open identical one it is more evidence of), the fact a
// supersede recorded, the fact it invalidated; a link's id.
type CheckpointFact struct {
	Item           int    `json:"item"`
	Op             string `json:"op"`
	RelationshipID string `json:"relationship_id,omitempty"`
	LinkID         string `json:"link_id,omitempty"`
}

// DemoResult is a demo job's result.
type DemoResult struct {
	Steps   int `json:"steps"`
	Drawers int `json:"drawers"`
}

// MinerList is GET /api/miners: the miners of the configuration file.
type MinerList struct {
	Miners     []Miner `json:"miners"`
	ConfigFile string  `json:"config_file,omitempty"`
	// ConfigFileToCreate is, while no file was read, the one the first
	// change creates (the file the daemon reads at its next start).
	ConfigFileToCreate string `json:"config_file_to_create,omitempty"`
	Error              string `json:"error,omitempty"`
}

// Miner is a saved definition of what to mine, with its state (ready,
// disabled, unavailable with a reason).
type Miner struct {
	Name         string            `json:"name"`
	Source       string            `json:"source"`
	Locator      string            `json:"locator"`
	Wing         string            `json:"wing,omitempty"`
	Options      map[string]string `json:"options"`
	Credential   *MinerCredential  `json:"credential,omitempty"`
	Enabled      bool              `json:"enabled"`
	MaxDocuments *int              `json:"max_documents,omitempty"`
	Schedule     *MinerSchedule    `json:"schedule,omitempty"`
	State        string            `json:"state"`
	Reason       string            `json:"reason,omitempty"`
}

// MinerCredential is a miner's credential as shown: its kind (env, file,
// oauth) and whether it can be read now, never its name, path or value.
type MinerCredential struct {
	Kind      string `json:"kind"`
	Available bool   `json:"available"`
}

// MinerSchedule is a miner's timetable.
type MinerSchedule struct {
	Every string `json:"every"`
	At    string `json:"at,omitempty"`
	// Enabled: the miner is opted in to its schedule.
	Enabled bool `json:"enabled"`
}

// MinerRun is the optional body of POST /api/miners/{name}/run.
type MinerRun struct {
	Full         bool              `json:"full,omitempty"`
	RequestedBy  string            `json:"requested_by,omitempty"`
	Options      map[string]string `json:"options,omitempty"`
	AllowBroaden bool              `json:"allow_broaden,omitempty"`
}

// MinersReloaded is POST /api/miners/reload: the miners now and what the
// reload changed, by name.
type MinersReloaded struct {
	Miners    []Miner  `json:"miners"`
	Added     []string `json:"added"`
	Removed   []string `json:"removed"`
	Changed   []string `json:"changed"`
	Enabled   []string `json:"enabled"`
	Disabled  []string `json:"disabled"`
	Broadened []string `json:"broadened"`
}

// SourceConfigList is GET /api/source-configs: the explicit source
// configurations and the implicit one of every adapter.
type SourceConfigList struct {
	Configs []SourceConfig `json:"configs"`
}

// SourceConfig is a source configuration with its credential's status
// (never its location or content).
type SourceConfig struct {
	ID         string            `json:"id"`
	Source     string            `json:"source"`
	Options    map[string]string `json:"options"`
	Credential *MinerCredential  `json:"credential,omitempty"`
	Implicit   bool              `json:"implicit"`
}

// TriggerList is GET /api/triggers: the triggers, the webhook listener,
// the configuration file and why reading it last failed.
type TriggerList struct {
	Triggers   []Trigger       `json:"triggers"`
	Webhook    WebhookListener `json:"webhook"`
	ConfigFile string          `json:"config_file,omitempty"`
	// ConfigFileToCreate is as in MinerList.
	ConfigFileToCreate string `json:"config_file_to_create,omitempty"`
	Error              string `json:"error,omitempty"`
}

// WebhookListener is the webhook listener's settings and whether it
// listens now.
type WebhookListener struct {
	Enabled     bool   `json:"enabled"`
	Bind        string `json:"bind"`
	Port        int    `json:"port"`
	AllowRemote bool   `json:"allow_remote"`
	Listening   *bool  `json:"listening,omitempty"`
}

// Trigger is a trigger as read: its definition and its computed status.
type Trigger struct {
	Name       string            `json:"name"`
	Miner      string            `json:"miner"`
	Type       string            `json:"type"`
	Enabled    bool              `json:"enabled"`
	Credential *MinerCredential  `json:"credential,omitempty"`
	Settings   map[string]string `json:"settings"`
	// Status is disabled, active, failing or unavailable; Reason says why
	// when it is not active; Setup is what enabling still needs.
	Status    string          `json:"status"`
	Reason    string          `json:"reason,omitempty"`
	Setup     []string        `json:"setup"`
	Running   bool            `json:"running"`
	Endpoint  string          `json:"endpoint,omitempty"`
	Counters  TriggerCounters `json:"counters"`
	NextDue   *time.Time      `json:"next_due,omitempty"`
	LastError string          `json:"last_error,omitempty"`
	LastJob   string          `json:"last_job,omitempty"`
}

// TriggerCounters count a trigger's signals: runs queued (fired), joined
// (coalesced), failed requests, and webhook deliveries accepted.
type TriggerCounters struct {
	Fired      int64 `json:"fired"`
	Coalesced  int64 `json:"coalesced"`
	Failed     int64 `json:"failed"`
	Deliveries int64 `json:"deliveries"`
}

// TriggersReloaded is POST /api/triggers/reload.
type TriggersReloaded struct {
	Triggers []Trigger `json:"triggers"`
	Added    []string  `json:"added"`
	Removed  []string  `json:"removed"`
	Changed  []string  `json:"changed"`
}

// TriggerFired is POST /api/triggers/{name}/fire and the answer of an
// accepted webhook delivery: queued, coalesced (or, for a delivery,
// duplicate) and the job.
type TriggerFired struct {
	Outcome string `json:"outcome,omitempty"`
	Status  string `json:"status,omitempty"`
	Job     *Job   `json:"job,omitempty"`
}

// Entity is a knowledge-graph entity.
type Entity struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Kind      string    `json:"kind"`
	Key       string    `json:"key"`
	Aliases   []string  `json:"aliases"`
	CreatedAt time.Time `json:"created_at"`
}

// EntityList is GET /api/entities.
type EntityList struct {
	Entities  []Entity `json:"entities"`
	Truncated bool     `json:"truncated"`
}

// Mention is a drawer's mention of an entity as read.
type Mention struct {
	Drawer      string             `json:"drawer"`
	Provenance  MentionProvenance  `json:"provenance"`
	Observation MentionObservation `json:"observation"`
}

// MentionProvenance is where a mention came from.
type MentionProvenance struct {
	Drawer    string `json:"drawer"`
	Extractor string `json:"extractor"`
	Origin    string `json:"origin"`
}

// MentionObservation is what was seen: the name as spelled, the rule that
// resolved it, and a confidence.
type MentionObservation struct {
	Name       string  `json:"name"`
	Rule       string  `json:"rule"`
	Confidence float64 `json:"confidence"`
}

// MentionList is GET /api/entities/{id}/mentions.
type MentionList struct {
	Entity   Entity    `json:"entity"`
	Mentions []Mention `json:"mentions"`
}

// MentionLinked is POST /api/drawers/{id}/mentions.
type MentionLinked struct {
	Mention Mention `json:"mention"`
	Entity  Entity  `json:"entity"`
	Linked  bool    `json:"linked"`
}

// EntityCandidate is an entity another one resembles.
type EntityCandidate struct {
	Entity     Entity  `json:"entity"`
	Side       string  `json:"side"`
	Similarity float64 `json:"similarity"`
}

// EntityCandidates is GET /api/entities/{id}/candidates.
type EntityCandidates struct {
	Candidates []EntityCandidate `json:"candidates"`
}

// EntityRef is an entity named inside another answer.
type EntityRef struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Kind string `json:"kind"`
}

// Fact is a relates_to relationship as read: bi-temporal (valid_from,
// valid_to; recorded_at, retracted_at), with its provenance and whether it
// holds at the time asked.
type Fact struct {
	ID          string         `json:"id"`
	Subject     EntityRef      `json:"subject"`
	Predicate   string         `json:"predicate"`
	Object      EntityRef      `json:"object"`
	Confidence  float64        `json:"confidence"`
	ValidFrom   time.Time      `json:"valid_from"`
	ValidTo     *time.Time     `json:"valid_to,omitempty"`
	RecordedAt  time.Time      `json:"recorded_at"`
	RetractedAt *time.Time     `json:"retracted_at,omitempty"`
	Provenance  FactProvenance `json:"provenance"`
	// Evidence is every assertion of the fact, the first (provenance)
	// first: an identical fact asserted again while this one is open
	// adds to it.
	Evidence     []FactEvidence `json:"evidence"`
	SupersededBy string         `json:"superseded_by,omitempty"`
	Reason       string         `json:"reason,omitempty"`
	Current      bool           `json:"current"`
}

// FactEvidence is one assertion of a fact: its evidence drawer (and
// whether that drawer is current), the job, the extractor and when it was
// recorded.
type FactEvidence struct {
	Drawer        string    `json:"drawer,omitempty"`
	DrawerCurrent bool      `json:"drawer_current"`
	Job           string    `json:"job,omitempty"`
	Extractor     string    `json:"extractor,omitempty"`
	RecordedAt    time.Time `json:"recorded_at"`
}

// FactProvenance is where a fact came from: its evidence drawer (and
// whether that drawer is still current), the job and the extractor.
type FactProvenance struct {
	Drawer         string `json:"drawer,omitempty"`
	DrawerCurrent  bool   `json:"drawer_current"`
	Job            string `json:"job,omitempty"`
	Extractor      string `json:"extractor,omitempty"`
	ClosedByDrawer string `json:"closed_by,omitempty"`
}

// FactList is GET /api/entities/{id}/relationships.
type FactList struct {
	Entity        Entity `json:"entity"`
	Relationships []Fact `json:"relationships"`
}

// FactHistory is GET /api/relationships/{id}/history and loci_fact_history:
// the fact and its linked facts with the decision and its evidence.
type FactHistory struct {
	Relationship Fact          `json:"relationship"`
	Related      []RelatedFact `json:"related"`
}

// RelatedFact is a fact of a history and how it relates: supersedes,
// superseded_by, confirms, contradicts or refines (side: from when the
// related fact made the link, to when this one did).
type RelatedFact struct {
	Relation     string `json:"relation"`
	Side         string `json:"side,omitempty"`
	Reason       string `json:"reason,omitempty"`
	Evidence     string `json:"evidence,omitempty"`
	Relationship Fact   `json:"relationship"`
}

// Graph is GET /api/graph: entities and the open facts among them.
type Graph struct {
	// Entity is the entity the walk started from, when one was given
	// (by id or name).
	Entity    *Entity  `json:"entity,omitempty"`
	Nodes     []Entity `json:"nodes"`
	Edges     []Fact   `json:"edges"`
	Truncated bool     `json:"truncated"`
}
