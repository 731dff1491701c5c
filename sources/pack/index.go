package pack

import (
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/Masterminds/semver/v3"

	"github.com/loci-dev/loci/fault"
)

// IndexFormat is the version of the registry index format this loci
// writes and reads. A reader refuses an index of another version rather
// than guess at fields it does not know.
const IndexFormat = 1

// IndexFile is an index's usual name, beside the archives it lists.
const IndexFile = "index.json"

// Index is a static source registry's index (index.json): every package
// archive the registry serves, by source and version. It is plain JSON a
// web server, a folder or a git repository serves as it is; the archives
// are files beside it.
type Index struct {
	// Version is the index format's version (IndexFormat).
	Version int `json:"version"`
	// Sources are the sources, by name.
	Sources []IndexSource `json:"sources"`
	// Plugins are the plugins, by id: the same release shape, each
	// archive a plugin (sources/plugin) rather than a source package.
	// Optional (format 1 grew it; an index without it lists none).
	Plugins []IndexPlugin `json:"plugins,omitempty"`
}

// IndexPlugin is one plugin in an index: its versions, newest first.
type IndexPlugin struct {
	ID          string         `json:"id"`
	Description string         `json:"description,omitempty"`
	Versions    []IndexRelease `json:"versions"`
}

// IndexSource is one source in an index: its versions, newest first.
type IndexSource struct {
	Name string `json:"name"`
	// Description is the newest version's manifest's.
	Description string         `json:"description,omitempty"`
	Versions    []IndexRelease `json:"versions"`
}

// IndexRelease is one version of a source: where its archive is and how
// to check it before reading it.
type IndexRelease struct {
	Version string `json:"version"`
	// Archive is the archive's path relative to the index's folder, with
	// "/" between folders (ValidArchivePath): it never leaves that folder.
	Archive string `json:"archive"`
	// SHA256 and Size are the archive file's, in hex and bytes.
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
	// Contract and Loci are the manifest's: a reader picks the newest
	// version that runs on it without downloading the others.
	Contract int    `json:"contract"`
	Loci     string `json:"loci,omitempty"`
	// Signature is an ed25519 signature over the archive's bytes, in
	// standard base64, by Key (a public key's text form,
	// FormatPublicKey). Both or neither; whether the key is trusted is
	// the reader's policy.
	Signature string `json:"signature,omitempty"`
	Key       string `json:"key,omitempty"`
	// Yanked: the publisher withdrew this version; a reader installs it
	// only when it is named (pinned).
	Yanked bool `json:"yanked,omitempty"`
}

// ValidArchivePath reports why p is not an archive path an index may
// name ("" when it is one): a path relative to the index's folder, with
// "/" between its folders, where no segment is empty, begins with a dot
// (so never "." or ".."), or holds a backslash, a colon (a scheme or a
// drive), "?", "#" or "%" (nothing a URL would read otherwise than a
// file system does); at most 512 bytes.
func ValidArchivePath(p string) string {
	switch {
	case p == "":
		return "an archive path is required"
	case len(p) > 512:
		return "an archive path is at most 512 bytes"
	case strings.HasPrefix(p, "/"):
		return fmt.Sprintf("%q is absolute; an archive's path is relative to the index's folder", p)
	case strings.ContainsAny(p, `\:?#%`):
		return fmt.Sprintf("%q holds a backslash, a colon, \"?\", \"#\" or \"%%\"; an archive's path is folders and a file name below the index's folder", p)
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == "" || strings.HasPrefix(seg, ".") {
			return fmt.Sprintf("%q has an empty segment or one beginning with a dot; an archive's path stays below the index's folder", p)
		}
		for _, r := range seg {
			if r < 0x20 || r == 0x7f {
				return fmt.Sprintf("%q holds a control character", p)
			}
		}
	}
	return ""
}

// IndexArchive is an archive file to index: its path relative to the
// index's folder ("/" between folders, ValidArchivePath) and its bytes.
type IndexArchive struct {
	File  string
	Bytes []byte
}

// IndexPluginInfo is what an index lists of a plugin archive: its
// manifest's id, version, description and loci requirement, and the
// highest contract among its source modules (a reader picks a version
// that runs on it without downloading it).
type IndexPluginInfo struct {
	ID, Version, Description, Loci string
	Contract                       int
}

// IndexOptions are BuildIndexWith's choices.
type IndexOptions struct {
	// Key signs each archive's bytes (nil: unsigned).
	Key ed25519.PrivateKey
	// Plugin reads an archive that is not a source package as a plugin
	// (sources/plugin's IndexInfo); nil: only source packages.
	Plugin func(archive []byte) (IndexPluginInfo, error)
	// Previous is the index being replaced (nil: none): a release it
	// marks yanked stays yanked when its kind, name, version and
	// SHA-256 are the same.
	Previous *Index
}

// BuildIndex is the index of source package archives, each signed by key
// when key is not nil: BuildIndexWith without plugins or a previous index.
func BuildIndex(archives []IndexArchive, key ed25519.PrivateKey) (*Index, error) {
	return BuildIndexWith(archives, IndexOptions{Key: key})
}

// BuildIndexWith is the index of archives. Every archive is read as a
// source package (ReadArchive) or, failing that and with o.Plugin, as a
// plugin; one that is neither, or a second archive of the same source (or
// plugin) and version, is loci::input::invalid naming the file. Releases
// o.Previous marks yanked stay yanked. The index is the same bytes for
// the same archives in any order: sources by name and plugins by id,
// versions newest first.
func BuildIndexWith(archives []IndexArchive, o IndexOptions) (*Index, error) {
	type rel struct {
		r    IndexRelease
		v    *semver.Version
		desc string
	}
	yanked := map[string]bool{} // kind name@version sha256
	if o.Previous != nil {
		for _, s := range o.Previous.Sources {
			for _, r := range s.Versions {
				yanked["source "+s.Name+"@"+r.Version+" "+r.SHA256] = r.Yanked
			}
		}
		for _, pl := range o.Previous.Plugins {
			for _, r := range pl.Versions {
				yanked["plugin "+pl.ID+"@"+r.Version+" "+r.SHA256] = r.Yanked
			}
		}
	}
	byName := map[string][]rel{}
	byID := map[string][]rel{}
	from := map[string]string{} // kind name@version: the file that holds it
	for _, a := range archives {
		if why := ValidArchivePath(a.File); why != "" {
			return nil, invalid("archive", why, "put the archives beside the index or in folders below it")
		}
		kind, name, desc := "source", "", ""
		r := IndexRelease{Archive: a.File, SHA256: Digest(a.Bytes), Size: int64(len(a.Bytes))}
		if p, err := ReadArchive(bytes.NewReader(a.Bytes)); err == nil {
			m := p.Manifest
			name, desc = m.Name, m.Description
			r.Version, r.Contract, r.Loci = m.Version, m.Contract, m.Loci
		} else if o.Plugin == nil {
			return nil, invalid("archive", fmt.Sprintf("%s: %s", a.File, fault.As(err).Msg), "package "+a.File+" again (loci source package), or move it out of the folder")
		} else if info, perr := o.Plugin(a.Bytes); perr == nil {
			kind, name, desc = "plugin", info.ID, info.Description
			r.Version, r.Contract, r.Loci = info.Version, info.Contract, info.Loci
		} else {
			return nil, invalid("archive", fmt.Sprintf("%s is neither a source package (%s) nor a plugin (%s)", a.File,
				fault.Clip(fault.As(err).Msg, fault.MaxMsg/5), fault.Clip(fault.As(perr).Msg, fault.MaxMsg/5)),
				"package "+a.File+" again (loci source package, or as a plugin), or move it out of the folder")
		}
		id := kind + " " + name + "@" + r.Version
		if f, dup := from[id]; dup {
			return nil, invalid("archive", fmt.Sprintf("%s and %s are both the %s %s %s: keep one", f, a.File, kind, name, r.Version), "move one of them out of the folder")
		}
		from[id] = a.File
		v, err := semver.StrictNewVersion(r.Version)
		if err != nil {
			return nil, invalid("archive", fmt.Sprintf("%s: %q is not a semantic version", a.File, r.Version), "package "+a.File+" again")
		}
		r.Yanked = yanked[id+" "+r.SHA256]
		if o.Key != nil {
			r.Signature = Sign(o.Key, a.Bytes)
			r.Key = FormatPublicKey(o.Key.Public().(ed25519.PublicKey))
		}
		if kind == "plugin" {
			byID[name] = append(byID[name], rel{r, v, desc})
		} else {
			byName[name] = append(byName[name], rel{r, v, desc})
		}
	}
	sorted := func(rels []rel) []IndexRelease {
		slices.SortFunc(rels, func(a, b rel) int {
			if c := b.v.Compare(a.v); c != 0 {
				return c
			}
			// Versions that differ only in build metadata rank
			// equal: their text orders them.
			return strings.Compare(a.r.Version, b.r.Version)
		})
		out := make([]IndexRelease, 0, len(rels))
		for _, r := range rels {
			out = append(out, r.r)
		}
		return out
	}
	ix := &Index{Version: IndexFormat, Sources: []IndexSource{}}
	for name, rels := range byName {
		vs := sorted(rels)
		ix.Sources = append(ix.Sources, IndexSource{Name: name, Description: rels[0].desc, Versions: vs})
	}
	for id, rels := range byID {
		vs := sorted(rels)
		ix.Plugins = append(ix.Plugins, IndexPlugin{ID: id, Description: rels[0].desc, Versions: vs})
	}
	slices.SortFunc(ix.Sources, func(a, b IndexSource) int { return strings.Compare(a.Name, b.Name) })
	slices.SortFunc(ix.Plugins, func(a, b IndexPlugin) int { return strings.Compare(a.ID, b.ID) })
	return ix, nil
}

// SetYanked marks every release NAME@VERSION names (a source's or a
// plugin's: ref is "name@version") yanked or not; a ref naming no release
// of the index is loci::input::invalid naming it.
func (ix *Index) SetYanked(ref string, yanked bool) error {
	name, version, ok := strings.Cut(ref, "@")
	if !ok || name == "" || version == "" {
		return invalid("yank", fmt.Sprintf("%q is not NAME@VERSION", ref), "name a release as NAME@VERSION, e.g. notes@1.2.0")
	}
	found := false
	set := func(rels []IndexRelease) {
		for i := range rels {
			if rels[i].Version == version {
				rels[i].Yanked, found = yanked, true
			}
		}
	}
	for _, s := range ix.Sources {
		if s.Name == name {
			set(s.Versions)
		}
	}
	for _, pl := range ix.Plugins {
		if pl.ID == name {
			set(pl.Versions)
		}
	}
	if !found {
		return invalid("yank", fmt.Sprintf("%s is not a source or plugin release in the folder", fault.Clip(ref, fault.MaxQuoted)),
			"name a release the index lists (its archive must be in the folder); nothing was written")
	}
	return nil
}

// Marshal is the index as it is written: indented JSON (">" written as
// itself, as people read a loci requirement) and a newline.
func (ix *Index) Marshal() []byte {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	e.SetIndent("", "  ")
	_ = e.Encode(ix)
	return b.Bytes()
}

// ParseIndex reads and checks an index: its format version, and every
// field of every release. Every problem is loci::input::invalid naming
// the field; an index of another format version says so.
func ParseIndex(b []byte) (*Index, error) {
	var ix Index
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&ix); err != nil {
		return nil, invalid("index", fmt.Sprintf("not a source registry index: %v", err), indexHelp)
	}
	if ix.Version != IndexFormat {
		return nil, invalid("index.version", fmt.Sprintf("the index is format %d; this loci reads format %d", ix.Version, IndexFormat), indexHelp)
	}
	names := map[string]bool{}
	for i, s := range ix.Sources {
		at := fmt.Sprintf("sources[%d]", i)
		if !nameRE.MatchString(s.Name) {
			return nil, invalid(at+".name", fmt.Sprintf("%q is not a source name", s.Name), indexHelp)
		}
		if names[s.Name] {
			return nil, invalid(at+".name", fmt.Sprintf("%s is listed twice", s.Name), indexHelp)
		}
		names[s.Name] = true
		if err := checkReleases(at, s.Name, s.Versions); err != nil {
			return nil, err
		}
	}
	ids := map[string]bool{}
	for i, pl := range ix.Plugins {
		at := fmt.Sprintf("plugins[%d]", i)
		if !nameRE.MatchString(pl.ID) {
			return nil, invalid(at+".id", fmt.Sprintf("%q is not a plugin id", pl.ID), indexHelp)
		}
		if ids[pl.ID] {
			return nil, invalid(at+".id", fmt.Sprintf("%s is listed twice", pl.ID), indexHelp)
		}
		ids[pl.ID] = true
		if err := checkReleases(at, pl.ID, pl.Versions); err != nil {
			return nil, err
		}
	}
	return &ix, nil
}

// checkReleases checks a source's or plugin's versions: at least one,
// each valid, none twice.
func checkReleases(at, name string, rels []IndexRelease) error {
	if len(rels) == 0 {
		return invalid(at+".versions", "a source or plugin lists at least one version", indexHelp)
	}
	versions := map[string]bool{}
	for j, r := range rels {
		if err := r.check(fmt.Sprintf("%s.versions[%d]", at, j)); err != nil {
			return err
		}
		if versions[r.Version] {
			return invalid(fmt.Sprintf("%s.versions[%d].version", at, j), fmt.Sprintf("%s %s is listed twice", name, r.Version), indexHelp)
		}
		versions[r.Version] = true
	}
	return nil
}

// check checks one release's fields (at names it in errors).
func (r IndexRelease) check(at string) error {
	bad := func(field, problem string) error { return invalid(at+"."+field, problem, indexHelp) }
	if _, err := semver.StrictNewVersion(r.Version); err != nil {
		return bad("version", fmt.Sprintf("%q is not a semantic version", r.Version))
	}
	if why := ValidArchivePath(r.Archive); why != "" {
		return bad("archive", why)
	}
	if h, err := hex.DecodeString(r.SHA256); err != nil || len(h) != 32 || strings.ToLower(r.SHA256) != r.SHA256 {
		return bad("sha256", fmt.Sprintf("%q is not a SHA-256 in lowercase hex", r.SHA256))
	}
	if r.Size <= 0 || r.Size > MaxArchiveBytes {
		return bad("size", fmt.Sprintf("%d is not an archive size (1 byte to %d MiB)", r.Size, MaxArchiveBytes>>20))
	}
	if r.Contract <= 0 {
		return bad("contract", "the contract version is required")
	}
	if r.Loci != "" {
		if _, err := semver.NewConstraint(r.Loci); err != nil {
			return bad("loci", fmt.Sprintf("%q is not a version constraint", r.Loci))
		}
	}
	if (r.Signature == "") != (r.Key == "") {
		return bad("signature", "a signature and its key come together")
	}
	if r.Key != "" {
		if _, err := ParsePublicKey(r.Key); err != nil {
			return bad("key", fault.As(err).Msg)
		}
	}
	return nil
}

// Signed reports whether the release carries a signature.
func (r IndexRelease) Signed() bool { return r.Signature != "" }

// Open checks archive (the bytes fetched for this release of source
// name) against the index and reads it: its size and SHA-256
// (loci::source::integrity when they differ), its signature when it has
// one (loci::source::untrusted when it does not verify), then the
// package, whose manifest must be this source, version and contract
// (loci::source::integrity when not). Whether the release must be signed,
// and by which keys, is the caller's policy.
func (r IndexRelease) Open(name string, archive []byte) (*Package, error) {
	if int64(len(archive)) != r.Size || Digest(archive) != r.SHA256 {
		return nil, fault.New(fault.SourceIntegrity,
			fmt.Sprintf("the archive of %s %s is not the one the index names (SHA-256 %s, %d bytes; got %s, %d bytes)",
				name, r.Version, r.SHA256, r.Size, Digest(archive), len(archive)),
			"the registry's files changed after its index was written: ask its publisher to index them again")
	}
	if r.Signed() {
		pub, err := ParsePublicKey(r.Key)
		if err != nil {
			return nil, err
		}
		if err := Verify(pub, archive, r.Signature); err != nil {
			return nil, err
		}
	}
	p, err := ReadArchive(bytes.NewReader(archive))
	if err != nil {
		return nil, err
	}
	if m := p.Manifest; m.Name != name || m.Version != r.Version || m.Contract != r.Contract {
		return nil, fault.New(fault.SourceIntegrity,
			fmt.Sprintf("the index lists %s %s (contract %d), but its archive holds %s %s (contract %d)", name, r.Version, r.Contract, m.Name, m.Version, m.Contract),
			"ask the registry's publisher to index its archives again")
	}
	return p, nil
}

// Compatible is why this release cannot run on lociVersion ("" when it
// can): Manifest.Compatible over the index's contract and loci
// requirement, so a reader picks a version without downloading it.
func (r IndexRelease) Compatible(lociVersion string) string {
	return (&Manifest{Contract: r.Contract, Loci: r.Loci}).Compatible(lociVersion)
}
