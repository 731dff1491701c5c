package transport

import (
	"testing"
	"time"

	"github.com/loci-dev/loci/api"
)

// The source package answers as clients read them: "source package
// installed" pins {source, replaced} with every field of a package shown.
func TestSourcePackageAnswers(t *testing.T) {
	at := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	v := api.SourcePackage{Name: "notes", Version: "1.1.0", Description: "the notes of a folder", Origin: "local", State: "unavailable",
		Reason: "the module changed on disk since it was installed (sha256 ab…, installed cd…)", Options: []string{"since"},
		Capabilities: api.SourceCapabilities{Incremental: true, Triggers: []string{}}, Contract: 1,
		Permissions:     &api.SourcePermissions{Read: []string{"locator"}, Programs: []string{"git"}, Env: []string{"NOTES_TOKEN"}, MemoryMiB: 64},
		PermissionWords: []string{"read the folder a miner points it at, without changing it", "run the program git (by name, no shell)", "read the environment variable NOTES_TOKEN", "use up to 64 MiB of memory"},
		ConsentDigest:   "5e0c…", ModuleSHA256: "cd…", InstalledAt: &at}
	sameAnswer(t, "source package installed", api.SourcePackageInstalled{Source: v, Replaced: "1.0.0"})
	sameAnswer(t, "built-in source", api.SourcePackage{Name: "directory", Origin: "built-in", State: "enabled", Options: []string{"dir"},
		Capabilities: api.SourceCapabilities{Incremental: true, Triggers: []string{"watch"}}})
}
