// Package packaging builds loci's release artefacts: the static binaries,
// the shell completions and manual pages generated from the cobra commands,
// the .tar.gz archives, and the .deb and .rpm packages (with nFPM as a
// library). cmd/locidist (make dist) drives it; its tests install the .deb.
package packaging

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/goreleaser/nfpm/v2"
	_ "github.com/goreleaser/nfpm/v2/deb" // registers the deb packager
	"github.com/goreleaser/nfpm/v2/files"
	_ "github.com/goreleaser/nfpm/v2/rpm" // registers the rpm packager
	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"

	"github.com/loci-dev/loci/cli"
	"github.com/loci-dev/loci/service"
)

// Unit is the systemd user unit the packages install as
// /usr/lib/systemd/user/loci.service: the unit `loci service install`
// would write for /usr/bin/loci serve (service.PackagedUnit, one
// template), so `loci service install` run by the packaged binary enables
// this one instead of writing its own.
var Unit = packagedUnit()

func packagedUnit() []byte {
	u, err := service.PackagedUnit(service.Spec{Binary: BinPath, Args: []string{"serve"}})
	if err != nil {
		panic(err) // a constant path: Render accepts it
	}
	return u
}

// Package metadata.
const (
	Name = "loci"
	// Maintainer is a placeholder until the owners name a contact: the
	// address is in .invalid (RFC 6761), so no mail goes to a mailbox
	// nobody chose.
	Maintainer  = "loci developers (placeholder: no maintainer named yet) <maintainer@loci.invalid>"
	Homepage    = "https://github.com/loci-dev/loci"
	Summary     = "memory daemon for AI agents"
	Description = `memory daemon for AI agents
 loci keeps memories for AI agents in one palace (wings > rooms > drawers of
 verbatim text) with a knowledge graph, search and a job queue, served by one
 long-running daemon over REST, MCP and a web dashboard. The package installs
 a systemd user unit; "loci service install" enables it for a user.
 No licence is stated yet: see /usr/share/doc/loci/copyright.`
	// License is the package's licence field. The repository has no
	// licence file yet: NOASSERTION (SPDX) says so rather than inventing
	// one. Change it here and in copyrightText when one is chosen.
	License = "NOASSERTION"
)

// Installed paths (Debian's and systemd's conventions; DECISIONS).
const (
	BinPath      = "/usr/bin/loci"
	UnitPath     = "/usr/lib/systemd/user/loci.service"
	BashPath     = "/usr/share/bash-completion/completions/loci"
	ZshDebPath   = "/usr/share/zsh/vendor-completions/_loci"
	ZshRPMPath   = "/usr/share/zsh/site-functions/_loci"
	FishPath     = "/usr/share/fish/vendor_completions.d/loci.fish"
	ManDir       = "/usr/share/man/man1"
	DocDir       = "/usr/share/doc/loci"
	CopyrightDst = DocDir + "/copyright"
	ThirdDst     = DocDir + "/THIRD_PARTY.md.gz"
)

// Build says what to build and from where.
type Build struct {
	// Repo is the repository's root (for ./cmd/loci and THIRD_PARTY.md).
	Repo string
	// Version and Commit are stamped into the binary (main.version,
	// main.commit).
	Version, Commit string
	// MTime is every file's time in archives and packages (the commit's
	// time, for reproducible output).
	MTime time.Time
}

// Binary builds a static (CGO_ENABLED=0), -trimpath, stripped loci for
// goos/goarch with the version and commit stamped, into out.
func (b Build) Binary(ctx context.Context, goos, goarch, out string) error {
	ldflags := "-s -w -X main.version=" + b.Version + " -X main.commit=" + b.Commit
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", ldflags, "-o", out, "./cmd/loci")
	cmd.Dir = b.Repo
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+goos, "GOARCH="+goarch)
	if msg, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s/%s: %v\n%s", goos, goarch, err, msg)
	}
	return nil
}

// Docs are the generated shell completions and manual pages.
type Docs struct {
	Bash, Zsh, Fish []byte
	// Man maps a page's file name (loci-serve.1.gz) to its gzipped text.
	Man map[string][]byte
}

// Generate renders the completions and manual pages from loci's cobra
// commands.
func (b Build) Generate() (Docs, error) {
	root := cli.Command(cli.Local{Version: b.Version, Commit: b.Commit})
	// cobra adds these at Execute; add them now so they are documented.
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	var d Docs
	var buf bytes.Buffer
	if err := root.GenBashCompletionV2(&buf, true); err != nil {
		return d, err
	}
	d.Bash = bytes.Clone(buf.Bytes())
	buf.Reset()
	if err := root.GenZshCompletion(&buf); err != nil {
		return d, err
	}
	d.Zsh = bytes.Clone(buf.Bytes())
	buf.Reset()
	if err := root.GenFishCompletion(&buf, true); err != nil {
		return d, err
	}
	d.Fish = bytes.Clone(buf.Bytes())
	man, err := b.manPages(root)
	if err != nil {
		return d, err
	}
	d.Man = man
	return d, nil
}

// manPages renders one page per command (cobra/doc) and gzips each.
func (b Build) manPages(root *cobra.Command) (map[string][]byte, error) {
	dir, err := os.MkdirTemp("", "loci-man-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	date := b.MTime
	header := &doc.GenManHeader{Title: "LOCI", Section: "1", Source: "loci " + b.Version, Manual: "loci manual", Date: &date}
	if err := doc.GenManTreeFromOpts(root, doc.GenManTreeOptions{Header: header, Path: dir, CommandSeparator: "-"}); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	pages := map[string][]byte{}
	for _, e := range entries {
		text, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		gz, err := gzipBytes(text, b.MTime)
		if err != nil {
			return nil, err
		}
		pages[e.Name()+".gz"] = gz
	}
	return pages, nil
}

// gzipBytes compresses with the best level, no name and a fixed time (like
// gzip -9n: reproducible).
func gzipBytes(p []byte, mtime time.Time) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	zw.ModTime = mtime
	if _, err := zw.Write(p); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// copyrightText is /usr/share/doc/loci/copyright, in Debian's
// machine-readable format.
func copyrightText() []byte {
	return []byte(`Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: loci
Upstream-Contact: ` + Maintainer + `
Source: ` + Homepage + `
Comment: The loci binary is statically linked: it carries the Go libraries,
 the data and the code named in THIRD_PARTY.md.gz beside this file, each
 under its own licence quoted there.

Files: *
Copyright: the loci developers
License: NOASSERTION
 The loci repository does not state a licence yet.
`)
}

// File is one file of a package or archive.
type File struct {
	Dst  string
	Mode os.FileMode
	Data []byte
}

// Files lists what a package of format "deb" or "rpm" installs, bin
// being the built loci.
func (b Build) Files(format string, bin []byte, d Docs) ([]File, error) {
	third, err := os.ReadFile(filepath.Join(b.Repo, "THIRD_PARTY.md"))
	if err != nil {
		return nil, err
	}
	thirdGz, err := gzipBytes(third, b.MTime)
	if err != nil {
		return nil, err
	}
	zsh := ZshDebPath
	if format == "rpm" {
		zsh = ZshRPMPath
	}
	out := []File{
		{BinPath, 0o755, bin},
		{UnitPath, 0o644, Unit},
		{BashPath, 0o644, d.Bash},
		{zsh, 0o644, d.Zsh},
		{FishPath, 0o644, d.Fish},
		{CopyrightDst, 0o644, copyrightText()},
		{ThirdDst, 0o644, thirdGz},
	}
	names := make([]string, 0, len(d.Man))
	for n := range d.Man {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		out = append(out, File{ManDir + "/" + n, 0o644, d.Man[n]})
	}
	return out, nil
}

// PackageVersion turns a stamped version (git describe: v0.1.0,
// v0.1.0-5-gabc1234-dirty, or a bare commit) into one dpkg and rpm accept:
// no leading v, "+" for "-" (a later build sorts after its tag), and
// 0.0.0+ before one that is not a tag's (no leading digits.digits).
func PackageVersion(v string) string {
	v = strings.TrimPrefix(v, "v")
	v = strings.ReplaceAll(v, "-", "+")
	if !tagVersion.MatchString(v) {
		// A bare commit (git describe --always before the first tag) may
		// be all digits: 7574787 would sort above every release.
		v = "0.0.0+" + v
	}
	return v
}

// tagVersion is a version from a tag: digits, a dot, digits.
var tagVersion = regexp.MustCompile(`^[0-9]+\.[0-9]+`)

// Package writes the format ("deb" or "rpm") package of binary (built for
// linux/goarch) to w.
// It returns the conventional file name.
func (b Build) Package(format, goarch string, binary []byte, d Docs, w io.Writer) (string, error) {
	fs, err := b.Files(format, binary, d)
	if err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp("", "loci-pkg-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	var contents files.Contents
	for i, f := range fs {
		src := filepath.Join(tmp, fmt.Sprint(i))
		if err := os.WriteFile(src, f.Data, f.Mode); err != nil {
			return "", err
		}
		contents = append(contents, &files.Content{Source: src, Destination: f.Dst,
			FileInfo: &files.ContentFileInfo{Owner: "root", Group: "root", Mode: f.Mode, MTime: b.MTime}})
	}
	info := nfpm.WithDefaults(&nfpm.Info{
		Name: Name, Arch: goarch, Platform: "linux",
		Version: PackageVersion(b.Version), VersionSchema: "none", Release: "1",
		Section: "utils", Priority: "optional",
		Maintainer: Maintainer, Vendor: "loci", Homepage: Homepage, License: License,
		Description: Description, MTime: b.MTime, DisableGlobbing: true,
		Overridables: nfpm.Overridables{
			Contents: contents,
			Umask:    0o022,
			// The bash completion uses bash-completion's functions.
			Suggests: []string{"bash-completion"},
			RPM:      nfpm.RPM{Summary: Summary, Group: "Applications/System", Compression: "gzip"},
			Deb:      nfpm.Deb{Compression: "gzip"},
		},
	})
	if err := nfpm.PrepareForPackager(info, format); err != nil {
		return "", err
	}
	p, err := nfpm.Get(format)
	if err != nil {
		return "", err
	}
	if err := p.Package(info, w); err != nil {
		return "", fmt.Errorf("%s package: %w", format, err)
	}
	return p.ConventionalFileName(info), nil
}

// ArchiveName is the base name of the release archive for goos/goarch.
func (b Build) ArchiveName(goos, goarch string) string {
	return fmt.Sprintf("loci_%s_%s_%s", strings.TrimPrefix(b.Version, "v"), goos, goarch)
}

// Archive writes the .tar.gz release archive of binary (built for
// goos/goarch): one folder
// holding the binary, README.md, THIRD_PARTY.md, the completions, the
// manual pages and (Linux) the systemd user unit.
func (b Build) Archive(goos, goarch string, binary []byte, d Docs, w io.Writer) error {
	fs, err := b.Files("deb", binary, d)
	if err != nil {
		return err
	}
	readme, err := os.ReadFile(filepath.Join(b.Repo, "README.md"))
	if err != nil {
		return err
	}
	third, err := os.ReadFile(filepath.Join(b.Repo, "THIRD_PARTY.md"))
	if err != nil {
		return err
	}
	top := b.ArchiveName(goos, goarch) + "/"
	entries := []File{{"loci", 0o755, fs[0].Data}, {"README.md", 0o644, readme}, {"THIRD_PARTY.md", 0o644, third},
		{"completions/loci.bash", 0o644, d.Bash}, {"completions/_loci", 0o644, d.Zsh}, {"completions/loci.fish", 0o644, d.Fish}}
	if goos == "linux" {
		entries = append(entries, File{"systemd/loci.service", 0o644, Unit})
	}
	for _, f := range fs {
		if strings.HasPrefix(f.Dst, ManDir+"/") {
			entries = append(entries, File{"man/man1/" + filepath.Base(f.Dst), 0o644, f.Data})
		}
	}
	zw, err := gzip.NewWriterLevel(w, gzip.BestCompression)
	if err != nil {
		return err
	}
	zw.ModTime = b.MTime
	tw := tar.NewWriter(zw)
	dirs := map[string]bool{}
	for _, f := range entries {
		for dir := filepath.Dir(top + f.Dst); dir != "." && !dirs[dir]; dir = filepath.Dir(dir) {
			dirs[dir] = true
		}
	}
	sorted := make([]string, 0, len(dirs))
	for dir := range dirs {
		sorted = append(sorted, dir)
	}
	sort.Strings(sorted)
	for _, dir := range sorted {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: dir + "/", Mode: 0o755, ModTime: b.MTime, Format: tar.FormatPAX}); err != nil {
			return err
		}
	}
	for _, f := range entries {
		hdr := &tar.Header{Typeflag: tar.TypeReg, Name: top + f.Dst, Mode: int64(f.Mode), Size: int64(len(f.Data)), ModTime: b.MTime, Format: tar.FormatPAX}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if _, err := tw.Write(f.Data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return zw.Close()
}
