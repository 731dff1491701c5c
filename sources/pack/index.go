package pack

import (
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
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
	// Archive is the archive's file name relative to the index (no
	// folder: the archives sit beside it).
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
}

// IndexArchive is an archive file to index: its name relative to the
// index and its bytes.
type IndexArchive struct {
	File  string
	Bytes []byte
}

// BuildIndex is the index of archives, each signed by key when key is
// not nil. Every archive is read (ReadArchive); one that is not a
// package, or a second archive of the same source and version, is
// loci::input::invalid naming the file. The index is the same bytes for
// the same archives in any order: sources by name, versions newest first.
func BuildIndex(archives []IndexArchive, key ed25519.PrivateKey) (*Index, error) {
	type rel struct {
		r    IndexRelease
		v    *semver.Version
		desc string
	}
	byName := map[string][]rel{}
	from := map[string]string{} // name@version: the file that holds it
	for _, a := range archives {
		if a.File != filepath.Base(a.File) || a.File == "." || a.File == ".." {
			return nil, invalid("archive", fmt.Sprintf("%q is not a file name beside the index", a.File), "put the archives beside the index")
		}
		p, err := ReadArchive(bytes.NewReader(a.Bytes))
		if err != nil {
			fe := fault.As(err)
			return nil, invalid("archive", fmt.Sprintf("%s: %s", a.File, fe.Msg), "package "+a.File+" again (loci source package), or move it out of the folder")
		}
		m := p.Manifest
		id := m.Name + "@" + m.Version
		if f, dup := from[id]; dup {
			return nil, invalid("archive", fmt.Sprintf("%s and %s are both %s %s: keep one", f, a.File, m.Name, m.Version), "move one of them out of the folder")
		}
		from[id] = a.File
		r := IndexRelease{Version: m.Version, Archive: a.File, SHA256: Digest(a.Bytes), Size: int64(len(a.Bytes)),
			Contract: m.Contract, Loci: m.Loci}
		if key != nil {
			r.Signature = Sign(key, a.Bytes)
			r.Key = FormatPublicKey(key.Public().(ed25519.PublicKey))
		}
		byName[m.Name] = append(byName[m.Name], rel{r, semver.MustParse(m.Version), m.Description})
	}
	ix := &Index{Version: IndexFormat, Sources: []IndexSource{}}
	for name, rels := range byName {
		slices.SortFunc(rels, func(a, b rel) int {
			if c := b.v.Compare(a.v); c != 0 {
				return c
			}
			// Versions that differ only in build metadata rank
			// equal: their text orders them.
			return strings.Compare(a.r.Version, b.r.Version)
		})
		s := IndexSource{Name: name, Description: rels[0].desc}
		for _, r := range rels {
			s.Versions = append(s.Versions, r.r)
		}
		ix.Sources = append(ix.Sources, s)
	}
	slices.SortFunc(ix.Sources, func(a, b IndexSource) int { return strings.Compare(a.Name, b.Name) })
	return ix, nil
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
		if len(s.Versions) == 0 {
			return nil, invalid(at+".versions", "a source lists at least one version", indexHelp)
		}
		versions := map[string]bool{}
		for j, r := range s.Versions {
			if err := r.check(fmt.Sprintf("%s.versions[%d]", at, j)); err != nil {
				return nil, err
			}
			if versions[r.Version] {
				return nil, invalid(fmt.Sprintf("%s.versions[%d].version", at, j), fmt.Sprintf("%s %s is listed twice", s.Name, r.Version), indexHelp)
			}
			versions[r.Version] = true
		}
	}
	return &ix, nil
}

// check checks one release's fields (at names it in errors).
func (r IndexRelease) check(at string) error {
	bad := func(field, problem string) error { return invalid(at+"."+field, problem, indexHelp) }
	if _, err := semver.StrictNewVersion(r.Version); err != nil {
		return bad("version", fmt.Sprintf("%q is not a semantic version", r.Version))
	}
	if r.Archive == "" || r.Archive != filepath.Base(r.Archive) || strings.HasPrefix(r.Archive, ".") || strings.ContainsAny(r.Archive, `/\`) {
		return bad("archive", fmt.Sprintf("%q is not a file name beside the index", r.Archive))
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
