package api

// RegistryEntry is one source (or plugin) a registry lists, as GET
// /api/source-registry/search answers it: its newest version that runs
// on this daemon.
type RegistryEntry struct {
	Name        string `json:"name"`
	Version     string `json:"version"`
	Description string `json:"description,omitempty"`
	// Registry names the registry listing it ("bundled" for the index
	// shipped in loci).
	Registry string `json:"registry"`
	// Signed: the release carries a signature (whether its key is
	// trusted is said by show).
	Signed bool `json:"signed"`
	// Installed is the version installed here ("" none).
	Installed string `json:"installed,omitempty"`
}

// RegistryWarning is a registry that could not be read while others
// answered: the search goes on without it.
type RegistryWarning struct {
	Registry string `json:"registry"`
	Code     string `json:"code"`
	Message  string `json:"message"`
}

// RegistrySearch is GET /api/source-registry/search's answer.
type RegistrySearch struct {
	Entries  []RegistryEntry   `json:"entries"`
	Warnings []RegistryWarning `json:"warnings"`
}

// RegistrySource is GET /api/source-registry/sources/{name}: a release
// fetched and verified, nothing installed.
type RegistrySource struct {
	Name        string `json:"name"`
	Version     string `json:"version"`
	Description string `json:"description,omitempty"`
	// Origin is registry (or bundled).
	Origin   string `json:"origin"`
	Registry string `json:"registry"`
	// RegistryLocation is where that registry is (its index's URL
	// without any user and password, its path, or "bundled").
	RegistryLocation string `json:"registry_location"`
	// SignedBy is the trusted key that vouched for the archive, in its
	// text form ("" unsigned or not trusted under the optional policy).
	SignedBy string `json:"signed_by"`
	// ArchiveDigest is the archive's SHA-256: an install naming it gets
	// exactly these bytes.
	ArchiveDigest   string             `json:"archive_digest"`
	Permissions     *SourcePermissions `json:"permissions"`
	PermissionWords []string           `json:"permission_words,omitempty"`
	ConsentDigest   string             `json:"consent_digest"`
	// Replaces is the version installed now that an install replaces
	// ("" none).
	Replaces string `json:"replaces"`
	// Yanked: the publisher withdrew this version (shown only when
	// pinned).
	Yanked bool `json:"yanked,omitempty"`
	// Installable: an install of it would pass the signature policy;
	// when false, Refusal is the error an install gets (show answers so
	// the release can still be reviewed).
	Installable bool             `json:"installable"`
	Refusal     *RegistryRefusal `json:"refusal,omitempty"`
}

// RegistryRefusal is why an install of a release shown would be refused
// (the error it would get: code, message, help).
type RegistryRefusal struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Help    string `json:"help"`
}

// RegistryInstall is POST /api/source-registry/install's body.
type RegistryInstall struct {
	Name     string `json:"name"`
	Version  string `json:"version,omitempty"`
	Registry string `json:"registry,omitempty"`
	// ArchiveDigest is the digest show answered: an archive that changed
	// since is refused.
	ArchiveDigest string `json:"archive_digest,omitempty"`
	Consent       string `json:"consent,omitempty"`
	Enable        bool   `json:"enable,omitempty"`
}

// RegistryUpdates is GET /api/source-registry/updates's answer.
type RegistryUpdates struct {
	Updates  []RegistryUpdateOffer `json:"updates"`
	Warnings []RegistryWarning     `json:"warnings"`
}

// RegistryUpdateOffer is an installed registry source with a newer
// version that runs here.
type RegistryUpdateOffer struct {
	Name     string `json:"name"`
	From     string `json:"from"`
	To       string `json:"to"`
	Registry string `json:"registry"`
	// RegistryLocation is where the registry is: an installed source's
	// updates come from the registry at the location it was installed
	// from, whatever its name now.
	RegistryLocation string `json:"registry_location,omitempty"`
	// NeedsConsent: the newer version asks for more than was consented
	// to (what the version installed asks).
	NeedsConsent bool `json:"needs_consent"`
	// FromYanked: its publisher withdrew the version installed.
	FromYanked bool `json:"from_yanked,omitempty"`
}

// RegistryUpdate is POST /api/source-registry/update's body.
type RegistryUpdate struct {
	// Name is the one source to update ("" every registry source).
	Name    string `json:"name,omitempty"`
	Consent string `json:"consent,omitempty"`
}

// RegistryUpdateResult is one source's outcome of POST
// /api/source-registry/update: status updated, current, needs_consent
// (with the permissions and their digest) or failed (with the message
// and code).
type RegistryUpdateResult struct {
	Name            string             `json:"name"`
	From            string             `json:"from"`
	To              string             `json:"to"`
	Status          string             `json:"status"`
	Permissions     *SourcePermissions `json:"permissions,omitempty"`
	PermissionWords []string           `json:"permission_words,omitempty"`
	ConsentDigest   string             `json:"consent_digest,omitempty"`
	Message         string             `json:"message,omitempty"`
	Code            string             `json:"code,omitempty"`
}

// The statuses of an update.
const (
	UpdateUpdated      = "updated"
	UpdateCurrent      = "current"
	UpdateNeedsConsent = "needs_consent"
	UpdateFailed       = "failed"
)
