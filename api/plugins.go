package api

import "time"

// Plugin is an installed plugin as GET /api/plugins/{id} shows it: its
// manifest's identity and its modules with their state.
type Plugin struct {
	ID          string `json:"id"`
	Version     string `json:"version"`
	Description string `json:"description,omitempty"`
	// Origin is local or registry.
	Origin   string `json:"origin"`
	Registry string `json:"registry,omitempty"`
	// SignedBy is the trusted key that vouched for it ("" none).
	SignedBy    string         `json:"signed_by"`
	Modules     []PluginModule `json:"modules"`
	InstalledAt *time.Time     `json:"installed_at,omitempty"`
}

// PluginModule is one module a plugin carries: its kind (source today),
// name and, once installed, its state.
type PluginModule struct {
	Kind    string `json:"kind"`
	Name    string `json:"name"`
	Version string `json:"version"`
	State   string `json:"state,omitempty"`
	// Permissions and ConsentDigest (sources): what consenting names.
	Permissions     *SourcePermissions `json:"permissions,omitempty"`
	PermissionWords []string           `json:"permission_words,omitempty"`
	ConsentDigest   string             `json:"consent_digest,omitempty"`
}

// PluginList is GET /api/plugins.
type PluginList struct {
	Plugins []Plugin `json:"plugins"`
}

// PluginPreview is POST /api/plugins/preview (and GET
// /api/plugin-registry/plugins/{id}): the plugin validated, each source's
// consent digest, and the sources installed on their own earlier that
// the plugin now provides (adopting them needs X-Loci-Adopt-Sources).
type PluginPreview struct {
	Plugin Plugin `json:"plugin"`
	// ArchiveDigest is the archive's SHA-256.
	ArchiveDigest string `json:"archive_digest"`
	// Consents maps each source needing consent to its digest.
	Consents map[string]string `json:"consents"`
	// Adopt lists the legacy source ids needing adoption.
	Adopt []string `json:"adopt"`
	// Replaces is the version of the plugin installed now ("" none).
	Replaces string `json:"replaces,omitempty"`
	// Blocked, when set, is why installing it would be refused whatever
	// is consented to (an update dropping an enabled module:
	// loci::plugin::in_use), as the install would answer it.
	Blocked *PluginBlocked `json:"blocked,omitempty"`
}

// PluginBlocked is the refusal an install would answer: its code,
// message and help.
type PluginBlocked struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Help    string `json:"help"`
}

// PluginInstalled is POST /api/plugins's answer.
type PluginInstalled struct {
	Plugin   Plugin `json:"plugin"`
	Replaced string `json:"replaced"`
	// Adopted are the legacy sources now provided by the plugin.
	Adopted []string `json:"adopted"`
}

// PluginRemoved is DELETE /api/plugins/{id}'s answer.
type PluginRemoved struct {
	Removed string `json:"removed"`
}

// PluginRegistryInstall is POST /api/plugin-registry/install's body.
type PluginRegistryInstall struct {
	ID            string            `json:"id"`
	Version       string            `json:"version,omitempty"`
	Registry      string            `json:"registry,omitempty"`
	Consents      map[string]string `json:"consents,omitempty"`
	AdoptSources  []string          `json:"adopt_sources,omitempty"`
	ArchiveDigest string            `json:"archive_digest,omitempty"`
}
