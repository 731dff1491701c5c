package main

import (
	"log/slog"
	"path/filepath"

	"github.com/loci-dev/loci/config"
	"github.com/loci-dev/loci/services"
	"github.com/loci-dev/loci/sources/registry"
)

// newRegistries is the source registries' service over mining.registries
// (and the bundled packages' registry, built at its first use): a
// registry location, trusted key or policy that is not allowed is
// loci::config::invalid, and the daemon does not start. Indexes are kept
// under <palace>/cache/registries.
func newRegistries(cfg config.Config, packages *services.Packages, version string, log *slog.Logger) (*services.Registries, error) {
	specs, err := registry.ParseSpecs(cfg.Mining.Registries)
	if err != nil {
		return nil, err
	}
	c, err := registry.New(registry.Options{Registries: specs, TrustedKeys: cfg.Mining.TrustedKeys, Policy: registry.Policy(cfg.Mining.SignaturePolicy),
		CacheDir: filepath.Join(cfg.Palace.Path, "cache", "registries"), LociVersion: version, BundledPackages: bundledPackages})
	if err != nil {
		return nil, err
	}
	return &services.Registries{Packages: packages, Client: c, Log: log}, nil
}
