package fault

// Code is a stable error code, loci::<module>::<kind>. Codes are API: add
// new ones, never rename.
type Code string

// The registry of codes. Each has exactly one HTTP status, in statuses.
const (
	ClientNotRunning     Code = "loci::client::not_running"
	ClientRemoteRejected Code = "loci::client::remote_rejected"
	ClientRequestFailed  Code = "loci::client::request_failed"

	ServerBindFailed Code = "loci::server::bind_failed"
	ServerFailed     Code = "loci::server::failed"
	// ServerBusy: a bounded resource (MCP sessions) is full; try later.
	ServerBusy Code = "loci::server::busy"
	// ServerRouteNotFound: no route answers to the path.
	ServerRouteNotFound Code = "loci::server::route_not_found"
	// ServerMethodNotAllowed: the path is a route, not for this method.
	ServerMethodNotAllowed Code = "loci::server::method_not_allowed"

	StoreBackendFailed Code = "loci::store::backend_failed"
	StoreMalformed     Code = "loci::store::malformed"
	StoreSchemaSync    Code = "loci::store::schema_sync"
	// StoreDiskFull: the palace's filesystem has less free space than
	// the reserve (store.min_free_bytes); writes wait until space is
	// freed, reads go on.
	StoreDiskFull Code = "loci::store::disk_full"

	// DBUnavailable: the admin endpoint is refused on a remote store.
	DBUnavailable Code = "loci::db::unavailable"
	// DBUnsafeBind: a non-loopback bind without allow_remote and
	// auth.enabled.
	DBUnsafeBind Code = "loci::db::unsafe_bind"
	// DBAlreadyRunning: the listener is open with other settings.
	DBAlreadyRunning Code = "loci::db::already_running"
	// DBBindFailed: the listener's address is taken or not bindable.
	DBBindFailed Code = "loci::db::bind_failed"
	// DBNotOpen: a command for the listener while it is closed.
	DBNotOpen Code = "loci::db::not_open"
	// DBQueryInvalid: SQL the engine cannot parse or plan (unknown
	// table or column, syntax).
	DBQueryInvalid Code = "loci::db::query_invalid"
	// DBReadOnly: a statement that would change the palace (INSERT,
	// UPDATE, DELETE, DDL); the application's rules are the only way.
	DBReadOnly Code = "loci::db::read_only"
	// DBTooLarge: a query that would read more rows than db.max_scan_rows.
	DBTooLarge Code = "loci::db::too_large"
	// DBTimeout: a query past db.query_timeout_secs.
	DBTimeout Code = "loci::db::timeout"
	// DBCanceled: a query stopped because its listener closed (or the
	// daemon is stopping) while it ran; not the query's fault.
	DBCanceled Code = "loci::db::canceled"
	// DBUnsupported: an RPC method or encoding the listener does not
	// offer; the help names what to use instead.
	DBUnsupported Code = "loci::db::unsupported"
	// DBSignInRequired: a method other than the handshake's before
	// signing in.
	DBSignInRequired Code = "loci::db::signin_required"
	// DBSignInRefused: a wrong user or password; five close the
	// connection.
	DBSignInRefused Code = "loci::db::signin_refused"
	// DBOriginRefused: a browser page from another site (403).
	DBOriginRefused Code = "loci::db::origin_refused"
	// DBInvalidRequest: an RPC message that is not a request of the
	// protocol (bad JSON or CBOR, wrong params).
	DBInvalidRequest Code = "loci::db::invalid_request"

	MigrateFailed Code = "loci::migrate::failed"
	MigrateLocked Code = "loci::migrate::locked"

	AuthUnauthorized       Code = "loci::auth::unauthorized"
	AuthNotConfigured      Code = "loci::auth::not_configured"
	AuthEntropyUnavailable Code = "loci::auth::entropy_unavailable"
	// AuthThrottled: too many refused tokens came from the client's
	// address; a valid token is still accepted.
	AuthThrottled Code = "loci::auth::throttled"

	PalaceWingNotFound     Code = "loci::palace::wing_not_found"
	PalaceRoomNotFound     Code = "loci::palace::room_not_found"
	PalaceDrawerNotFound   Code = "loci::palace::drawer_not_found"
	PalacePathInvalid      Code = "loci::palace::path_invalid"
	PalaceDrawerNameTaken  Code = "loci::palace::drawer_name_taken"
	PalaceBusy             Code = "loci::palace::busy"
	PalaceDrawerSuperseded Code = "loci::palace::drawer_superseded"
	// PalaceMismatch: the request named a palace this daemon does not
	// serve (the CLI reached another palace's daemon).
	PalaceMismatch        Code = "loci::palace::mismatch"
	JobsIDInvalid         Code = "loci::jobs::id_invalid"
	JobsNotFound          Code = "loci::jobs::not_found"
	JobsTransitionInvalid Code = "loci::jobs::transition_invalid"
	JobsContended         Code = "loci::jobs::contended"
	JobsOrphaned          Code = "loci::jobs::orphaned"
	JobsLeaseLost         Code = "loci::jobs::lease_lost"
	ModeForbidden         Code = "loci::mode::forbidden"
	InputInvalid          Code = "loci::input::invalid"
	// InputTooLarge: a request body declared or sent beyond its limit.
	InputTooLarge             Code = "loci::input::too_large"
	ConfigInvalid             Code = "loci::config::invalid"
	IOFailed                  Code = "loci::io::failed"
	CLIAborted                Code = "loci::cli::aborted"
	CLIPromptFailed           Code = "loci::cli::prompt_failed"
	SerializationFailed       Code = "loci::serialization::failed"
	SearchSemanticUnavail     Code = "loci::search::semantic_unavailable"
	RepairBasedOnJobInvalid   Code = "loci::repair::based_on_job_invalid"
	EmbedNotConfigured        Code = "loci::embed::not_configured"
	EmbedFailed               Code = "loci::embed::failed"
	EmbedDimensionMismatch    Code = "loci::embed::dimension_mismatch"
	ExtractNotConfigured      Code = "loci::extract::not_configured"
	ExtractFailed             Code = "loci::extract::failed"
	GraphEmptyLabel           Code = "loci::graph::empty_label"
	GraphRelationshipNotFound Code = "loci::graph::relationship_not_found"
	GraphEntityNotFound       Code = "loci::graph::entity_not_found"
	SourceNotFound            Code = "loci::source::not_found"
	SourceCursorInvalid       Code = "loci::source::cursor_invalid"
	SourceFailed              Code = "loci::source::failed"
	SourceNotEnabled          Code = "loci::source::not_enabled"
	SourceUnavailable         Code = "loci::source::unavailable"
	SourceIncompatible        Code = "loci::source::incompatible"
	SourceBuiltin             Code = "loci::source::builtin"
	SourceBundled             Code = "loci::source::bundled"
	// SourceConsentRequired: installing a package that asks for
	// permissions needs the user's consent to exactly those (the digest).
	SourceConsentRequired Code = "loci::source::consent_required"
	// SourcePermissionDenied: a package asked for something its consented
	// permissions do not grant.
	SourcePermissionDenied Code = "loci::source::permission_denied"
	// SourceTimeout: a package's call ran past mining.source_timeout_secs.
	SourceTimeout Code = "loci::source::timeout"
	// SourceIntegrity: a package's bytes are not the ones named (a module
	// changed on disk, an archive whose digest differs).
	SourceIntegrity Code = "loci::source::integrity"
	// SourceUntrusted: a package's signature is missing or not from a
	// trusted key where the policy requires one.
	SourceUntrusted Code = "loci::source::untrusted"
	// SourceRegistryUnavailable: a registry's index or archive cannot be
	// read (unreachable, refused, not an index).
	SourceRegistryUnavailable Code = "loci::source::registry_unavailable"
	// SourceNotInRegistry: no configured registry lists the name (or the
	// version asked for).
	SourceNotInRegistry Code = "loci::source::not_in_registry"
	// SourceAdoptionRequired: a plugin provides a source installed on its
	// own earlier, and the install did not list it for adoption.
	SourceAdoptionRequired Code = "loci::source::adoption_required"
	// SourcePluginProvided: a source a plugin provides cannot be removed
	// or replaced on its own; remove (or update) the plugin.
	SourcePluginProvided Code = "loci::source::plugin_provided"
	// PluginNotFound: no installed plugin has the id.
	PluginNotFound Code = "loci::plugin::not_found"
	// PluginInUse: a plugin with an enabled module cannot be removed.
	PluginInUse Code = "loci::plugin::in_use"
	// CredentialRequired: a run needs a sign-in the source does not have.
	CredentialRequired Code = "loci::credential::required"
	// CredentialRefreshFailed: the provider refused to refresh a token.
	CredentialRefreshFailed Code = "loci::credential::refresh_failed"
	// CredentialFlowFailed: a sign-in flow was declined, expired,
	// refused, replaced or already reported.
	CredentialFlowFailed Code = "loci::credential::flow_failed"
	// CredentialStoreFailed: a token could not be kept or read where
	// credentials.backend keeps them.
	CredentialStoreFailed Code = "loci::credential::store_failed"
	// CredentialOAuthUnsupported: the source declares no sign-in (or not
	// the flow asked for).
	CredentialOAuthUnsupported Code = "loci::credential::oauth_unsupported"
	MinerInvalid               Code = "loci::miner::invalid"
	MinerNotFound              Code = "loci::miner::not_found"
	MinerScopeBroadened        Code = "loci::miner::scope_broadened"
	MinerConfigFile            Code = "loci::miner::config_file"
	MinerNotRunnable           Code = "loci::miner::not_runnable"
	MinerDisabled              Code = "loci::miner::disabled"
	TriggerInvalid             Code = "loci::trigger::invalid"
	TriggerNotActivatable      Code = "loci::trigger::not_activatable"
	TriggerDisabled            Code = "loci::trigger::disabled"
	TriggerNotFound            Code = "loci::trigger::not_found"

	// ProjectInvalid: a project scope file (.loci.toml) or LOCI_PROJECT is
	// unreadable or holds a bad key; the message names the file and key.
	ProjectInvalid Code = "loci::project::invalid"
	// AssetsNotFound: the assets.dir override names no directory; the
	// daemon refuses to start.
	AssetsNotFound Code = "loci::assets::not_found"
	// IntegrationIncompatible: the agent's version is outside the range
	// the integration declares.
	IntegrationIncompatible Code = "loci::integration::incompatible"
	// IntegrationAgentNotFound: the agent is not installed here.
	IntegrationAgentNotFound Code = "loci::integration::agent_not_found"
	// IntegrationConflict: an entry named loci that loci did not write, or
	// a project's file that a symbolic link leads out of the project.
	IntegrationConflict Code = "loci::integration::conflict"
	// IntegrationAssetsMissing: an asset the integration needs is absent
	// from the assets in use.
	IntegrationAssetsMissing Code = "loci::integration::assets_missing"
	// IntegrationValidationFailed: the agent would not accept the file
	// after the edit (or it is unreadable now); nothing was written.
	IntegrationValidationFailed Code = "loci::integration::validation_failed"

	// ServiceConflict: a login service (systemd user unit or launchd
	// agent) of loci's name exists that loci did not write; loci leaves it
	// as it is.
	ServiceConflict Code = "loci::service::conflict"
	// ServiceUnavailable: the service manager cannot be used here (no
	// systemctl or launchctl, no user bus, a container); nothing was
	// changed.
	ServiceUnavailable Code = "loci::service::unavailable"

	// ExportInvalid: an export file's line breaks the format or the
	// palace's rules (a name, a reference to a record not written before
	// it, a drawer superseding one in another wing); the message names the
	// line and byte offset.
	ExportInvalid Code = "loci::export::invalid"
	// ExportTruncated: an export file ends before its end record, or the
	// end record's count or digest differs from what came before it.
	ExportTruncated Code = "loci::export::truncated"
	// ExportVersion: an export file of another format or of a version
	// newer than this daemon reads.
	ExportVersion Code = "loci::export::version"
	// ExportUnknownRecord: a record type this version does not know
	// (refused unless unknown records are skipped).
	ExportUnknownRecord Code = "loci::export::unknown_record"
	// ExportTooLarge: a line of an export file longer than the limit, or
	// an import upload longer than import.max_bytes.
	ExportTooLarge Code = "loci::export::too_large"
	// ExportLimit: an export file holds more wings, rooms, drawers,
	// entities, facts, sources or records than the configured limits.
	ExportLimit Code = "loci::export::limit"
	// ExportEncrypted: the file is age-encrypted and no identity or
	// passphrase was given.
	ExportEncrypted Code = "loci::export::encrypted"
	// ExportDecryptFailed: the file could not be decrypted with what was
	// given, or it was altered after it was encrypted.
	ExportDecryptFailed Code = "loci::export::decrypt_failed"
	// BackupInvalid: the file is not a loci backup (or a request for one
	// is malformed).
	BackupInvalid Code = "loci::backup::invalid"
	// BackupTruncated: the backup file ends before its header says.
	BackupTruncated Code = "loci::backup::truncated"
	// BackupCorrupt: the body does not match the header's digest, counts
	// or framing; the message names the byte offset.
	BackupCorrupt Code = "loci::backup::corrupt"
	// BackupFutureVersion: the file was written by a newer loci (a newer
	// file format or data version).
	BackupFutureVersion Code = "loci::backup::future_version"
	// BackupGap: the files given to restore do not form a chain (a full
	// backup, then each incremental from the previous one's version).
	BackupGap Code = "loci::backup::gap"
	// BackupPalaceMismatch: an incremental backup of another palace.
	BackupPalaceMismatch Code = "loci::backup::palace_mismatch"
	// BackupNotEmpty: restore refuses a palace holding data without
	// --force.
	BackupNotEmpty Code = "loci::backup::not_empty"
	// BackupDaemonRunning: restore needs the daemon stopped.
	BackupDaemonRunning Code = "loci::backup::daemon_running"
	// BackupUnsupported: the store backend cannot dump or load (or the
	// file's body is of a backend this build lacks).
	BackupUnsupported Code = "loci::backup::unsupported"
)

// statuses is the one table of HTTP statuses, one per code.
var statuses = map[Code]int{
	ClientNotRunning:            503,
	ClientRemoteRejected:        400,
	ClientRequestFailed:         502,
	ServerBindFailed:            500,
	ServerFailed:                500,
	ServerBusy:                  503,
	ServerRouteNotFound:         404,
	ServerMethodNotAllowed:      405,
	StoreBackendFailed:          500,
	DBUnavailable:               503,
	DBUnsafeBind:                400,
	DBAlreadyRunning:            409,
	DBBindFailed:                409,
	DBNotOpen:                   409,
	DBQueryInvalid:              400,
	DBReadOnly:                  400,
	DBTooLarge:                  413,
	DBTimeout:                   408,
	DBUnsupported:               400,
	DBCanceled:                  503,
	DBSignInRequired:            401,
	DBSignInRefused:             401,
	DBOriginRefused:             403,
	DBInvalidRequest:            400,
	StoreMalformed:              500,
	StoreSchemaSync:             500,
	StoreDiskFull:               507,
	MigrateFailed:               500,
	MigrateLocked:               500,
	AuthUnauthorized:            401,
	AuthNotConfigured:           500,
	AuthEntropyUnavailable:      500,
	AuthThrottled:               429,
	PalaceWingNotFound:          404,
	PalaceRoomNotFound:          404,
	PalaceDrawerNotFound:        404,
	PalacePathInvalid:           400,
	PalaceDrawerNameTaken:       409,
	PalaceBusy:                  409,
	PalaceDrawerSuperseded:      409,
	PalaceMismatch:              409,
	JobsIDInvalid:               400,
	JobsNotFound:                404,
	JobsTransitionInvalid:       400,
	JobsContended:               409,
	JobsOrphaned:                409,
	JobsLeaseLost:               409,
	ModeForbidden:               403,
	InputInvalid:                400,
	InputTooLarge:               413,
	ConfigInvalid:               400,
	IOFailed:                    500,
	CLIAborted:                  400,
	CLIPromptFailed:             400,
	SerializationFailed:         500,
	SearchSemanticUnavail:       400,
	RepairBasedOnJobInvalid:     400,
	EmbedNotConfigured:          400,
	EmbedFailed:                 502,
	EmbedDimensionMismatch:      400,
	ExtractNotConfigured:        400,
	ExtractFailed:               502,
	GraphEmptyLabel:             400,
	GraphRelationshipNotFound:   404,
	GraphEntityNotFound:         404,
	SourceNotFound:              404,
	SourceCursorInvalid:         400,
	SourceFailed:                500,
	SourceNotEnabled:            409,
	SourceUnavailable:           409,
	SourceIncompatible:          409,
	SourceBuiltin:               400,
	SourceBundled:               400,
	SourceConsentRequired:       400,
	SourcePermissionDenied:      403,
	SourceTimeout:               504,
	SourceIntegrity:             502,
	SourceUntrusted:             400,
	SourceRegistryUnavailable:   502,
	SourceNotInRegistry:         404,
	SourceAdoptionRequired:      409,
	SourcePluginProvided:        409,
	PluginNotFound:              404,
	PluginInUse:                 409,
	CredentialRequired:          409,
	CredentialRefreshFailed:     502,
	CredentialFlowFailed:        502,
	CredentialStoreFailed:       500,
	CredentialOAuthUnsupported:  400,
	MinerInvalid:                400,
	MinerNotFound:               404,
	MinerScopeBroadened:         409,
	MinerConfigFile:             409,
	MinerNotRunnable:            409,
	MinerDisabled:               409,
	TriggerInvalid:              400,
	TriggerNotActivatable:       409,
	TriggerDisabled:             409,
	TriggerNotFound:             404,
	ProjectInvalid:              400,
	AssetsNotFound:              500,
	IntegrationIncompatible:     409,
	IntegrationAgentNotFound:    404,
	IntegrationConflict:         409,
	IntegrationAssetsMissing:    500,
	IntegrationValidationFailed: 400,
	ServiceConflict:             409,
	ServiceUnavailable:          503,
	ExportInvalid:               400,
	ExportTruncated:             400,
	ExportVersion:               400,
	ExportUnknownRecord:         400,
	ExportTooLarge:              413,
	ExportLimit:                 413,
	ExportEncrypted:             400,
	ExportDecryptFailed:         400,
	BackupInvalid:               400,
	BackupTruncated:             400,
	BackupCorrupt:               400,
	BackupFutureVersion:         400,
	BackupGap:                   409,
	BackupPalaceMismatch:        409,
	BackupNotEmpty:              409,
	BackupDaemonRunning:         409,
	BackupUnsupported:           501,
}

// Status is the HTTP status of the code; 500 for a code not in the table.
func (c Code) Status() int {
	if s, ok := statuses[c]; ok {
		return s
	}
	return 500
}

// Registered lists every code with its status, for tests and docs.
func Registered() map[Code]int {
	out := make(map[Code]int, len(statuses))
	for c, s := range statuses {
		out[c] = s
	}
	return out
}
