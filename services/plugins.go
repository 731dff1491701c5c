package services

// Plugins is the service of plugins: archives carrying several modules
// (sources today), previewed, installed without activating their modules,
// shown and uninstalled, locally or from a plugin registry.
type Plugins struct {
	// Packages installs a plugin's source modules.
	Packages *Packages
}
