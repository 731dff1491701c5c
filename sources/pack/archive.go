package pack

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// MaxArchiveBytes is the most a package archive may hold, compressed or
// not (the spec's 64 MiB body limit).
const MaxArchiveBytes = 64 << 20

// Package is a source package in memory: its manifest (as written and as
// read) and its module.
type Package struct {
	Manifest      *Manifest
	ManifestBytes []byte
	Module        []byte
}

// ModuleDigest is the SHA-256 of the module, in hex: recorded at install
// and checked at every load.
func (p *Package) ModuleDigest() string { return Digest(p.Module) }

// Digest is the SHA-256 of b in hex.
func Digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// epoch is every archive entry's time: the archive of the same manifest
// and module is the same bytes wherever and whenever it is made.
var epoch = time.Unix(0, 0).UTC()

// WriteArchive writes p as a deterministic .tar.gz: the manifest, then
// the module, with fixed times, owners and modes.
func (p *Package) WriteArchive(w io.Writer) error {
	return WriteTarGz(w, []TarFile{{ManifestFile, p.ManifestBytes}, {p.Manifest.Module, p.Module}})
}

// ReadArchive reads a package archive: exactly a manifest and the module
// it names, regular files at the top, nothing else, at most
// MaxArchiveBytes unpacked. Every problem is loci::input::invalid saying
// what is wrong.
func ReadArchive(r io.Reader) (*Package, error) {
	bad := func(format string, args ...any) error {
		return invalid("package", fmt.Sprintf(format, args...), archiveHelp)
	}
	files, err := ReadTarGz(r, "source package", "package", bad, func(h *tar.Header) (string, bool, error) {
		if h.Typeflag != tar.TypeReg {
			return "", false, bad("%q is not a regular file; a package holds only %s and its module", h.Name, ManifestFile)
		}
		if h.Name != filepath.Base(h.Name) || h.Name == "." || h.Name == ".." {
			return "", false, bad("%q is inside a folder; a package's files are at its top", h.Name)
		}
		return h.Name, false, nil
	})
	if err != nil {
		return nil, err
	}
	mb, ok := files[ManifestFile]
	if !ok {
		return nil, bad("there is no %s in the package", ManifestFile)
	}
	m, err := ParseManifest(mb)
	if err != nil {
		return nil, err
	}
	mod, ok := files[m.Module]
	if !ok {
		return nil, bad("the manifest names the module %q, which is not in the package", m.Module)
	}
	if len(files) != 2 {
		for n := range files {
			if n != ManifestFile && n != m.Module {
				return nil, bad("%q is neither the manifest nor the module", n)
			}
		}
	}
	if !bytes.HasPrefix(mod, []byte("\x00asm")) {
		return nil, bad("%q is not a WebAssembly module", m.Module)
	}
	return &Package{Manifest: m, ManifestBytes: mb, Module: mod}, nil
}

// ReadDir reads a package laid out in a directory: its manifest and the
// module the manifest names beside it (a project's build output, an
// installed package).
func ReadDir(dir string) (*Package, error) {
	mb, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if err != nil {
		return nil, invalid("package", fmt.Sprintf("reading %s in %s: %v", ManifestFile, dir, err),
			"give a source package's folder, with its "+ManifestFile+" (loci source init makes a project)")
	}
	m, err := ParseManifest(mb)
	if err != nil {
		return nil, err
	}
	mod, err := os.ReadFile(filepath.Join(dir, m.Module))
	if err != nil {
		return nil, invalid("package", fmt.Sprintf("reading the module %s: %v", m.Module, err),
			"build the module (loci source build), or correct module in "+ManifestFile)
	}
	if !bytes.HasPrefix(mod, []byte("\x00asm")) {
		return nil, invalid("package", fmt.Sprintf("%s is not a WebAssembly module", m.Module),
			"build the module for WebAssembly (loci source build)")
	}
	return &Package{Manifest: m, ManifestBytes: mb, Module: mod}, nil
}
