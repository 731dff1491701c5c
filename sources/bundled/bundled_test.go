package bundled

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/sources"
	"github.com/loci-dev/loci/sources/pack"
)

// The embedded packages read, and are what their manifests promise: the
// names (none a built-in's), the permissions a user is shown, modules
// this loci runs.
func TestPackages(t *testing.T) {
	ps, err := Packages()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range ps {
		names = append(names, p.Manifest.Name)
		if r := p.Manifest.Compatible("0.1.0-dev"); r != "" {
			t.Errorf("%s is incompatible: %s", p.Manifest.Name, r)
		}
		if !bytes.HasPrefix(p.Module, []byte("\x00asm")) || len(p.Module) > 8<<20 {
			t.Errorf("%s's module: %d bytes", p.Manifest.Name, len(p.Module))
		}
		// Through a package archive and back, as an upload is read.
		var b bytes.Buffer
		if err := p.WriteArchive(&b); err != nil {
			t.Fatal(err)
		}
		back, err := pack.ReadArchive(&b)
		if err != nil {
			t.Fatalf("%s through an archive: %v", p.Manifest.Name, err)
		}
		if back.ModuleDigest() != p.ModuleDigest() || !bytes.Equal(back.ManifestBytes, p.ManifestBytes) {
			t.Errorf("%s changed through an archive", p.Manifest.Name)
		}
	}
	if !slices.Equal(names, []string{"directory-wasm", "git-history"}) {
		t.Fatalf("bundled packages %q", names)
	}
	if builtin := (sources.Directory{}).Info().Name; slices.Contains(names, builtin) {
		t.Fatalf("a bundled package takes the built-in %q's name", builtin)
	}
	dir, git := ps[0].Manifest, ps[1].Manifest
	if !slices.Equal(dir.Permissions.Read, []string{pack.Locator}) || len(dir.Permissions.Programs) != 0 || dir.Permissions.Network ||
		len(dir.Permissions.Env) != 0 || !dir.Source.Incremental || !slices.Equal(dir.Source.Triggers, []string{"watch"}) {
		t.Errorf("directory-wasm's manifest: %+v", dir)
	}
	if !slices.Equal(git.Permissions.Read, []string{pack.Locator}) || !slices.Equal(git.Permissions.Programs, []string{"git"}) ||
		git.Permissions.Network || len(git.Permissions.Env) != 0 || !git.Source.Incremental {
		t.Errorf("git-history's manifest: %+v", git)
	}
	// Each call hands out its own bytes.
	ps[0].Module[0] = 'X'
	again, err := Packages()
	if err != nil || again[0].Module[0] != 0 {
		t.Fatalf("a caller's change reached the embedded module: %v", err)
	}
}

// A damaged set of packages is refused as loci::source::integrity saying
// what is wrong.
func TestDamagedPackagesRefused(t *testing.T) {
	good := fstest.MapFS{}
	for _, f := range []string{stampFile, "modules/git-history/loci-source.toml", "modules/git-history/git-history.wasm"} {
		b, err := modules.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		good[f] = &fstest.MapFile{Data: b}
	}
	if ps, err := read(good); err != nil || len(ps) != 1 {
		t.Fatalf("the good set: %v", err)
	}
	clone := func(change func(fstest.MapFS)) fstest.MapFS {
		m := fstest.MapFS{}
		for k, v := range good {
			m[k] = &fstest.MapFile{Data: slices.Clone(v.Data)}
		}
		change(m)
		return m
	}
	for name, c := range map[string]struct {
		fsys fstest.MapFS
		want string
	}{
		"a changed module": {clone(func(m fstest.MapFS) { m["modules/git-history/git-history.wasm"].Data[100]++ }), "SHA-256"},
		"no stamp":         {clone(func(m fstest.MapFS) { delete(m, stampFile) }), "toolchain.txt"},
		"not in the stamp": {clone(func(m fstest.MapFS) { m[stampFile].Data = []byte("go1.0\n") }), "not in toolchain.txt"},
		"a bad stamp":      {clone(func(m fstest.MapFS) { m[stampFile].Data = append(m[stampFile].Data, "xyz\n"...) }), "not a digest"},
		"not wasm":         {clone(func(m fstest.MapFS) { m["modules/git-history/git-history.wasm"].Data[0] = 'X' }), "not a WebAssembly module"},
		"no module":        {clone(func(m fstest.MapFS) { delete(m, "modules/git-history/git-history.wasm") }), "git-history.wasm"},
		"a bad manifest":   {clone(func(m fstest.MapFS) { m["modules/git-history/loci-source.toml"].Data = []byte("name = 1") }), "manifest"},
		"another name": {clone(func(m fstest.MapFS) {
			m["modules/other/loci-source.toml"] = m["modules/git-history/loci-source.toml"]
		}), `named "git-history"`},
		"none": {fstest.MapFS{stampFile: good[stampFile], "modules/README": {Data: []byte("x")}}, "there are none"},
	} {
		_, err := read(c.fsys)
		var f *fault.Error
		if !errors.As(err, &f) || f.Code != fault.SourceIntegrity || !strings.Contains(f.Msg, c.want) {
			t.Errorf("%s: %v, want integrity saying %q", name, err, c.want)
		}
	}
}

// The committed modules are what their guests build to: when this
// toolchain is the one that built them, a rebuild into a temporary
// folder gives the same bytes; else the test says to run go generate.
func TestModulesReproducible(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the guests (-short)")
	}
	b, err := modules.ReadFile(stampFile)
	if err != nil {
		t.Fatal(err)
	}
	built, _, _ := strings.Cut(string(b), "\n")
	out, err := exec.Command("go", "env", "GOVERSION").Output()
	if err != nil {
		t.Skipf("no go command to rebuild with: %v", err)
	}
	if have := strings.TrimSpace(string(out)); have != built {
		t.Skipf("the modules were built with %s and this toolchain is %s: rebuild them with go generate ./sources/bundled (and commit them) to compare", built, have)
	}
	tmp := t.TempDir()
	cmd := exec.Command("go", "run", "./gen", "-o", tmp)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go run ./gen: %v\n%s", err, out)
	}
	fresh, err := os.ReadFile(filepath.Join(tmp, "toolchain.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if string(fresh) != string(b) {
		t.Errorf("rebuilt:\n%s\ncommitted:\n%s\nrun go generate ./sources/bundled and commit the modules", fresh, b)
	}
	sc := bufio.NewScanner(bytes.NewReader(fresh))
	for sc.Scan() {
		_, p, ok := strings.Cut(sc.Text(), "  ")
		if !ok {
			continue
		}
		got, err := os.ReadFile(filepath.Join(tmp, p))
		if err != nil {
			t.Fatal(err)
		}
		want, err := modules.ReadFile("modules/" + p)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s rebuilt is %d bytes unlike the committed %d: run go generate ./sources/bundled and commit it", p, len(got), len(want))
		}
	}
}
