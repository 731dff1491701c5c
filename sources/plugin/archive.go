package plugin

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/sources/pack"
)

// archiveHelp is the help of every archive error.
const archiveHelp = "this is not a plugin as loci plugin package writes it: package its folder again, or ask its author for the plugin"

func bad(format string, args ...any) error {
	return fault.New(fault.InputInvalid, "plugin: "+fault.Clip(fmt.Sprintf(format, args...), fault.MaxMsg-16), archiveHelp)
}

// epoch is every archive entry's time: the same plugin is the same bytes
// wherever and whenever it is made.
var epoch = time.Unix(0, 0).UTC()

// Write writes p as a deterministic .tar.gz: the manifest, the signature
// when there is one, then every module's files by path, with fixed
// times, owners and modes.
func (p *Plugin) Write(w io.Writer) error {
	zw, err := gzip.NewWriterLevel(w, gzip.BestCompression)
	if err != nil {
		return err
	}
	zw.ModTime = epoch
	tw := tar.NewWriter(zw)
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
	for _, n := range names {
		h := &tar.Header{Name: n, Mode: 0o644, Size: int64(len(files[n])), ModTime: epoch, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := tw.Write(files[n]); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return zw.Close()
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
	zr, err := gzip.NewReader(io.LimitReader(r, MaxArchiveBytes+1))
	if err != nil {
		return nil, bad("not a .tar.gz plugin: %v", err)
	}
	tr := tar.NewReader(zr)
	files := map[string][]byte{}
	var total int64
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, bad("the archive is damaged: %v", err)
		}
		name := strings.TrimPrefix(h.Name, "./")
		switch h.Typeflag {
		case tar.TypeReg:
		case tar.TypeDir:
			if !cleanPath(strings.TrimSuffix(name, "/")) {
				return nil, bad("the folder %q is not a clean relative path", h.Name)
			}
			continue
		case tar.TypeSymlink, tar.TypeLink:
			return nil, bad("%q is a link; a plugin holds only regular files", h.Name)
		default:
			return nil, bad("%q is not a regular file; a plugin holds only regular files", h.Name)
		}
		if !cleanPath(name) || path.Clean(name) != name {
			return nil, bad("%q is not a clean relative path (no '..', no absolute path, no hidden file)", h.Name)
		}
		if _, dup := files[name]; dup {
			return nil, bad("%q appears twice", name)
		}
		if total += h.Size; h.Size < 0 || total > MaxArchiveBytes {
			return nil, bad("the plugin unpacks to more than %d MiB", MaxArchiveBytes>>20)
		}
		b, err := io.ReadAll(io.LimitReader(tr, h.Size+1))
		if err != nil || int64(len(b)) != h.Size {
			return nil, bad("%q is truncated", name)
		}
		files[name] = b
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
