package api

import (
	"encoding/json"
	"time"
)

// Requests: the bodies the REST handlers decode and the CLI sends. A
// field left at its zero value is omitted, which the daemon reads as not
// given.

// NewPlace is the body of POST /api/wings and POST /api/wings/{wing}/rooms.
type NewPlace struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
}

// NewDrawer is the body of POST /api/wings/{wing}/rooms/{room}/drawers.
type NewDrawer struct {
	Content     string   `json:"content"`
	Name        string   `json:"name,omitempty"`
	Tags        []string `json:"tags,omitempty"`
	Source      *Source  `json:"source,omitempty"`
	ValidFrom   string   `json:"valid_from,omitempty"`
	RequestedBy string   `json:"requested_by,omitempty"`
}

// NewNote is the body of POST /api/notes.
type NewNote struct {
	Wing        string `json:"wing"`
	Room        string `json:"room"`
	Content     string `json:"content"`
	URI         string `json:"uri,omitempty"`
	RequestedBy string `json:"requested_by,omitempty"`
}

// DiaryWrite is the body of POST /api/diary.
type DiaryWrite struct {
	AgentIdentity string `json:"agent_identity"`
	Wing          string `json:"wing,omitempty"`
	Content       string `json:"content"`
	RequestedBy   string `json:"requested_by,omitempty"`
}

// SupersedeRequest is the body of POST /api/drawers/{id}/supersede: no
// content invalidates the drawer; tags, when given, replace its tags.
type SupersedeRequest struct {
	Content     *string   `json:"content,omitempty"`
	Tags        *[]string `json:"tags,omitempty"`
	RequestedBy string    `json:"requested_by,omitempty"`
}

// SearchRequest is the search query object of POST /api/search and
// /api/recall (query is a synonym of text).
type SearchRequest struct {
	Text           string        `json:"text,omitempty"`
	Query          string        `json:"query,omitempty"`
	Ranking        string        `json:"ranking,omitempty"`
	Limit          int           `json:"limit,omitempty"`
	Filter         *SearchFilter `json:"filter,omitempty"`
	Profile        string        `json:"profile,omitempty"`
	QueryEmbedding []float32     `json:"query_embedding,omitempty"`
	Expand         bool          `json:"expand,omitempty"`
	// KnownAt (RFC 3339 or a date) answers as loci would have then.
	KnownAt string `json:"known_at,omitempty"`
	// MaxBytes bounds the whole answer, MaxHitBytes one hit's content
	// (0: no bound): a hit past them is clipped around the passage that
	// matched.
	MaxBytes    int `json:"max_bytes,omitempty"`
	MaxHitBytes int `json:"max_hit_bytes,omitempty"`
}

// SearchFilter narrows a search. Temporal is "current", "all",
// {"as_of": instant} or {"between": {"from": instant, "until": instant}}.
type SearchFilter struct {
	Wing       string          `json:"wing,omitempty"`
	Room       string          `json:"room,omitempty"`
	Tags       []string        `json:"tags,omitempty"`
	SourceKind string          `json:"source_kind,omitempty"`
	Temporal   json.RawMessage `json:"temporal,omitempty"`
}

// EmbeddingPut is the body of PUT /api/drawers/{id}/embedding.
type EmbeddingPut struct {
	Profile   string    `json:"profile"`
	Embedding []float32 `json:"embedding"`
}

// Small answers.

// Embedding is the answer of PUT /api/drawers/{id}/embedding: what the
// stored vector was made by (never the vector).
type Embedding struct {
	DrawerID  string    `json:"drawer_id"`
	Profile   string    `json:"profile"`
	Provider  string    `json:"provider"`
	Model     string    `json:"model"`
	Dimension int       `json:"dimension"`
	Pipeline  string    `json:"pipeline"`
	CreatedAt time.Time `json:"created_at"`
}

// GeneratedToken is the answer of POST /api/auth/token: the token, shown
// this once.
type GeneratedToken struct {
	Token     string    `json:"token"`
	Algorithm string    `json:"algorithm"`
	Version   int       `json:"version"`
	CreatedAt time.Time `json:"created_at"`
}

// TokenRevoked is the answer of DELETE /api/auth/token.
type TokenRevoked struct {
	Revoked bool `json:"revoked"`
}

// DaemonState is the answer of GET /api/health ("ok") and POST
// /api/shutdown ("shutting_down").
type DaemonState struct {
	Status string `json:"status"`
}

// ModeSet is the answer of loci_set_mode: the session's mode now.
type ModeSet struct {
	Mode string `json:"mode"`
}

// MinerPut is the body of PUT /api/miners/{name}: the fields named change.
type MinerPut struct {
	Source     *string        `json:"source,omitempty"`
	Enabled    *bool          `json:"enabled,omitempty"`
	Locator    *string        `json:"locator,omitempty"`
	Wing       *string        `json:"wing,omitempty"`
	Credential *CredentialRef `json:"credential,omitempty"`
	// MaxDocuments overrides mining.max_documents for the miner's runs
	// (0: unlimited).
	MaxDocuments *int              `json:"max_documents,omitempty"`
	Options      map[string]string `json:"options,omitempty"`
	UnsetOptions []string          `json:"unset_options,omitempty"`
	Unset        []string          `json:"unset,omitempty"`
	AllowBroaden bool              `json:"allow_broaden,omitempty"`
}

// CredentialRef names where a credential is read: exactly one of an
// environment variable, a file, or oauth. Never the secret.
type CredentialRef struct {
	Env   string `json:"env,omitempty"`
	File  string `json:"file,omitempty"`
	OAuth bool   `json:"oauth,omitempty"`
}

// MinerPutResult is the answer of PUT /api/miners/{name}.
type MinerPutResult struct {
	Miner           Miner `json:"miner"`
	Created         bool  `json:"created"`
	Changed         bool  `json:"changed"`
	IdentityChanged bool  `json:"identity_changed"`
	ConfigWritten
}

// ConfigWritten says where a change of the configuration file went: the
// file (read or written), and whether this change created it (a daemon
// that read none creates the one it reads at its next start).
type ConfigWritten struct {
	ConfigFile        string `json:"config_file,omitempty"`
	ConfigFileCreated bool   `json:"config_file_created,omitempty"`
}

// MinerRemoved is the answer of DELETE /api/miners/{name}.
type MinerRemoved struct {
	Removed string `json:"removed"`
}

// SourceConfigPut is the body of PUT /api/source-configs/{id}.
type SourceConfigPut struct {
	Source          *string           `json:"source,omitempty"`
	Options         map[string]string `json:"options,omitempty"`
	Credential      *CredentialRef    `json:"credential,omitempty"`
	UnsetOptions    []string          `json:"unset_options,omitempty"`
	UnsetCredential bool              `json:"unset_credential,omitempty"`
}

// SourceConfigPutResult is the answer of PUT /api/source-configs/{id}.
type SourceConfigPutResult struct {
	Config  SourceConfig `json:"config"`
	Created bool         `json:"created"`
	Changed bool         `json:"changed"`
	ConfigWritten
}

// TriggerPut is the body of PUT /api/triggers/{name}: the fields named
// change. Settings values may be strings, booleans or numbers.
type TriggerPut struct {
	Miner         *string        `json:"miner,omitempty"`
	Type          *string        `json:"type,omitempty"`
	Enabled       *bool          `json:"enabled,omitempty"`
	Credential    *CredentialRef `json:"credential,omitempty"`
	Settings      map[string]any `json:"settings,omitempty"`
	UnsetSettings []string       `json:"unset_settings,omitempty"`
	Unset         []string       `json:"unset,omitempty"`
}

// TriggerPutResult is the answer of PUT /api/triggers/{name}.
type TriggerPutResult struct {
	Trigger Trigger `json:"trigger"`
	Created bool    `json:"created"`
	Changed bool    `json:"changed"`
	ConfigWritten
}

// MentionLink is the body of POST /api/drawers/{id}/mentions.
type MentionLink struct {
	Name string `json:"name"`
	Kind string `json:"kind"`
}

// AliasAdd is the body of POST /api/entities/{id}/aliases.
type AliasAdd struct {
	Alias string `json:"alias"`
}
