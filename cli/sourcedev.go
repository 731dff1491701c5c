package cli

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2"
	"github.com/spf13/cobra"

	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/sources/pack"
	"github.com/loci-dev/loci/sources/plugin"
)

// sourceDevCmds are the local commands for writing a source package, no
// daemon needed: init, build, test, package, index, keygen.
func (a *app) sourceDevCmds() []*cobra.Command {
	return []*cobra.Command{a.sourceInitCmd(), a.sourceBuildCmd(), a.sourceTestCmd(), a.sourcePackCmd(), a.sourceIndexCmd(), a.sourceKeygenCmd()}
}

// rustTarget is the Rust target a source package's module is built for.
const rustTarget = "wasm32-wasip1"

// InitResult is what loci source init made.
type InitResult struct {
	Template string   `json:"template"`
	Name     string   `json:"name"`
	Dir      string   `json:"dir"`
	Files    []string `json:"files"`
}

func (a *app) sourceInitCmd() *cobra.Command {
	var kind, name, program string
	c := &cobra.Command{
		Use:   "init [DIR]",
		Short: "Make a new source package project that builds and passes the conformance cases at once",
		Long: `Make a new source package project in DIR (default: the current folder; made
if missing), from a template:

  go    a Go guest (GOOS=wasip1): a folder source that files text files
  rust  a Rust guest (wasm32-wasip1, serde_json): the same source
  cli   a Go guest wrapping a command-line program through the program
        permission (--program, default cat): it files what the program
        prints for each file of the folder

Each has its manifest (loci-source.toml), a README, a .gitignore and
testdata/locator, the sample folder loci source test mines. A Go project
carries a copy of the source contract and has no dependencies: it builds
offline. Nothing is overwritten: a file already there is an error.

Then: loci source build, loci source test, loci source package.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			dir := "."
			if len(args) == 1 {
				dir = args[0]
			}
			dir, err := filepath.Abs(dir)
			if err != nil {
				return fault.Newf(fault.InputInvalid, "give the project's folder", "DIR %q: %v", dir, err)
			}
			if _, ok := templateDirs[kind]; !ok {
				return fault.Newf(fault.InputInvalid, "use one of: "+strings.Join(templateNames, ", "), "--template %q is not a template", kind)
			}
			fromDir := name == ""
			if fromDir {
				name = filepath.Base(dir)
			}
			switch {
			case kind == TemplateCLI && program == "":
				program = defaultProgram
			case kind != TemplateCLI && program != "":
				return fault.Newf(fault.InputInvalid, "use --template cli to wrap a program", "--program is for the cli template, not %q", kind)
			}
			if !pack.ValidName(name) {
				help := "a source name has " + pack.NameRule
				if sug := suggestName(name); sug != "" {
					help += fmt.Sprintf(", such as %q", sug)
				}
				if fromDir {
					return fault.Newf(fault.InputInvalid, "pass --name NAME: "+help, "the folder's name %q is not a source name", name)
				}
				return fault.Newf(fault.InputInvalid, "pass --name NAME: "+help, "--name %q is not a source name", name)
			}
			d := templateData{Name: name, Program: program}
			if kind == TemplateGo || kind == TemplateCLI {
				d.GoVersion = goLine(goToolchain(c.Context()))
			}
			files, err := renderTemplate(kind, d)
			if err != nil {
				return err
			}
			var there []string
			for _, p := range sortedPaths(files) {
				if _, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(p))); err == nil {
					there = append(there, p)
				}
			}
			if len(there) > 0 {
				return fault.Newf(fault.InputInvalid, "init into a new or empty folder, or move those files away",
					"%s already has %s: nothing was written", dir, strings.Join(there, ", "))
			}
			for _, p := range sortedPaths(files) {
				full := filepath.Join(dir, filepath.FromSlash(p))
				if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
					return fault.Wrap(fault.IOFailed, err, "cannot make "+filepath.Dir(full)+": "+err.Error(), "check that the folder is writable")
				}
				if err := os.WriteFile(full, files[p], 0o644); err != nil {
					return fault.Wrap(fault.IOFailed, err, "cannot write "+full+": "+err.Error(), "check that the folder is writable")
				}
			}
			res := InitResult{Template: kind, Name: name, Dir: dir, Files: sortedPaths(files)}
			if a.jsonOut {
				return a.out(res)
			}
			a.printf("made the %s source project %s in %s:\n", kind, name, dir)
			for _, f := range res.Files {
				a.printf("  %s\n", f)
			}
			if kind == TemplateCLI {
				a.printf("it wraps the program %s (permissions.programs in %s)\n", program, pack.ManifestFile)
			}
			a.printf("next:\n  cd %s\n  loci source build\n  loci source test\n  loci source package\n", dir)
			return nil
		},
	}
	c.Flags().StringVar(&kind, "template", TemplateGo, "the project's template: "+strings.Join(templateNames, ", "))
	c.Flags().StringVar(&name, "name", "", "the source's name (default: the folder's name)")
	c.Flags().StringVar(&program, "program", "", "the program the cli template wraps (default "+defaultProgram+")")
	return c
}

// goToolchain is the version of the go command on PATH ("go1.26.8"),
// else this binary's toolchain's.
func goToolchain(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "env", "GOVERSION")
	// The go on PATH itself, never a toolchain a go.mod around the
	// current folder would make it download.
	cmd.Env = append(os.Environ(), "GOTOOLCHAIN=local")
	if out, err := cmd.Output(); err == nil {
		return strings.TrimSpace(string(out))
	}
	return runtime.Version()
}

// BuildResult is a built module.
type BuildResult struct {
	Template string `json:"template"`
	Module   string `json:"module"`
	Size     int64  `json:"size"`
	SHA256   string `json:"sha256"`
}

func (a *app) sourceBuildCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "build [DIR]",
		Short: "Build a source package project's WebAssembly module beside its manifest",
		Long: `Build the project in DIR (default: the current folder) into the module its
manifest names, beside the manifest, with the project's own toolchain:

  Go    GOOS=wasip1 GOARCH=wasm go build -trimpath (go on PATH)
  Rust  cargo build --release --target wasm32-wasip1, then the module is
        copied beside the manifest (cargo on PATH and that target)

The template is told by the project's files (go.mod, Cargo.toml). Prints
the module's path, size and SHA-256. The compiler's messages go to
stderr.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			dir, err := sourceProjectDir(args)
			if err != nil {
				return err
			}
			res, err := a.buildProject(c.Context(), dir)
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.out(res)
			}
			a.printf("built %s (%s)\n  size    %d bytes\n  sha256  %s\n", res.Module, res.Template, res.Size, res.SHA256)
			return nil
		},
	}
}

// suggestName is a source name close to s (lowercased, runs of other
// characters made one '-'), "" when none is.
func suggestName(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(r)
			dash = false
			continue
		}
		dash = true
	}
	out := strings.TrimLeft(b.String(), "0123456789-")
	if len(out) > 63 {
		out = strings.TrimRight(out[:63], "-")
	}
	if !pack.ValidName(out) {
		return ""
	}
	return out
}

// sourceProjectDir is the project folder the arguments name (default: the
// current folder), absolute.
func sourceProjectDir(args []string) (string, error) {
	dir := "."
	if len(args) == 1 {
		dir = args[0]
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fault.Newf(fault.InputInvalid, "give the project's folder", "DIR %q: %v", dir, err)
	}
	if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
		return "", fault.Newf(fault.InputInvalid, "give the folder of a project loci source init made", "%s is not a folder", abs)
	}
	return abs, nil
}

// projectManifest reads the manifest of the project in dir.
func projectManifest(dir string) (*pack.Manifest, error) {
	b, err := os.ReadFile(filepath.Join(dir, pack.ManifestFile))
	if err != nil {
		return nil, fault.Newf(fault.InputInvalid, "give the folder of a source project (loci source init makes one)",
			"%s has no %s: it is not a source project", dir, pack.ManifestFile)
	}
	return pack.ParseManifest(b)
}

// projectTemplate is the template the project in dir was made from, told
// by its files.
func projectTemplate(dir string) (string, error) {
	exists := func(f string) bool { _, err := os.Stat(filepath.Join(dir, f)); return err == nil }
	switch {
	case exists("go.mod"):
		return TemplateGo, nil
	case exists("Cargo.toml"):
		return TemplateRust, nil
	}
	return "", fault.Newf(fault.InputInvalid, "loci source build builds Go (go.mod) and Rust (Cargo.toml) projects; build others yourself into the module the manifest names",
		"%s has neither go.mod nor Cargo.toml", dir)
}

// buildProject builds the project in dir and reads back its module.
func (a *app) buildProject(ctx context.Context, dir string) (*BuildResult, error) {
	m, err := projectManifest(dir)
	if err != nil {
		return nil, err
	}
	kind, err := projectTemplate(dir)
	if err != nil {
		return nil, err
	}
	switch kind {
	case TemplateGo:
		err = a.buildGo(ctx, dir, m.Module)
	case TemplateRust:
		err = a.buildRust(ctx, dir, m.Module)
	}
	if err != nil {
		return nil, err
	}
	p, err := pack.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	return &BuildResult{Template: kind, Module: filepath.Join(dir, m.Module), Size: int64(len(p.Module)), SHA256: p.ModuleDigest()}, nil
}

// buildGo builds a Go project for wasip1.
func (a *app) buildGo(ctx context.Context, dir, module string) error {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return fault.New(fault.SourceUnavailable, "cannot build: the go command is not on PATH",
			"install Go 1.21 or newer (https://go.dev/dl) and put its bin folder on PATH")
	}
	cmd := exec.CommandContext(ctx, goBin, "build", "-trimpath", "-o", module, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	cmd.Stdout, cmd.Stderr = a.stderrOrDiscard(), a.stderrOrDiscard()
	if err := cmd.Run(); err != nil {
		return fault.Wrap(fault.SourceFailed, err, "GOOS=wasip1 GOARCH=wasm go build failed in "+dir+": "+err.Error(),
			"correct what the compiler said above and build again")
	}
	return nil
}

// buildRust builds a Rust project for wasm32-wasip1 and copies the
// module beside the manifest.
func (a *app) buildRust(ctx context.Context, dir, module string) error {
	cargo, err := exec.LookPath("cargo")
	if err != nil {
		return fault.New(fault.SourceUnavailable, "cannot build: the cargo command is not on PATH",
			"install Rust (https://rustup.rs), then run `rustup target add "+rustTarget+"`")
	}
	if rustup, err := exec.LookPath("rustup"); err == nil {
		var stderr bytes.Buffer
		cmd := exec.CommandContext(ctx, rustup, "target", "list", "--installed")
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			why, _, _ := strings.Cut(strings.TrimSpace(stderr.String()), "\n")
			return fault.New(fault.SourceUnavailable, "cannot build: rustup has no usable Rust toolchain: "+safeText(why),
				"install one (`rustup default stable`), then run `rustup target add "+rustTarget+"`")
		}
		if !slices.Contains(strings.Fields(string(out)), rustTarget) {
			return fault.New(fault.SourceUnavailable, "cannot build: the Rust target "+rustTarget+" is not installed",
				"run `rustup target add "+rustTarget+"`")
		}
	}
	bin, err := crateBinary(dir)
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, cargo, "build", "--release", "--target", rustTarget)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = a.stderrOrDiscard(), a.stderrOrDiscard()
	if err := cmd.Run(); err != nil {
		return fault.Wrap(fault.SourceFailed, err, "cargo build --release --target "+rustTarget+" failed in "+dir+": "+err.Error(),
			"correct what the compiler said above and build again")
	}
	target := filepath.Join(dir, "target")
	if t, ok := os.LookupEnv("CARGO_TARGET_DIR"); ok && t != "" {
		target = t
		if !filepath.IsAbs(target) {
			target = filepath.Join(dir, target)
		}
	}
	built := filepath.Join(target, rustTarget, "release", bin+".wasm")
	b, err := os.ReadFile(built)
	if err != nil {
		return fault.Wrap(fault.SourceFailed, err, "cargo built no "+built+": "+err.Error(), "check the [[bin]] name in Cargo.toml")
	}
	return writeFileAtomic(filepath.Join(dir, module), b, 0o644)
}

// crateBinary is the name of the binary a Cargo.toml builds: its first
// [[bin]]'s, else its package's.
func crateBinary(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, "Cargo.toml"))
	if err != nil {
		return "", fault.Wrap(fault.IOFailed, err, "cannot read Cargo.toml: "+err.Error(), "check the project folder")
	}
	var c struct {
		Package struct {
			Name string `toml:"name"`
		} `toml:"package"`
		Bin []struct {
			Name string `toml:"name"`
		} `toml:"bin"`
	}
	if err := toml.Unmarshal(b, &c); err != nil {
		return "", fault.Newf(fault.InputInvalid, "correct Cargo.toml", "Cargo.toml is not valid TOML: %v", err)
	}
	if len(c.Bin) > 0 && c.Bin[0].Name != "" {
		return c.Bin[0].Name, nil
	}
	if c.Package.Name == "" {
		return "", fault.New(fault.InputInvalid, "Cargo.toml names no package", "add [package] name")
	}
	return c.Package.Name, nil
}

// writeFileAtomic writes b to path through a temporary file in its
// folder renamed over it: path is the old file or the new one, never
// half of one.
func writeFileAtomic(path string, b []byte, perm fs.FileMode) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if errors.Is(err, fs.ErrNotExist) {
		dir := filepath.Dir(path)
		return fault.Wrap(fault.IOFailed, err, "the folder "+dir+" does not exist; "+path+" was not written",
			"make the folder (mkdir -p "+dir+") or give a path in one that exists")
	}
	if err != nil {
		return fault.Wrap(fault.IOFailed, err, "cannot write in "+filepath.Dir(path)+": "+err.Error(), "check that the folder exists and is writable")
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if _, err = f.Write(b); err == nil {
		err = f.Chmod(perm)
	}
	if err == nil {
		err = f.Close()
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		return fault.Wrap(fault.IOFailed, err, "cannot write "+path+": "+err.Error(), "check the disk and that "+path+" is not a folder")
	}
	return nil
}

func (a *app) sourceTestCmd() *cobra.Command {
	var locator string
	c := &cobra.Command{
		Use:   "test [DIR]",
		Short: "Run the conformance cases against a project's built module in the sandbox",
		Long: `Run the source conformance cases (paging strictly after a cursor, a foreign
cursor refused, stable revisions and normalisation, nothing after the last
cursor) against the module built in DIR (default: the current folder), in
loci's real WebAssembly sandbox, with exactly the permissions its manifest
asks for, which are printed first. The locator mined is --locator (default
DIR/testdata/locator), a folder of at least three documents.

One line per case, PASS or FAIL with the reason; the exit code is not zero
when a case fails. Build first: loci source build.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			dir, err := sourceProjectDir(args)
			if err != nil {
				return err
			}
			if locator == "" {
				locator = filepath.Join(dir, "testdata", "locator")
			}
			if locator, err = filepath.Abs(locator); err != nil {
				return fault.Newf(fault.InputInvalid, "give a folder", "--locator: %v", err)
			}
			if fi, err := os.Stat(locator); err != nil || !fi.IsDir() {
				return fault.Newf(fault.InputInvalid, "give --locator a folder of at least three documents (loci source init makes testdata/locator)",
					"the locator %s is not a folder", locator)
			}
			if _, err := readBuilt(dir); err != nil {
				return err
			}
			if a.local.SourceTest == nil {
				return fault.New(fault.SourceUnavailable, "this loci binary was built without the source sandbox", "use a release build of loci")
			}
			return a.local.SourceTest(c.Context(), dir, locator, a.stdout)
		},
	}
	c.Flags().StringVar(&locator, "locator", "", "the folder to mine (default DIR/testdata/locator)")
	return c
}

// readBuilt reads the package built in dir: its manifest and module.
func readBuilt(dir string) (*pack.Package, error) {
	if _, err := projectManifest(dir); err != nil {
		return nil, err
	}
	p, err := pack.ReadDir(dir)
	if err != nil {
		return nil, fault.New(fault.InputInvalid, fault.As(err).Msg, "build the module first: loci source build "+dir)
	}
	return p, nil
}

// PackageResult is a package archive written.
type PackageResult struct {
	Archive       string           `json:"archive"`
	Size          int64            `json:"size"`
	SHA256        string           `json:"sha256"`
	Name          string           `json:"name"`
	Version       string           `json:"version"`
	ModuleSHA256  string           `json:"module_sha256"`
	ConsentDigest string           `json:"consent_digest"`
	Permissions   pack.Permissions `json:"permissions"`
	Words         []string         `json:"permissions_words"`
	// Incompatible is why this loci could not run it ("" when it can).
	Incompatible string `json:"incompatible,omitempty"`
}

func (a *app) sourcePackCmd() *cobra.Command {
	var out string
	c := &cobra.Command{
		Use:   "package [DIR]",
		Short: "Pack a built source package project into NAME-VERSION.tar.gz",
		Long: `Pack the manifest and the built module of the project in DIR (default: the
current folder) into a deterministic .tar.gz: the same manifest and module
give the same bytes wherever and whenever they are packed. The archive is
--out, default DIR/NAME-VERSION.tar.gz (replaced if there).

Prints the archive's path, size and SHA-256, the consent digest a user
confirms when installing it, and the permissions it asks for in words.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			dir, err := sourceProjectDir(args)
			if err != nil {
				return err
			}
			p, err := readBuilt(dir)
			if err != nil {
				return err
			}
			m := p.Manifest
			var buf bytes.Buffer
			if err := p.WriteArchive(&buf); err != nil {
				return fault.Wrap(fault.IOFailed, err, "cannot pack the archive: "+err.Error(), "check the disk")
			}
			if out == "" {
				out = filepath.Join(dir, m.Name+"-"+m.Version+".tar.gz")
			}
			if out, err = filepath.Abs(out); err != nil {
				return fault.Newf(fault.InputInvalid, "give --out a file path", "--out: %v", err)
			}
			if fi, err := os.Stat(out); err == nil && fi.IsDir() {
				return fault.Newf(fault.InputInvalid, "give --out a file path", "--out %s is a folder", out)
			}
			if err := writeFileAtomic(out, buf.Bytes(), 0o644); err != nil {
				return err
			}
			res := PackageResult{Archive: out, Size: int64(buf.Len()), SHA256: pack.Digest(buf.Bytes()), Name: m.Name, Version: m.Version,
				ModuleSHA256: p.ModuleDigest(), ConsentDigest: pack.ConsentDigest(m.Name, m.Permissions), Permissions: m.Permissions,
				Words: m.Permissions.Words(), Incompatible: m.Compatible(a.local.Version)}
			if a.jsonOut {
				return a.out(res)
			}
			a.printf("packed %s %s into %s\n", res.Name, res.Version, res.Archive)
			a.printf("  size            %d bytes\n  sha256          %s\n  module sha256   %s\n  consent digest  %s\n",
				res.Size, res.SHA256, res.ModuleSHA256, res.ConsentDigest)
			a.printf("  it may:\n")
			for _, w := range res.Words {
				a.printf("    - %s\n", w)
			}
			if m.Permissions.None() {
				a.printf("  (it asks for nothing: installing it needs no consent)\n")
			}
			if res.Incompatible != "" {
				fmt.Fprintf(a.stderrOrDiscard(), "warning: this loci (%s) cannot run it: %s\n", a.local.Version, safeText(res.Incompatible))
			}
			return nil
		},
	}
	c.Flags().StringVar(&out, "out", "", "the archive to write (default DIR/NAME-VERSION.tar.gz)")
	return c
}

// KeygenResult is a key pair written.
type KeygenResult struct {
	PublicKey  string `json:"public_key"`
	KeyFile    string `json:"key_file"`
	PublicFile string `json:"public_file"`
	// MadeFolder is the folder keygen made for the keys (mode 0700), ""
	// when it was there.
	MadeFolder string `json:"made_folder,omitempty"`
}

func (a *app) sourceKeygenCmd() *cobra.Command {
	var prefix string
	var force bool
	c := &cobra.Command{
		Use:   "keygen --out PREFIX",
		Short: "Make an ed25519 key pair to sign source registry indexes",
		Long: `Make an ed25519 key pair for signing the packages of a source registry
(loci source index --sign): PREFIX.key, the private key (PKCS #8 PEM, mode
0600: keep it secret, and out of the registry), and PREFIX.pub, the public
key on one line ("loci-ed25519 <base64>"), which users trust. Existing
files are kept unless --force. Prints the public key.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := required("out", prefix, "PREFIX (PREFIX.key and PREFIX.pub are written)"); err != nil {
				return err
			}
			keyFile, pubFile := prefix+".key", prefix+".pub"
			if !force {
				for _, f := range []string{keyFile, pubFile} {
					if _, err := os.Lstat(f); err == nil {
						return fault.Newf(fault.InputInvalid, "choose another --out, or pass --force to replace the key pair (what it signed no longer verifies against a new key)",
							"%s exists; nothing was written", f)
					}
				}
			}
			pub, key, err := pack.GenerateKey()
			if err != nil {
				return fault.Wrap(fault.AuthEntropyUnavailable, err, "cannot make a key: "+err.Error(), "check the system's random source")
			}
			priv, err := pack.MarshalPrivateKey(key)
			if err != nil {
				return fault.Wrap(fault.ServerFailed, err, "cannot encode the key: "+err.Error(), "report it")
			}
			text := pack.FormatPublicKey(pub)
			// A missing folder is made, private: it is there to hold a
			// secret key.
			made := ""
			if dir := filepath.Dir(keyFile); dir != "." {
				if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
					if err := os.MkdirAll(dir, 0o700); err != nil {
						return fault.Wrap(fault.IOFailed, err, "cannot make the folder "+dir+": "+err.Error(), "check that its parent is writable, or give another --out")
					}
					made = dir
				}
			}
			if err := writeFileAtomic(keyFile, priv, 0o600); err != nil {
				return err
			}
			if err := writeFileAtomic(pubFile, []byte(text+"\n"), 0o644); err != nil {
				return err
			}
			res := KeygenResult{PublicKey: text, KeyFile: keyFile, PublicFile: pubFile, MadeFolder: made}
			if a.jsonOut {
				return a.out(res)
			}
			a.printf("%s\n", text)
			if made != "" {
				fmt.Fprintf(a.stderrOrDiscard(), "made the folder %s (mode 0700: only you can read it)\n", safeText(made))
			}
			fmt.Fprintf(a.stderrOrDiscard(), "wrote the private key %s (keep it secret) and the public key %s\n", safeText(keyFile), safeText(pubFile))
			return nil
		},
	}
	c.Flags().StringVar(&prefix, "out", "", "the key files' path without .key and .pub")
	c.Flags().BoolVar(&force, "force", false, "replace an existing key pair")
	return c
}

// IndexResult is an index written.
type IndexResult struct {
	Index    string `json:"index"`
	Archives int    `json:"archives"`
	// Key is the signing key's public text form ("" unsigned).
	Key     string             `json:"key,omitempty"`
	Sources []pack.IndexSource `json:"sources"`
	Plugins []pack.IndexPlugin `json:"plugins"`
	// Warnings are what the publisher should know (the private key
	// inside the registry's folder).
	Warnings []string `json:"warnings,omitempty"`
}

func (a *app) sourceIndexCmd() *cobra.Command {
	var keyFile, out string
	var yank, unyank []string
	c := &cobra.Command{
		Use:   "index DIR",
		Short: "Write a static registry's index over the source packages and plugins in a folder",
		Long: `Write index.json over the *.tar.gz archives in DIR and in its folders one
level down (DIR/plugins/, DIR/notes/...; folders beginning with a dot are
skipped): a static registry any web server, folder or git repository can
serve as it is. Each archive is read as a source package (loci source
package) or, failing that, as a plugin (loci-plugin.toml and its source
modules); one that is neither is an error naming it, and nothing is
written. A folder with no archive is an error; one with only plugins is
a plugin registry. Sources are listed by name and plugins by id, each
version newest first, with the archive's path, SHA-256, size, contract
and loci requirement; with --sign KEYFILE (loci source keygen) an ed25519
signature over each archive's bytes and the public key. Keep the private
key out of DIR: whoever serves DIR publishes what is in it (index warns).

--out names the index (default DIR/index.json); it sits in DIR.

Yanking: a publisher withdraws a version with --yank NAME@VERSION (a
reader installs it only when pinned) and restores it with --unyank
(both repeatable; a NAME@VERSION the index does not list is an error,
and nothing is written). Indexing again keeps the yanked flags of the
releases the index already had (same name, version and SHA-256).

The format (version 1):
  {"version": 1,
   "sources": [{"name", "description", "versions": [RELEASE...]}],
   "plugins": [{"id", "description", "versions": [RELEASE...]}]}
  RELEASE: {"version"   semantic version (the manifest's),
            "archive"   path relative to the index's folder, "/" between
                        folders, never above it,
            "sha256"    the archive file's SHA-256, lowercase hex,
            "size"      its size in bytes,
            "contract"  the source contract it needs (a plugin: the
                        highest of its source modules'),
            "loci"      the loci versions it runs on (the manifest's),
            "signature", "key"  ed25519 over the archive's bytes, and the
                        public key ("loci-ed25519 <base64>"),
            "yanked"    true: withdrawn}
A daemon lists the folder (or its URL) in mining.registries; with
mining.signature_policy = required it installs only what a key in
mining.trusted_keys signed (a plugin may also carry its own signature).`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			dir, err := filepath.Abs(args[0])
			if err != nil {
				return fault.Newf(fault.InputInvalid, "give the registry's folder", "DIR %q: %v", args[0], err)
			}
			if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
				return fault.Newf(fault.InputInvalid, "give the folder holding the package and plugin archives", "%s is not a folder", dir)
			}
			if out == "" {
				out = filepath.Join(dir, pack.IndexFile)
			}
			if out, err = filepath.Abs(out); err != nil {
				return fault.Newf(fault.InputInvalid, "give --out a file path", "--out: %v", err)
			}
			if filepath.Dir(out) != dir {
				return fault.Newf(fault.InputInvalid, "write the index into DIR: it names its archives by their paths below it",
					"--out %s is not in %s", out, dir)
			}
			for _, y := range yank {
				if slices.Contains(unyank, y) {
					return fault.Newf(fault.InputInvalid, "name a release in --yank or in --unyank, not both", "%s is both yanked and unyanked", fault.Clip(y, fault.MaxQuoted))
				}
			}
			var key []byte
			var warnings []string
			if keyFile != "" {
				if key, err = os.ReadFile(keyFile); err != nil {
					return fault.Newf(fault.InputInvalid, "give the private key file loci source keygen wrote (PREFIX.key)", "--sign %s: %v", keyFile, err)
				}
				if inside(dir, keyFile) {
					w := fmt.Sprintf("the private key %s is inside the registry's folder %s: whoever serves the folder publishes it, and anyone could sign as you. Move it out of the folder (and make a new key pair if the folder was already served)", keyFile, dir)
					warnings = append(warnings, w)
					fmt.Fprintf(a.stderrOrDiscard(), "warning: %s\n", safeText(w))
				}
			}
			prev, err := previousIndex(out)
			if err != nil {
				return err
			}
			ix, n, err := indexDir(dir, key, keyFile, prev)
			if err != nil {
				return err
			}
			for _, y := range yank {
				if err := ix.SetYanked(y, true); err != nil {
					return err
				}
			}
			for _, y := range unyank {
				if err := ix.SetYanked(y, false); err != nil {
					return err
				}
			}
			if err := writeFileAtomic(out, ix.Marshal(), 0o644); err != nil {
				return err
			}
			res := IndexResult{Index: out, Archives: n, Sources: ix.Sources, Plugins: ix.Plugins, Warnings: warnings}
			if res.Plugins == nil {
				res.Plugins = []pack.IndexPlugin{}
			}
			if len(ix.Sources) > 0 {
				res.Key = ix.Sources[0].Versions[0].Key
			} else if len(ix.Plugins) > 0 {
				res.Key = ix.Plugins[0].Versions[0].Key
			}
			if a.jsonOut {
				return a.out(res)
			}
			signed := "unsigned"
			if res.Key != "" {
				signed = "signed by " + res.Key
			}
			var of []string
			if ns := len(ix.Sources); ns > 0 {
				of = append(of, fmt.Sprintf("%d %s", ns, plural(ns, "source", "sources")))
			}
			if np := len(ix.Plugins); np > 0 {
				of = append(of, fmt.Sprintf("%d %s", np, plural(np, "plugin", "plugins")))
			}
			a.printf("indexed %d %s of %s into %s (%s)\n", n, plural(n, "archive", "archives"), strings.Join(of, " and "), out, signed)
			line := func(kind, name string, rels []pack.IndexRelease) {
				var vs []string
				for _, v := range rels {
					if v.Yanked {
						vs = append(vs, v.Version+" (yanked)")
					} else {
						vs = append(vs, v.Version)
					}
				}
				a.printf("  %-6s %-20s %s\n", kind, name, strings.Join(vs, ", "))
			}
			for _, s := range ix.Sources {
				line("source", s.Name, s.Versions)
			}
			for _, p := range ix.Plugins {
				line("plugin", p.ID, p.Versions)
			}
			return nil
		},
	}
	c.Flags().StringVar(&keyFile, "sign", "", "sign each archive with this private key (loci source keygen's PREFIX.key; keep it out of DIR)")
	c.Flags().StringVar(&out, "out", "", "the index file (default DIR/index.json)")
	c.Flags().StringArrayVar(&yank, "yank", nil, "withdraw the release NAME@VERSION (a source's or a plugin's; repeatable)")
	c.Flags().StringArrayVar(&unyank, "unyank", nil, "restore the yanked release NAME@VERSION (repeatable)")
	return c
}

// inside reports whether file is in dir or a folder below it (through
// symbolic links as far as they resolve).
func inside(dir, file string) bool {
	abs, err := filepath.Abs(file)
	if err != nil {
		return false
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		abs = r
	}
	if r, err := filepath.EvalSymlinks(dir); err == nil {
		dir = r
	}
	rel, err := filepath.Rel(dir, abs)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// previousIndex is the index at out being replaced (nil when there is
// none): its yanked flags carry over. One that cannot be read is an
// error, so a flag is never dropped silently.
func previousIndex(out string) (*pack.Index, error) {
	b, err := os.ReadFile(out)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fault.Wrap(fault.IOFailed, err, "cannot read the index "+out+": "+err.Error(), "check the file")
	}
	ix, err := pack.ParseIndex(b)
	if err != nil {
		return nil, fault.New(fault.InputInvalid, fmt.Sprintf("the index already at %s cannot be read (its yanked flags would be lost): %s", out, fault.As(err).Msg),
			"correct it, or remove it to index afresh (then yank again with --yank); nothing was written")
	}
	return ix, nil
}

// indexDir is the index of the source package and plugin archives in dir
// and its folders one level down (not those beginning with a dot),
// signed with the private key file's bytes when there are any, keeping
// prev's yanked flags, and how many archives it lists.
func indexDir(dir string, keyBytes []byte, keyFile string, prev *pack.Index) (*pack.Index, int, error) {
	var names []string
	for _, pattern := range []string{"*.tar.gz", filepath.Join("*", "*.tar.gz")} {
		m, err := filepath.Glob(filepath.Join(dir, pattern))
		if err != nil {
			return nil, 0, fault.Wrap(fault.IOFailed, err, "cannot list "+dir+": "+err.Error(), "check the folder")
		}
		for _, n := range m {
			rel, _ := filepath.Rel(dir, n)
			if !strings.HasPrefix(rel, ".") {
				names = append(names, n)
			}
		}
	}
	if len(names) == 0 {
		return nil, 0, fault.Newf(fault.InputInvalid, "pack sources with loci source package (or plugins) and copy the archives there, beside the index or one folder down",
			"%s holds no *.tar.gz source packages or plugins", dir)
	}
	slices.Sort(names)
	var archives []pack.IndexArchive
	for _, n := range names {
		fi, err := os.Stat(n)
		if err != nil || !fi.Mode().IsRegular() {
			return nil, 0, fault.Newf(fault.InputInvalid, "remove it or make it a package or plugin archive", "%s is not a file", n)
		}
		if fi.Size() > pack.MaxArchiveBytes {
			return nil, 0, fault.Newf(fault.InputInvalid, "a package or plugin is at most 64 MiB", "%s is larger than a package may be", n)
		}
		b, err := os.ReadFile(n)
		if err != nil {
			return nil, 0, fault.Wrap(fault.IOFailed, err, "cannot read "+n+": "+err.Error(), "check the file")
		}
		rel, _ := filepath.Rel(dir, n)
		archives = append(archives, pack.IndexArchive{File: filepath.ToSlash(rel), Bytes: b})
	}
	var key ed25519.PrivateKey
	if keyBytes != nil {
		k, err := pack.ParsePrivateKey(keyBytes)
		if err != nil {
			return nil, 0, fault.Newf(fault.InputInvalid, "give the private key file loci source keygen wrote (PREFIX.key)",
				"--sign %s: %s", keyFile, fault.As(err).Msg)
		}
		key = k
	}
	ix, err := pack.BuildIndexWith(archives, pack.IndexOptions{Key: key, Plugin: plugin.IndexInfo, Previous: prev})
	if err != nil {
		var fe *fault.Error
		if errors.As(err, &fe) {
			return nil, 0, fault.New(fe.Code, fe.Msg, "remove or repack the archive named; the index was not written")
		}
		return nil, 0, err
	}
	return ix, len(archives), nil
}
