package conformance_test

import (
	"testing"
	"time"

	"github.com/loci-dev/loci/sources/bundled"
	"github.com/loci-dev/loci/sources/conformance"
	"github.com/loci-dev/loci/sources/installed"
	"github.com/loci-dev/loci/sources/sandbox"
)

// The bundled WebAssembly directory source passes the same cases as the
// built-in one, run as the daemon runs it: its committed module compiled
// by the sandbox, each call a fresh instance with the locator mounted
// read-only.
func TestTheWebAssemblyDirectorySourcePasses(t *testing.T) {
	pkgs, err := bundled.Packages()
	if err != nil {
		t.Fatal(err)
	}
	rt, err := sandbox.New(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(t.Context())
	for _, p := range pkgs {
		if p.Manifest.Name != "directory-wasm" {
			continue
		}
		mod, err := rt.Compile(t.Context(), p.ModuleDigest(), p.Module)
		if err != nil {
			t.Fatal(err)
		}
		a, err := installed.New(p, installed.InSandbox(rt, mod, p.Manifest.Name, time.Minute), installed.Options{Timeout: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		check(t, conformance.Run(t.Context(), a, tree(t, 6), nil))
		return
	}
	t.Fatal("no bundled package is named directory-wasm")
}
