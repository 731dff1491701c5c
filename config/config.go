// Package config is loci's one configuration struct: every setting of the
// spec with its default and validation, loaded from defaults, then the TOML
// file, then LOCI_* environment variables, then flags (applied by the
// caller through Set). It does no network I/O and knows nothing of HTTP.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/pelletier/go-toml/v2"

	"github.com/loci-dev/loci/extract/provider"
	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/names"
	"github.com/loci-dev/loci/search/rank"
	"github.com/loci-dev/loci/sources/secret"
	"github.com/loci-dev/loci/triggers"
)

// Config is the whole configuration.
type Config struct {
	Server      Server      `toml:"server" json:"server"`
	Palace      Palace      `toml:"palace" json:"palace"`
	Store       Store       `toml:"store" json:"store"`
	Datastore   Datastore   `toml:"datastore" json:"datastore"`
	Auth        Auth        `toml:"auth" json:"auth"`
	Web         Web         `toml:"web" json:"web"`
	DB          DB          `toml:"db" json:"db"`
	Webhook     Webhook     `toml:"webhook" json:"webhook"`
	Dedup       Dedup       `toml:"dedup" json:"dedup"`
	Jobs        Jobs        `toml:"jobs" json:"jobs"`
	Mining      Mining      `toml:"mining" json:"mining"`
	Credentials Credentials `toml:"credentials" json:"credentials"`
	Assets      Assets      `toml:"assets" json:"assets"`
	Embedding   Embedding   `toml:"embedding" json:"embedding"`
	Extraction  Extraction  `toml:"extraction" json:"extraction"`
	Search      Search      `toml:"search" json:"search"`
	Backup      Backup      `toml:"backup" json:"backup"`
	Import      Import      `toml:"import" json:"import"`
	// Miners are the saved definitions of what to mine, by name
	// ([miners.<name>]). Enablement lives only here.
	Miners map[string]Miner `toml:"miners" json:"-"`
	// SourceConfigs are named source configurations ([source_configs.<id>]):
	// a source with options and a credential that miners name as their
	// source.
	SourceConfigs map[string]SourceConfig `toml:"source_configs" json:"-"`
	// Triggers ask for miner runs automatically ([triggers.<name>]).
	// Enablement lives only here.
	Triggers map[string]Trigger `toml:"triggers" json:"-"`

	// File is the configuration file that was read, or "" when none was.
	File string `toml:"-" json:"config_file,omitempty"`
}

// Server is the main listener.
type Server struct {
	Bind string `toml:"bind" json:"bind"`
	Port int    `toml:"port" json:"port"`
	// MaxConnections caps the listener's open connections; 0 derives the
	// cap from the process's open-file limit (transport.ConnBudget).
	MaxConnections int `toml:"max_connections" json:"max_connections"`
	// MaxSubscribers caps the event streams (GET /api/events) open at
	// once; past it a new one is refused 503 loci::server::busy.
	MaxSubscribers int `toml:"max_subscribers" json:"max_subscribers"`
	// SlowSubscriberSecs is how long an event or MCP stream may stay
	// behind (its client not reading) before it is dropped.
	SlowSubscriberSecs int `toml:"slow_subscriber_secs" json:"slow_subscriber_secs"`
}

// Palace is where the embedded store lives.
type Palace struct {
	Path string `toml:"path" json:"path"`
}

// DefaultMinFreeBytes is store.min_free_bytes's default: 256 MiB, above
// what Badger takes to start a new memtable log and value log file and
// flush the full memtable (store/badgerdb.Headroom, 128 MiB with its
// sizes of today); the daemon keeps the larger of the two.
const DefaultMinFreeBytes int64 = 256 << 20

// Store is the embedded store.
type Store struct {
	// MinFreeBytes is the reserve: writes are refused with
	// loci::store::disk_full while the palace's filesystem has less free.
	MinFreeBytes int64 `toml:"min_free_bytes" json:"min_free_bytes"`
}

// Datastore is the shared store: a PostgreSQL database several daemons
// use at once. Without URL the palace is the embedded store under
// palace.path.
type Datastore struct {
	// URL is postgres://USER@HOST:PORT/DATABASE?options. It never holds
	// the password (Validate refuses one): configuration files are shown
	// and copied.
	URL string `toml:"url" json:"-"`
	// PasswordFile is a file holding the password (its first line).
	PasswordFile string `toml:"password_file" json:"-"`
	// Password is LOCI_DATASTORE_PASSWORD's value: never in a file, never
	// shown (excluded from JSON); the daemon drops it once the store is
	// open.
	Password string `toml:"-" json:"-"`
	// PasswordFrom is where the password came from, kept by Forget for
	// status and GET /api/config (PasswordFromEnv, PasswordFromFile,
	// PasswordFromNone).
	PasswordFrom string `toml:"-" json:"-"`
}

// Forget drops the password from the configuration (the store, once
// open, holds it; nothing else may), keeping where it came from.
func (d *Datastore) Forget() {
	switch {
	case d.Password != "":
		d.PasswordFrom = PasswordFromEnv
	case d.PasswordFile != "":
		d.PasswordFrom = PasswordFromFile
	case d.PasswordFrom == "":
		d.PasswordFrom = PasswordFromNone
	}
	d.Password = ""
}

// Shared reports whether the palace is a shared store (datastore.url).
func (d Datastore) Shared() bool { return d.URL != "" }

// DatastorePasswordEnv is the environment variable holding the shared
// store's password.
const DatastorePasswordEnv = "LOCI_DATASTORE_PASSWORD"

// Password sources, as status and GET /api/config name them.
const (
	PasswordFromEnv  = "env " + DatastorePasswordEnv
	PasswordFromFile = "file datastore.password_file"
	PasswordFromNone = "none"
)

// ReadPassword is the shared store's password and where it came from:
// LOCI_DATASTORE_PASSWORD when set (the environment beats the file, as
// everywhere), else datastore.password_file's first line, else none (the
// driver may still find PGPASSWORD or a passfile). An unreadable or empty
// file is loci::config::invalid naming the setting, never the content.
func (d Datastore) ReadPassword() (password, from string, err error) {
	if d.Password != "" {
		return d.Password, PasswordFromEnv, nil
	}
	if d.PasswordFile == "" {
		return "", PasswordFromNone, nil
	}
	b, err := os.ReadFile(d.PasswordFile)
	if err != nil {
		return "", PasswordFromFile, fault.Newf(fault.ConfigInvalid,
			"make the file readable by the daemon's user, or set "+DatastorePasswordEnv+" instead",
			"datastore.password_file: %s cannot be read", d.PasswordFile)
	}
	pw, _, _ := strings.Cut(string(b), "\n")
	pw = strings.TrimRight(pw, "\r")
	if pw == "" {
		return "", PasswordFromFile, fault.Newf(fault.ConfigInvalid, "write the password on the file's first line",
			"datastore.password_file: %s is empty", d.PasswordFile)
	}
	return pw, PasswordFromFile, nil
}

// PasswordFileWarning is what the daemon logs at its start about
// datastore.password_file, "" when nothing: a file that the group or
// others may read (its mode shows which) is a password other users of
// the machine may read. It names the file and its mode, never the
// content; the environment's password, when set, is the one used, and
// the file is then not looked at.
func (d Datastore) PasswordFileWarning() string {
	if d.Password != "" || d.PasswordFile == "" {
		return ""
	}
	fi, err := os.Stat(d.PasswordFile)
	if err != nil || fi.Mode().Perm()&0o077 == 0 {
		return ""
	}
	return fmt.Sprintf("datastore.password_file %s has mode %04o: the group or other users of this machine may read the shared store's password; "+
		"make it readable by the daemon's user only (chmod 600 %s)", d.PasswordFile, fi.Mode().Perm(), d.PasswordFile)
}

// Auth is bearer-token authentication.
type Auth struct {
	Enabled bool `toml:"enabled" json:"enabled"`
	// Token is the configured shared secret. It never leaves the process:
	// it is excluded from JSON.
	Token string `toml:"token" json:"-"`
}

// Web is the dashboard.
type Web struct {
	Enable bool `toml:"enable" json:"enable"`
}

// DB is the database admin listener.
type DB struct {
	Bind           string   `toml:"bind" json:"bind"`
	Port           int      `toml:"port" json:"port"`
	AllowRemote    bool     `toml:"allow_remote" json:"allow_remote"`
	AllowedOrigins []string `toml:"allowed_origins" json:"allowed_origins"`
	// QueryTimeoutSecs bounds one SQL query (all its statements).
	QueryTimeoutSecs int `toml:"query_timeout_secs" json:"query_timeout_secs"`
	// MaxScanRows bounds the rows one statement may read from the store;
	// past it the statement fails with loci::db::too_large.
	MaxScanRows int `toml:"max_scan_rows" json:"max_scan_rows"`
	// MaxResultRows bounds the rows one statement returns; past it the
	// result is cut and flagged truncated.
	MaxResultRows int `toml:"max_result_rows" json:"max_result_rows"`
}

// Webhook is the webhook listener.
type Webhook struct {
	Enable        bool   `toml:"enable" json:"enable"`
	Bind          string `toml:"bind" json:"bind"`
	Port          int    `toml:"port" json:"port"`
	AllowRemote   bool   `toml:"allow_remote" json:"allow_remote"`
	MaxBodyBytes  int64  `toml:"max_body_bytes" json:"max_body_bytes"`
	MaxConcurrent int    `toml:"max_concurrent" json:"max_concurrent"`
}

// Dedup is duplicate detection.
type Dedup struct {
	Enabled       bool    `toml:"enabled" json:"enabled"`
	NearThreshold float64 `toml:"near_threshold" json:"near_threshold"`
	EntityFuzzy   bool    `toml:"entity_fuzzy" json:"entity_fuzzy"`
}

// Jobs is the job runtime.
type Jobs struct {
	MaxConcurrency        int `toml:"max_concurrency" json:"max_concurrency"`
	BackgroundConcurrency int `toml:"background_concurrency" json:"background_concurrency"`
	LeaseTTLSecs          int `toml:"lease_ttl_secs" json:"lease_ttl_secs"`
	DrainTimeoutSecs      int `toml:"drain_timeout_secs" json:"drain_timeout_secs"`
}

// Mining is the mining pipeline.
type Mining struct {
	ChunkChars        int   `toml:"chunk_chars" json:"chunk_chars"`
	MaxFileBytes      int64 `toml:"max_file_bytes" json:"max_file_bytes"`
	MaxDocuments      int   `toml:"max_documents" json:"max_documents"`
	SourceTimeoutSecs int   `toml:"source_timeout_secs" json:"source_timeout_secs"`
	// Registries are the source registries: "URL" or "NAME=URL".
	Registries []string `toml:"registries" json:"registries"`
	// TrustedKeys are the publishers' public keys ("loci-ed25519 ...")
	// whose signatures vouch for a registry's archives.
	TrustedKeys []string `toml:"trusted_keys" json:"trusted_keys"`
	// SignaturePolicy is optional or required: whether a registry's
	// archive must be signed by a trusted key.
	SignaturePolicy string `toml:"signature_policy" json:"signature_policy"`
	// Secrets is what mining does with a document holding a credential:
	// redact (each one replaced by a marker naming its kind), skip (the
	// document is not filed) or allow.
	Secrets secret.Policy `toml:"secrets" json:"secrets"`
}

// Extraction configures the extract job's provider: heuristic (built in,
// offline), command (a program reading JSON on stdin and writing JSON, no
// shell) or http (an endpoint taking the same JSON); "" is none.
type Extraction struct {
	Provider    provider.Name `toml:"provider" json:"provider"`
	Command     []string      `toml:"command" json:"command,omitempty"`
	URL         string        `toml:"url" json:"url,omitempty"`
	TimeoutSecs int           `toml:"timeout_secs" json:"timeout_secs"`
}

// Miner is a saved definition of what to mine: a source (default the
// directory source) and its locator, the wing to file into, the source's
// options, a credential reference, and whether it may run.
type Miner struct {
	Source  string            `toml:"source"`
	Locator string            `toml:"locator"`
	Wing    string            `toml:"wing"`
	Options map[string]string `toml:"options"`
	// Credential names where a source's secret is read: an environment
	// variable (env), a file (file), or oauth. Never the secret itself.
	Credential *CredentialRef `toml:"credential"`
	Enabled    bool           `toml:"enabled"`
	// MaxDocuments overrides mining.max_documents for this miner's jobs.
	MaxDocuments *int           `toml:"max_documents"`
	Schedule     *MinerSchedule `toml:"schedule"`
}

// SourceConfig is a named source configuration: a source, options and a
// credential reference, shared by the miners that name it.
type SourceConfig struct {
	Source     string            `toml:"source"`
	Options    map[string]string `toml:"options"`
	Credential *CredentialRef    `toml:"credential"`
}

// CredentialRef is where a credential is read from: exactly one of an
// environment variable, a file, or oauth.
type CredentialRef struct {
	Env   string `toml:"env"`
	File  string `toml:"file"`
	OAuth bool   `toml:"oauth"`
	// SignIn is, for oauth, the key of the sign-in a run reads its
	// access token from (a source's or a source configuration's): set by
	// the daemon when it runs a miner, never read from the file or a
	// request.
	SignIn string `toml:"-" json:"SignIn,omitempty"`
}

// Kind is env, file or oauth ("" when none is set).
func (c *CredentialRef) Kind() string {
	switch {
	case c == nil:
		return ""
	case c.Env != "":
		return "env"
	case c.File != "":
		return "file"
	case c.OAuth:
		return "oauth"
	}
	return ""
}

// Trigger is an opt-in rule that asks for a miner run automatically: a
// type (schedule, poll, watch, webhook), its settings, a credential for a
// webhook's shared secret, and whether it is enabled (default false).
type Trigger struct {
	Miner      string         `toml:"miner"`
	Type       string         `toml:"type"`
	Enabled    bool           `toml:"enabled"`
	Credential *CredentialRef `toml:"credential"`
	// Settings are the type's settings (triggers.Keys); values are
	// strings, or booleans and numbers written as TOML allows.
	Settings map[string]any `toml:"settings"`
}

// SettingStrings is Settings with every value as a string.
func (t Trigger) SettingStrings() map[string]string {
	out := make(map[string]string, len(t.Settings))
	for k, v := range t.Settings {
		out[k] = fmt.Sprint(v)
	}
	return out
}

// MinerSchedule is a miner's timetable: every (s, m, h, d; at least 1 s),
// at (HH:MM UTC, whole-day intervals only).
type MinerSchedule struct {
	Every string `toml:"every"`
	At    string `toml:"at"`
	// Enabled opts the miner in to its schedule (POST
	// /api/miners/{name}/schedule/enable); off until then.
	Enabled bool `toml:"enabled"`
}

// MinerName reports what is wrong with a miner name ("" when nothing):
// the rule of names.Identifier.
func MinerName(name string) string { return names.Identifier(name) }

// Credentials is where source credentials are kept.
type Credentials struct {
	Dir     string `toml:"dir" json:"dir"`
	Backend string `toml:"backend" json:"backend"`
}

// Embedding configures embedding profiles: a profile is a provider, a
// model, a dimension and a pipeline identity, recorded with every vector.
type Embedding struct {
	// Default is the profile that search, auto ranking and the embed job
	// use when none is named ("" with no profile: lexical search only).
	Default  string             `toml:"default" json:"default"`
	Profiles map[string]Profile `toml:"profiles" json:"profiles"`
	// SaveSecs spaces the saves of the vector indexes of a running daemon
	// (default 600): after a crash, at most this much of the change log is
	// replayed into the graphs at the next start. A graceful stop always
	// saves.
	SaveSecs int `toml:"save_secs" json:"save_secs"`
}

// Profile is one embedding profile.
type Profile struct {
	// Provider is static (built in: word vectors weighted by the palace's
	// IDF; the default profile "static"), http (OpenAI-compatible /v1/embeddings or Ollama
	// /api/embed), command (a program reading JSON on stdin and writing
	// JSON on stdout, no shell) or hash (deterministic, for tests only).
	Provider string `toml:"provider" json:"provider"`
	// Format of an http provider: openai (default) or ollama.
	Format string `toml:"format" json:"format,omitempty"`
	URL    string `toml:"url" json:"url,omitempty"`
	Model  string `toml:"model" json:"model,omitempty"`
	// Dimension of the vectors (default 768).
	Dimension int `toml:"dimension" json:"dimension"`
	// KeyEnv names the environment variable holding an API key, KeyFile a
	// file holding it. The key itself is never configured here.
	KeyEnv  string   `toml:"key_env" json:"key_env,omitempty"`
	KeyFile string   `toml:"key_file" json:"key_file,omitempty"`
	Command []string `toml:"command" json:"command,omitempty"`
	// BatchSize is the texts per provider call (default 32).
	BatchSize   int `toml:"batch_size" json:"batch_size"`
	TimeoutSecs int `toml:"timeout_secs" json:"timeout_secs"`
	// Pipeline names the text preparation; vectors made by another
	// pipeline stay out of this profile's search until re-embedded.
	Pipeline string `toml:"pipeline" json:"pipeline"`
}

// The built-in static profile (index/embed: GloVe word vectors weighted
// by the palace's IDF), configured and default unless the configuration
// says otherwise.
const (
	StaticProfile   = "static"
	StaticProvider  = "static"
	StaticModel     = "glove-6b-100d-50k-int8"
	StaticDimension = 101
	StaticPipeline  = "idf-v1"
)

// builtin adds the static profile when it is the default and not
// configured.
func (e *Embedding) builtin() {
	if e.Default != StaticProfile {
		return
	}
	if _, ok := e.Profiles[StaticProfile]; !ok {
		if e.Profiles == nil {
			e.Profiles = map[string]Profile{}
		}
		e.Profiles[StaticProfile] = Profile{Provider: StaticProvider}
	}
}

// ProfileNamed returns a profile with its defaults filled in.
func (e Embedding) ProfileNamed(name string) (Profile, bool) {
	p, ok := e.Profiles[name]
	if !ok {
		return p, false
	}
	if p.Provider == StaticProvider {
		// The built-in table: its model, dimension and pipeline are its own.
		if p.Model == "" {
			p.Model = StaticModel
		}
		if p.Dimension == 0 {
			p.Dimension = StaticDimension
		}
		if p.Pipeline == "" {
			p.Pipeline = StaticPipeline
		}
		if p.BatchSize == 0 {
			p.BatchSize = 1024
		}
	}
	if p.Dimension == 0 {
		p.Dimension = 768
	}
	if p.BatchSize == 0 {
		p.BatchSize = 32
	}
	if p.TimeoutSecs == 0 {
		p.TimeoutSecs = 30
	}
	if p.Pipeline == "" {
		p.Pipeline = "text-v1"
	}
	if p.Provider == "http" && p.Format == "" {
		p.Format = "openai"
	}
	return p, true
}

// Search tunes the auto ranking, loci's own: BM25 and the default
// embedding profile fused, each drawer scored with its neighbours. Every
// technique has a setting that turns it off. The lexical, semantic and
// hybrid rankings are the specification's and ignore these settings.
type Search struct {
	// ContextWeight is the share of the best score among a drawer's
	// neighbours (the drawers filed just before and after it in its room;
	// for a mined document, its adjacent chunks) added to its own (0: no
	// context). Default 0.7.
	ContextWeight float64 `toml:"context_weight" json:"context_weight"`
	// ContextWindow is how many neighbours on each side count (default 2).
	ContextWindow int `toml:"context_window" json:"context_window"`
	// SemanticWeight is the semantic leg's weight in the fusion, the
	// lexical leg's being 1 (0: lexical only). Default 1.
	SemanticWeight float64 `toml:"semantic_weight" json:"semantic_weight"`
	// Fusion is how the legs combine: "scores" (BM25 over the best
	// candidate's, plus semantic_weight times the cosine similarity) or
	// "rrf" (weighted reciprocal rank). Default scores.
	Fusion rank.Method `toml:"fusion" json:"fusion"`
	// FusionK is reciprocal rank fusion's constant (default 60).
	FusionK int `toml:"fusion_k" json:"fusion_k"`
	// Depth is how many candidates each leg gives the fusion (default 50).
	Depth int `toml:"depth" json:"depth"`
	// FeedbackTerms is how many words pseudo-relevance feedback adds to
	// the lexical leg (0: none), taken from its FeedbackDocs best drawers,
	// their second query's scores weighing FeedbackWeight of the first's.
	FeedbackTerms  int     `toml:"feedback_terms" json:"feedback_terms"`
	FeedbackDocs   int     `toml:"feedback_docs" json:"feedback_docs"`
	FeedbackWeight float64 `toml:"feedback_weight" json:"feedback_weight"`
	// AnswerWeight raises by that share the score of a drawer holding the
	// kind of answer the question asks for (when: a date or time; where: a
	// place; who: a person; how many: a number), 0: none.
	AnswerWeight float64 `toml:"answer_weight" json:"answer_weight"`
	// AllWordsFirst ranks the lexical leg as the lexical ranking does,
	// drawers matching every word first (default false: BM25 alone).
	AllWordsFirst bool `toml:"all_words_first" json:"all_words_first"`
}

// Backup is the scheduled backups: where they go, when, how many are
// kept, and when status warns that none is recent.
type Backup struct {
	// Dir is the folder the daemon writes its backups to ("": backups
	// beside the palace, BackupDir). No request ever names another.
	Dir string `toml:"dir" json:"dir"`
	// Schedule is the timetable of scheduled backups, in the syntax of a
	// schedule trigger (every, at); an empty every: none.
	Schedule BackupSchedule `toml:"schedule" json:"schedule"`
	// Keep is how many of its backups the daemon keeps in Dir: after
	// each, the oldest beyond it are deleted.
	Keep int `toml:"keep" json:"keep"`
	// WarnAfter is how old the last successful backup may be before
	// status and doctor warn (a duration: s, m, h or d).
	WarnAfter string `toml:"warn_after" json:"warn_after"`
}

// BackupSchedule is the backups' timetable, as a schedule trigger's:
// every (s, m, h, d; at least 1 s), at (HH:MM UTC, whole-day intervals
// only).
type BackupSchedule struct {
	Every string `toml:"every" json:"every"`
	At    string `toml:"at" json:"at"`
}

// Default backup settings.
const (
	DefaultBackupKeep      = 7
	DefaultBackupWarnAfter = "7d"
	// MaxBackupKeep bounds backup.keep.
	MaxBackupKeep = 10000
)

// Import is the import of export files (POST /api/imports, loci import).
type Import struct {
	// MaxBytes bounds one import's upload: a body longer is refused with
	// loci::export::too_large (413) as it arrives, its spool removed.
	MaxBytes int64 `toml:"max_bytes" json:"max_bytes"`
}

// DefaultImportMaxBytes is import.max_bytes's default: 4 GiB, an export
// of about a million drawers of 2 KB with their graph; the daemon
// spools and checks a file of that size in a few minutes. A palace
// beyond it moves a few wings a file (loci export --wing).
const DefaultImportMaxBytes int64 = 4 << 30

// BackupDir is the folder backups go to: backup.dir, else "backups"
// beside the palace's folder (with the default palace,
// ~/.local/share/loci/backups): outside the palace, so that a restore
// over the palace or its loss leaves them, and on the same machine.
func (c Config) BackupDir() string {
	if c.Backup.Dir != "" {
		return filepath.Clean(c.Backup.Dir)
	}
	return filepath.Join(filepath.Dir(filepath.Clean(c.Palace.Path)), "backups")
}

// BackupWarnAfter is backup.warn_after as a duration (the default's when
// it does not parse: Validate refuses that).
func (c Config) BackupWarnAfter() time.Duration {
	if d, ok := triggers.ParseDuration(c.Backup.WarnAfter); ok {
		return d
	}
	d, _ := triggers.ParseDuration(DefaultBackupWarnAfter)
	return d
}

// Assets is the runtime assets root.
type Assets struct {
	Dir string `toml:"dir" json:"dir"`
}

// Default is the configuration with nothing set. Paths follow the XDG rules
// of env (a lookup function, usually os.LookupEnv).
func Default(env func(string) (string, bool)) Config {
	data := DataDir(env)
	return Config{
		Server:      Server{Bind: "127.0.0.1", Port: 8420, MaxSubscribers: 256, SlowSubscriberSecs: 30},
		Palace:      Palace{Path: filepath.Join(data, "palace")},
		Store:       Store{MinFreeBytes: DefaultMinFreeBytes},
		DB:          DB{Bind: "127.0.0.1", Port: 8000, QueryTimeoutSecs: 30, MaxScanRows: 2_000_000, MaxResultRows: 10_000},
		Webhook:     Webhook{Bind: "127.0.0.1", Port: 8787, MaxBodyBytes: 1 << 20, MaxConcurrent: 16},
		Dedup:       Dedup{Enabled: true, NearThreshold: 0.9, EntityFuzzy: true},
		Jobs:        Jobs{MaxConcurrency: 4, BackgroundConcurrency: 2, LeaseTTLSecs: 30, DrainTimeoutSecs: 10},
		Mining:      Mining{ChunkChars: 6000, MaxFileBytes: 2 << 20, SourceTimeoutSecs: 60, Secrets: secret.Redact, SignaturePolicy: "optional"},
		Credentials: Credentials{Dir: filepath.Join(ConfigDir(env), "credentials"), Backend: "auto"},
		Search: Search{ContextWeight: 0.7, ContextWindow: 2, SemanticWeight: 1, Fusion: rank.MethodScores, FusionK: 60, Depth: 50,
			FeedbackTerms: 5, FeedbackDocs: 5, FeedbackWeight: 0.3, AnswerWeight: 0.5},
		Backup: Backup{Keep: DefaultBackupKeep, WarnAfter: DefaultBackupWarnAfter},
		Import: Import{MaxBytes: DefaultImportMaxBytes},
		Embedding: Embedding{SaveSecs: 600, Default: StaticProfile,
			Profiles: map[string]Profile{StaticProfile: {Provider: StaticProvider}}},
	}
}

// xdg returns the XDG variable when it is set to an absolute path; unset,
// empty or relative values are ignored.
func xdg(env func(string) (string, bool), name, fallback string) string {
	if v, ok := env(name); ok && v != "" && filepath.IsAbs(v) {
		return filepath.Join(v, "loci")
	}
	home, _ := env("HOME")
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	return filepath.Join(home, fallback, "loci")
}

// ConfigDir is $XDG_CONFIG_HOME/loci or ~/.config/loci.
func ConfigDir(env func(string) (string, bool)) string {
	return xdg(env, "XDG_CONFIG_HOME", ".config")
}

// DefaultFile is the optional configuration file read when none is named
// (--config, LOCI_CONFIG): config.toml in ConfigDir.
func DefaultFile(env func(string) (string, bool)) string {
	return filepath.Join(ConfigDir(env), "config.toml")
}

// DataDir is $XDG_DATA_HOME/loci or ~/.local/share/loci.
func DataDir(env func(string) (string, bool)) string {
	return xdg(env, "XDG_DATA_HOME", filepath.Join(".local", "share"))
}

// Load builds the configuration: defaults, then the file (file names it
// explicitly, else LOCI_CONFIG, else the optional default file), then the
// environment. Flags are applied afterwards with Set, then Validate.
func Load(file string, env func(string) (string, bool)) (Config, error) {
	cfg, err := load(file, env)
	if err == nil {
		cfg.Embedding.builtin()
	}
	return cfg, err
}

func load(file string, env func(string) (string, bool)) (Config, error) {
	cfg := Default(env)
	// The built-in profile exists when it is the default, or when the
	// file configures it: a file that names another default does not get
	// an unused static index beside it (Load adds it back).
	cfg.Embedding.Profiles = nil
	explicit := file != ""
	if !explicit {
		if v, ok := env("LOCI_CONFIG"); ok && v != "" {
			file, explicit = v, true
		} else {
			file = DefaultFile(env)
		}
	}
	raw, err := os.ReadFile(file)
	switch {
	case err == nil:
		if err := decode(raw, &cfg); err != nil {
			return cfg, err
		}
		cfg.File = file
	case errors.Is(err, os.ErrNotExist) && !explicit:
		// The default file is optional.
	default:
		return cfg, fault.Wrap(fault.IOFailed, err,
			fmt.Sprintf("cannot read configuration file %s", file),
			"create the file, or name one that exists with --config or LOCI_CONFIG")
	}
	if err := applyEnv(&cfg, env); err != nil {
		return cfg, err
	}
	return cfg, nil
}

func decode(raw []byte, cfg *Config) error {
	dec := toml.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(cfg); err != nil {
		var strict *toml.StrictMissingError
		if errors.As(err, &strict) && len(strict.Errors) > 0 {
			keys := make([]string, 0, len(strict.Errors))
			for _, e := range strict.Errors {
				keys = append(keys, strings.Join(e.Key(), "."))
			}
			return fault.Newf(fault.ConfigInvalid, "remove or correct the key; see the settings table in the README",
				"unknown configuration key %s", strings.Join(keys, ", "))
		}
		var de *toml.DecodeError
		if errors.As(err, &de) {
			return decodeError(de)
		}
		return fault.Wrap(fault.ConfigInvalid, err, "configuration file is not valid TOML: "+err.Error(), "fix the file's syntax")
	}
	return nil
}

func keyHint(key string) string {
	if key == "" {
		return ""
	}
	return " (key " + key + ")"
}

// secretProblem says why a shared secret can never match, or "": HTTP
// trims the spaces around a header value, and a control character cannot
// be sent in one, so such a secret would lock every client out.
func secretProblem(v string) string {
	switch {
	case strings.TrimSpace(v) != v:
		return "has leading or trailing whitespace, which an Authorization header cannot carry"
	case strings.IndexFunc(v, unicode.IsControl) >= 0:
		return "contains a control character, which an Authorization header cannot carry"
	}
	return ""
}

// envSetting binds an environment variable to a setting key.
var envSettings = []struct{ env, key string }{
	{"LOCI_BIND", "server.bind"},
	{"LOCI_PORT", "server.port"},
	{"LOCI_PALACE_PATH", "palace.path"},
	{"LOCI_STORE_MIN_FREE_BYTES", "store.min_free_bytes"},
	{"LOCI_AUTH_ENABLED", "auth.enabled"},
	{"LOCI_AUTH_TOKEN", "auth.token"},
	{"LOCI_DB_BIND", "db.bind"},
	{"LOCI_DB_PORT", "db.port"},
	{"LOCI_DB_ALLOW_REMOTE", "db.allow_remote"},
	{"LOCI_DB_ALLOWED_ORIGINS", "db.allowed_origins"},
	{"LOCI_ASSETS_DIR", "assets.dir"},
	{"LOCI_DATASTORE_URL", "datastore.url"},
	{"LOCI_DATASTORE_PASSWORD_FILE", "datastore.password_file"},
}

func applyEnv(cfg *Config, env func(string) (string, bool)) error {
	// The shared store's password: from the environment only (no file
	// key, no flag), never echoed.
	if v, ok := env(DatastorePasswordEnv); ok && v != "" {
		cfg.Datastore.Password = v
	}
	for _, s := range envSettings {
		if v, ok := env(s.env); ok && v != "" {
			if err := cfg.set(s.key, v, s.env); err != nil {
				return err
			}
		}
	}
	return nil
}

// Set applies one setting by its key (as a flag would), naming the key in
// the error when the value does not parse.
func (c *Config) Set(key, value string) error { return c.set(key, value, key) }

func (c *Config) set(key, value, source string) error {
	bad := func(what string) error {
		return fault.Newf(fault.ConfigInvalid, "set "+source+" to "+what,
			"%s: %q is not %s", source, value, what)
	}
	parseInt := func(dst *int) error {
		n, err := strconv.Atoi(strings.TrimSpace(value))
		if err != nil {
			return bad("an integer")
		}
		*dst = n
		return nil
	}
	parseBool := func(dst *bool) error {
		b, err := strconv.ParseBool(strings.TrimSpace(value))
		if err != nil {
			return bad("true or false")
		}
		*dst = b
		return nil
	}
	switch key {
	case "server.bind":
		c.Server.Bind = value
	case "server.port":
		return parseInt(&c.Server.Port)
	case "palace.path":
		c.Palace.Path = value
	case "store.min_free_bytes":
		n, err := strconv.ParseInt(strings.TrimSpace(value), 10, 64)
		if err != nil {
			return bad("a number of bytes")
		}
		c.Store.MinFreeBytes = n
	case "auth.enabled":
		return parseBool(&c.Auth.Enabled)
	case "auth.token":
		// Checked here to name the variable or flag it came from; never
		// echoed.
		if p := secretProblem(value); p != "" {
			return fault.Newf(fault.ConfigInvalid, "set "+source+" to the secret alone: no surrounding spaces or control characters",
				"%s %s (its value is not shown)", source, p)
		}
		c.Auth.Token = value
	case "db.bind":
		c.DB.Bind = value
	case "db.port":
		return parseInt(&c.DB.Port)
	case "db.allow_remote":
		return parseBool(&c.DB.AllowRemote)
	case "db.query_timeout_secs":
		return parseInt(&c.DB.QueryTimeoutSecs)
	case "db.max_scan_rows":
		return parseInt(&c.DB.MaxScanRows)
	case "db.max_result_rows":
		return parseInt(&c.DB.MaxResultRows)
	case "db.allowed_origins":
		c.DB.AllowedOrigins = nil
		for _, o := range strings.Split(value, ",") {
			if o = strings.TrimSpace(o); o != "" {
				c.DB.AllowedOrigins = append(c.DB.AllowedOrigins, o)
			}
		}
	case "assets.dir":
		c.Assets.Dir = value
	case "datastore.url":
		c.Datastore.URL = strings.TrimSpace(value)
	case "datastore.password_file":
		c.Datastore.PasswordFile = value
	default:
		return fault.Newf(fault.ConfigInvalid, "use a known setting name", "unknown setting %s", key)
	}
	return nil
}

// Addr is the main listener's host:port.
func (c *Config) Addr() string {
	return net.JoinHostPort(c.Server.Bind, strconv.Itoa(c.Server.Port))
}
