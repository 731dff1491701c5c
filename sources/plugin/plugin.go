// Package plugin is a plugin as loci reads and writes it, without
// running it: an archive carrying several modules (source packages today;
// the format leaves room for other module kinds) with a manifest
// (loci-plugin.toml) and an optional ed25519 signature (loci-plugin.sig)
// over a canonical digest of its content. Read checks an archive (bounded,
// clean paths, no links, every source module a valid source package),
// Write makes one deterministically, Digest, Sign and Verify handle the
// signature; IndexInfo is what a registry index lists of an archive
// (loci source index). Installing a plugin's modules is services.Plugins'.
package plugin

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/Masterminds/semver/v3"
	"github.com/pelletier/go-toml/v2"

	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/sources/pack"
)

// ManifestFile is a plugin manifest's name in an archive and a project.
const ManifestFile = "loci-plugin.toml"

// SignatureFile is the signature's name in an archive: JSON {key,
// signature} over Digest.
const SignatureFile = "loci-plugin.sig"

// KindSource is the module kind of a source package (the only kind this
// loci knows).
const KindSource = "source"

// MaxModules is the most modules a plugin may carry.
const MaxModules = 64

// MaxArchiveBytes is the most a plugin archive may hold, compressed or
// unpacked (the spec's 64 MiB body limit).
const MaxArchiveBytes = pack.MaxArchiveBytes

// ManifestHelp is the help every plugin manifest error carries.
const ManifestHelp = "correct " + ManifestFile + " (id, version, description, loci, and a [[modules]] table per module with kind and path)"

// Manifest is a plugin's loci-plugin.toml.
type Manifest struct {
	// ID is the plugin's id: a source name's rule (pack.NameRule).
	ID          string `toml:"id" json:"id"`
	Version     string `toml:"version" json:"version"`
	Description string `toml:"description,omitempty" json:"description,omitempty"`
	// Loci is the loci versions it runs on, a semantic version
	// constraint; "" any.
	Loci    string        `toml:"loci,omitempty" json:"loci,omitempty"`
	Modules []ModuleEntry `toml:"modules" json:"modules"`
}

// ModuleEntry is one [[modules]] table: the module's kind and the folder
// in the archive holding it (for a source: its loci-source.toml and
// module, exactly as a source package).
type ModuleEntry struct {
	Kind string `toml:"kind" json:"kind"`
	Path string `toml:"path" json:"path"`
}

// Source is a source module of a plugin: its folder and its package.
type Source struct {
	Path    string
	Package *pack.Package
}

// Name is the source's name (its manifest's).
func (s Source) Name() string { return s.Package.Manifest.Name }

// Plugin is a plugin in memory: its manifest (as written and as read),
// its source modules in the manifest's order, and its signature (nil
// when unsigned).
type Plugin struct {
	Manifest      *Manifest
	ManifestBytes []byte
	Sources       []Source
	Signature     *Signature
}

// manifestError is loci::input::invalid about the plugin manifest.
func manifestError(problem string) *fault.Error {
	return fault.New(fault.InputInvalid, "manifest "+ManifestFile+": "+fault.Clip(problem, fault.MaxMsg-64), ManifestHelp)
}

// ParseManifest reads and checks a plugin manifest: an unknown key, a
// bad id, version or requirement, no module, a module of a kind this
// loci does not know, a folder that is not a clean relative path, or two
// modules in one folder are loci::input::invalid saying so.
func ParseManifest(b []byte) (*Manifest, error) {
	var m Manifest
	d := toml.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&m); err != nil {
		var strict *toml.StrictMissingError
		if errors.As(err, &strict) && len(strict.Errors) > 0 {
			return nil, manifestError("unknown key " + strings.Join(strict.Errors[0].Key(), ".") +
				" (the keys are id, version, description, loci, [[modules]] with kind and path)")
		}
		return nil, manifestError("not a plugin manifest: " + strings.TrimPrefix(err.Error(), "toml: "))
	}
	if err := m.Check(); err != nil {
		return nil, err
	}
	return &m, nil
}

// Check checks a manifest's fields.
func (m *Manifest) Check() error {
	if !pack.ValidName(m.ID) {
		return manifestError(fmt.Sprintf("id: %q is not a plugin id (%s)", m.ID, pack.NameRule))
	}
	if _, err := semver.StrictNewVersion(m.Version); err != nil {
		return manifestError(fmt.Sprintf("version: %q is not a semantic version (1.2.3)", m.Version))
	}
	if m.Loci != "" {
		if _, err := semver.NewConstraint(m.Loci); err != nil {
			return manifestError(fmt.Sprintf("loci: %q is not a version constraint (\">= 0.1.0\")", m.Loci))
		}
	}
	if len(m.Modules) == 0 {
		return manifestError("modules: a plugin carries at least one module ([[modules]] with kind and path)")
	}
	if len(m.Modules) > MaxModules {
		return manifestError(fmt.Sprintf("modules: %d modules; a plugin carries at most %d", len(m.Modules), MaxModules))
	}
	seen := map[string]bool{}
	for i, mod := range m.Modules {
		if mod.Kind != KindSource {
			return manifestError(fmt.Sprintf("modules[%d].kind: %q is not a module kind this loci knows: it knows only sources (kind = \"source\")", i, mod.Kind))
		}
		if !cleanPath(mod.Path) {
			return manifestError(fmt.Sprintf("modules[%d].path: %q is not a folder in the archive (a relative path of letters, digits, '.', '_' and '-', no '..')", i, mod.Path))
		}
		if seen[mod.Path] {
			return manifestError(fmt.Sprintf("modules[%d].path: the folder %q holds another module too", i, mod.Path))
		}
		for p := range seen {
			if strings.HasPrefix(mod.Path, p+"/") || strings.HasPrefix(p, mod.Path+"/") {
				return manifestError(fmt.Sprintf("modules[%d].path: the folder %q is inside another module's, or holds one (%q)", i, mod.Path, p))
			}
		}
		seen[mod.Path] = true
	}
	return nil
}

// cleanPath reports a relative slash path of plain segments: no empty,
// dot-led or ".." segment, no backslash, nothing absolute.
func cleanPath(p string) bool {
	if p == "" || len(p) > 255 {
		return false
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == "" || seg[0] == '.' || seg[0] == '-' {
			return false
		}
		for _, r := range seg {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
				return false
			}
		}
	}
	return true
}

// Compatible is "" when this daemon (its version lociVersion) can run
// the plugin and every module, else why not.
func (p *Plugin) Compatible(lociVersion string) string {
	if p.Manifest.Loci != "" {
		c, err := semver.NewConstraint(p.Manifest.Loci)
		if err != nil {
			return fmt.Sprintf("its loci requirement %q cannot be read", p.Manifest.Loci)
		}
		v, err := semver.NewVersion(strings.TrimPrefix(lociVersion, "v"))
		if err != nil {
			v = semver.MustParse(pack.BaseVersion)
		}
		if v.Prerelease() != "" {
			rel, _ := v.SetPrerelease("")
			v = &rel
		}
		if !c.Check(v) {
			return fmt.Sprintf("the plugin needs loci %s; this is %s", p.Manifest.Loci, v)
		}
	}
	for _, s := range p.Sources {
		if why := s.Package.Manifest.Compatible(lociVersion); why != "" {
			return fmt.Sprintf("its %s source: %s", s.Name(), why)
		}
	}
	return ""
}

// Names are the plugin's source names, in its manifest's order.
func (p *Plugin) Names() []string {
	out := make([]string, 0, len(p.Sources))
	for _, s := range p.Sources {
		out = append(out, s.Name())
	}
	return out
}

// files are the plugin's files but the signature, by archive path: what
// Digest covers and Write writes.
func (p *Plugin) files() map[string][]byte {
	f := map[string][]byte{ManifestFile: p.ManifestBytes}
	for _, s := range p.Sources {
		f[s.Path+"/"+pack.ManifestFile] = s.Package.ManifestBytes
		f[s.Path+"/"+s.Package.Manifest.Module] = s.Package.Module
	}
	return f
}

// sortedPaths are a file map's paths, sorted.
func sortedPaths(f map[string][]byte) []string {
	paths := make([]string, 0, len(f))
	for p := range f {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	return paths
}
