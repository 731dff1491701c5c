// Package bundled is the source packages built from this repository and
// embedded in loci, installed from the start with origin bundled: the
// WebAssembly directory reference source (directory-wasm, from
// guests/dir) and git-history (from guests/githistory).
//
// Each package is a folder under modules/: its manifest, written by hand,
// and its module, built by `go generate ./sources/bundled` (gen/) and
// committed, so that `go build ./cmd/loci` needs no WebAssembly
// toolchain. modules/toolchain.txt records the go version that built
// them and each module's SHA-256: Packages checks the digests, and the
// package's test rebuilds the modules and compares them byte for byte
// when the toolchain is the one recorded.
package bundled

import (
	"bufio"
	"bytes"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/sources/pack"
)

//go:generate go run ./gen

//go:embed modules
var modules embed.FS

// stampFile is gen's record of the toolchain and the modules' digests.
const stampFile = "modules/toolchain.txt"

// Packages are the bundled packages, sorted by name, each read through
// pack's checks (the manifest parsed and checked, the module a
// WebAssembly module whose SHA-256 is the one gen recorded). An error
// means this binary is damaged.
func Packages() ([]*pack.Package, error) {
	return read(modules)
}

// read reads the packages of fsys (a modules folder and its stamp).
func read(fsys fs.FS) ([]*pack.Package, error) {
	damaged := func(format string, args ...any) error {
		return fault.New(fault.SourceIntegrity, "the bundled source packages are damaged: "+fmt.Sprintf(format, args...),
			"this binary is damaged; reinstall loci (a build from source runs go generate ./sources/bundled first)")
	}
	sums, err := stamp(fsys)
	if err != nil {
		return nil, damaged("%v", err)
	}
	entries, err := fs.ReadDir(fsys, "modules")
	if err != nil {
		return nil, damaged("%v", err)
	}
	var out []*pack.Package
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir := path.Join("modules", e.Name())
		mb, err := fs.ReadFile(fsys, path.Join(dir, pack.ManifestFile))
		if err != nil {
			return nil, damaged("%v", err)
		}
		m, err := pack.ParseManifest(mb)
		if err != nil {
			return nil, damaged("%s: %v", e.Name(), err)
		}
		if m.Name != e.Name() {
			return nil, damaged("the package in %s is named %q", e.Name(), m.Name)
		}
		mod, err := fs.ReadFile(fsys, path.Join(dir, m.Module))
		if err != nil {
			return nil, damaged("%v", err)
		}
		p := &pack.Package{Manifest: m, ManifestBytes: mb, Module: mod}
		if !bytes.HasPrefix(mod, []byte("\x00asm")) {
			return nil, damaged("%s is not a WebAssembly module", m.Module)
		}
		want, ok := sums[path.Join(e.Name(), m.Module)]
		if !ok {
			return nil, damaged("%s is not in %s", m.Module, path.Base(stampFile))
		}
		if got := p.ModuleDigest(); got != want {
			return nil, damaged("%s has SHA-256 %s, go generate wrote %s", m.Module, got, want)
		}
		out = append(out, p)
	}
	if len(out) == 0 {
		return nil, damaged("there are none")
	}
	return out, nil
}

// stamp reads the stamp: the toolchain's version, then "sha256  path"
// lines; it answers the digests by path.
func stamp(fsys fs.FS) (map[string]string, error) {
	b, err := fs.ReadFile(fsys, stampFile)
	if err != nil {
		return nil, err
	}
	sums := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for i := 0; sc.Scan(); i++ {
		if i == 0 {
			continue // the toolchain
		}
		sum, p, ok := strings.Cut(sc.Text(), "  ")
		if !ok || len(sum) != 64 {
			return nil, fmt.Errorf("%s line %d is not a digest and a path", path.Base(stampFile), i+1)
		}
		sums[p] = sum
	}
	return sums, nil
}
