package api

import "time"

// SourcePackage is a source as GET /api/source-packages/{name} shows it:
// an installed or bundled package with its permissions, consent and
// module digest, or a built-in adapter (origin built-in, no
// permissions: it is part of loci).
type SourcePackage struct {
	Name        string `json:"name"`
	Version     string `json:"version,omitempty"`
	Description string `json:"description,omitempty"`
	// Origin is built-in, bundled, registry, local or plugin.
	Origin string `json:"origin"`
	// State is installed, enabled, disabled, unavailable or incompatible.
	State string `json:"state"`
	// Reason says why an unavailable or incompatible source is so.
	Reason       string             `json:"reason,omitempty"`
	Options      []string           `json:"options"`
	Capabilities SourceCapabilities `json:"capabilities"`
	// Format is the stated version of the format the source reads.
	Format string `json:"format,omitempty"`
	// DefaultLocator is what an empty locator stands for.
	DefaultLocator string `json:"default_locator,omitempty"`
	// Contract is the source contract version the module was built for.
	Contract int `json:"contract,omitempty"`
	// Permissions are what the package asks for, normalised (nil for a
	// built-in adapter).
	Permissions *SourcePermissions `json:"permissions,omitempty"`
	// PermissionWords are the permissions in human words, one line each.
	PermissionWords []string `json:"permission_words,omitempty"`
	// ConsentDigest is the digest of the source's name and permissions
	// that consenting to them names ("" for a built-in adapter).
	ConsentDigest string `json:"consent_digest,omitempty"`
	// ModuleSHA256 is the module's SHA-256 as installed.
	ModuleSHA256 string `json:"module_sha256,omitempty"`
	// InstalledAt is when this version was installed.
	InstalledAt *time.Time `json:"installed_at,omitempty"`
	// Registry names the registry a registry source was installed from;
	// SignedBy the trusted key that vouched for its archive ("" none).
	Registry string `json:"registry,omitempty"`
	SignedBy string `json:"signed_by,omitempty"`
	// Plugin is the id of the plugin that provides it ("" none).
	Plugin string `json:"plugin,omitempty"`
	// Auth is its sign-in status when its manifest declares OAuth.
	Auth *SignInStatus `json:"auth,omitempty"`
	// Dir is the folder holding an installed package's files (its
	// manifest and module) under the palace; "" for a built-in or bundled
	// source, whose files are in loci itself.
	Dir string `json:"dir,omitempty"`
}

// SourcePermissions are a package's permissions: read-only directories
// ("locator" or absolute paths), programs run by name without a shell,
// environment variables, the network all or nothing, a memory ceiling.
type SourcePermissions struct {
	Read      []string `json:"read"`
	Programs  []string `json:"programs"`
	Env       []string `json:"env"`
	Network   bool     `json:"network"`
	MemoryMiB int      `json:"memory_mib"`
}

// SourcePackageInstalled is POST /api/source-packages's answer: the
// source installed and the version it replaced ("" when new).
type SourcePackageInstalled struct {
	Source   SourcePackage `json:"source"`
	Replaced string        `json:"replaced"`
	// Downgrade: the version replaced is newer than the one installed (a
	// roll back; it is installed all the same).
	Downgrade bool `json:"downgrade,omitempty"`
	// Warnings are what the user should know of what was installed
	// (a version its publisher withdrew, installed because it was
	// pinned).
	Warnings []string `json:"warnings,omitempty"`
}

// SourcePackageList is GET /api/source-packages: every source, built-in,
// bundled and installed, by name.
type SourcePackageList struct {
	Sources []SourcePackage `json:"sources"`
}

// SourcePackageRemoved is DELETE /api/source-packages/{name}'s answer.
type SourcePackageRemoved struct {
	Removed string `json:"removed"`
	// Miners are the miners of the configuration file naming the removed
	// source: unavailable until a source of that name is installed again
	// (remove them or change their source).
	Miners []string `json:"miners,omitempty"`
}
