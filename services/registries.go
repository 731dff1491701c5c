package services

// Registries is the service of source registries: search, show, install
// and update source packages from the registries mining.registries
// names (and the bundled one), through Packages.
type Registries struct {
	// Packages installs what a registry serves.
	Packages *Packages
}
