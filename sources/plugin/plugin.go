// Package plugin is a plugin as loci reads and writes it, without
// running it: an archive carrying several modules (source packages today;
// the format leaves room for other module kinds) with a manifest
// (loci-plugin.toml) and an ed25519 signature over its content.
package plugin

// ManifestFile is a plugin manifest's name in an archive and a project.
const ManifestFile = "loci-plugin.toml"
