package plugin

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/sources/pack"
)

// archiveHelp is the help of every archive error.
const archiveHelp = "this is not a plugin as loci plugin package writes it: package its folder again, or ask its author for the plugin"

func bad(format string, args ...any) error {
	return fault.New(fault.InputInvalid, "plugin: "+fault.Clip(fmt.Sprintf(format, args...), fault.MaxMsg-16), archiveHelp)
}

// Write writes p as a deterministic .tar.gz: the manifest, the signature
// when there is one, then every module's files by path, with fixed
// times, owners and modes.
func (p *Plugin) Write(w io.Writer) error {
	files := p.files()
	names := []string{ManifestFile}
	if p.Signature != nil {
		sig, err := json.Marshal(p.Signature)
		if err != nil {
			return err
		}
		files[SignatureFile] = sig
		names = append(names, SignatureFile)
	}
	for _, n := range sortedPaths(files) {
		if n != ManifestFile && n != SignatureFile {
			names = append(names, n)
		}
	}
	out := make([]pack.TarFile, len(names))
	for i, n := range names {
		out[i] = pack.TarFile{Name: n, Body: files[n]}
	}
	return pack.WriteTarGz(w, out)
}

// Bytes is p's archive (Write) in memory.
func (p *Plugin) Bytes() ([]byte, error) {
	var b bytes.Buffer
	if err := p.Write(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// Read reads and checks a plugin archive: at most MaxArchiveBytes
// compressed and unpacked; regular files (and folders) only, no link or
// device; clean relative paths, each once; the manifest, an optional
// signature, and exactly the files of the modules it names, each source
// module a valid source package (pack's manifest checks) under a source
// name no other module has. Every problem is loci::input::invalid saying
// what is wrong. Read does not judge compatibility (Compatible) or the
// signature (Verify).
func Read(r io.Reader) (*Plugin, error) {
	files, err := pack.ReadTarGz(r, "plugin", "plugin", bad, func(h *tar.Header) (string, bool, error) {
		name := strings.TrimPrefix(h.Name, "./")
		switch h.Typeflag {
		case tar.TypeReg:
		case tar.TypeDir:
			if !cleanPath(strings.TrimSuffix(name, "/")) {
				return "", false, bad("the folder %q is not a clean relative path", h.Name)
			}
			return "", true, nil
		case tar.TypeSymlink, tar.TypeLink:
			return "", false, bad("%q is a link; a plugin holds only regular files", h.Name)
		default:
			return "", false, bad("%q is not a regular file; a plugin holds only regular files", h.Name)
		}
		if !cleanPath(name) || path.Clean(name) != name {
			return "", false, bad("%q is not a clean relative path (no '..', no absolute path, no hidden file)", h.Name)
		}
		return name, false, nil
	})
	if err != nil {
		return nil, err
	}
	return fromFiles(files)
}

// fromFiles is the plugin of a set of files by path: Read's checks past
// the archive's own.
func fromFiles(files map[string][]byte) (*Plugin, error) {
	mb, ok := files[ManifestFile]
	if !ok {
		return nil, bad("there is no %s in the plugin", ManifestFile)
	}
	m, err := ParseManifest(mb)
	if err != nil {
		return nil, err
	}
	p := &Plugin{Manifest: m, ManifestBytes: mb}
	used := map[string]bool{ManifestFile: true}
	if sb, ok := files[SignatureFile]; ok {
		var s Signature
		d := json.NewDecoder(bytes.NewReader(sb))
		d.DisallowUnknownFields()
		if err := d.Decode(&s); err != nil || s.Key == "" || s.Signature == "" {
			return nil, bad("%s is not a signature ({\"key\", \"signature\"})", SignatureFile)
		}
		p.Signature = &s
		used[SignatureFile] = true
	}
	names := map[string]string{}
	for _, mod := range m.Modules {
		mpath := mod.Path + "/" + pack.ManifestFile
		smb, ok := files[mpath]
		if !ok {
			return nil, bad("the module folder %q has no %s", mod.Path, pack.ManifestFile)
		}
		sm, err := pack.ParseManifest(smb)
		if err != nil {
			return nil, fault.New(fault.InputInvalid, "module "+mod.Path+": "+fault.As(err).Msg, fault.As(err).Help)
		}
		wpath := mod.Path + "/" + sm.Module
		wasm, ok := files[wpath]
		if !ok {
			return nil, bad("the module folder %q has no %s, the module its manifest names", mod.Path, sm.Module)
		}
		if !bytes.HasPrefix(wasm, []byte("\x00asm")) {
			return nil, bad("%q is not a WebAssembly module", wpath)
		}
		if other, dup := names[sm.Name]; dup {
			return nil, bad("the modules in %q and %q are both the source %q; a plugin names each source once", other, mod.Path, sm.Name)
		}
		names[sm.Name] = mod.Path
		used[mpath], used[wpath] = true, true
		p.Sources = append(p.Sources, Source{Path: mod.Path, Package: &pack.Package{Manifest: sm, ManifestBytes: smb, Module: wasm}})
	}
	for _, n := range sortedPaths(files) {
		if !used[n] {
			return nil, bad("%q is neither the manifest, the signature nor a module's file", n)
		}
	}
	return p, nil
}

// ReadDir reads a plugin laid out in a folder: its loci-plugin.toml and,
// in each module's folder, a source package as loci source build leaves
// it (loci-source.toml and the module it names). A signature file
// beside the manifest is read too.
func ReadDir(dir string) (*Plugin, error) {
	mb, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if err != nil {
		return nil, fault.New(fault.InputInvalid, fmt.Sprintf("plugin: reading %s in %s: %v", ManifestFile, dir, err),
			"give a plugin's folder, with its "+ManifestFile+" and a folder per module")
	}
	m, err := ParseManifest(mb)
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{ManifestFile: mb}
	if sb, err := os.ReadFile(filepath.Join(dir, SignatureFile)); err == nil {
		files[SignatureFile] = sb
	}
	for _, mod := range m.Modules {
		pkg, err := pack.ReadDir(filepath.Join(dir, filepath.FromSlash(mod.Path)))
		if err != nil {
			return nil, fault.New(fault.InputInvalid, "module "+mod.Path+": "+fault.As(err).Msg, fault.As(err).Help)
		}
		files[mod.Path+"/"+pack.ManifestFile] = pkg.ManifestBytes
		files[mod.Path+"/"+pkg.Manifest.Module] = pkg.Module
	}
	return fromFiles(files)
}
