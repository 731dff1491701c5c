package sources

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/names"
	"github.com/loci-dev/loci/store"
)

// DirectoryName is the built-in directory source's name.
const DirectoryName = "directory"

// FilesRoom is the room the directory source files into.
const FilesRoom = "files"

// skippedDirs are the directory names the directory source never enters
// (besides every name starting with a dot).
var skippedDirs = map[string]bool{".git": true, "target": true, "node_modules": true, ".venv": true, "venv": true,
	"dist": true, "build": true, ".cache": true}

// SkippedDir reports a directory name the directory source never enters.
func SkippedDir(name string) bool { return skippedDirs[name] || strings.HasPrefix(name, ".") }

// Directory is the built-in source: one document per file under a root
// directory, named by its path under the root, discovered in order of
// change time (the later of modification and inode change time) then
// path.
type Directory struct {
	// MaxFileBytes bounds the files read (mining.max_file_bytes).
	MaxFileBytes int64
	// keep, when set, selects the files by their slash-separated path
	// under the root (a transcript source's session files).
	keep func(rel string) bool
}

// dirCursor is the directory source's cursor: the change time (Unix
// nanoseconds; see changeTime) and path of the last file mined. The JSON
// names are those of the cursors stored when it was the modification
// time: such a cursor reads as a change time, which is never earlier.
type dirCursor struct {
	MTime int64  `json:"mtime_ns"`
	Path  string `json:"path"`
}

// Info declares the options since (RFC 3339 instant or YYYY-MM-DD: only
// files modified since then), dir (a pattern over directories under the
// root; * matches any run of characters, / included) and prune (true:
// the drawers of files gone from the root are closed; see Lister).
func (Directory) Info() Info {
	return Info{Name: DirectoryName, Options: []string{"dir", OptionPrune, "since"},
		Capabilities: Capabilities{Incremental: true, Triggers: []string{"watch", "webhook"}}}
}

// Resolve makes the root absolute and clean (trailing separators, . and
// .., repeated separators); a dir option selects its own identity.
func (Directory) Resolve(locator string, opts map[string]string) (store.SourceIdentity, error) {
	if locator == "" {
		return store.SourceIdentity{}, fault.Invalid("path", "is required: the absolute path of a directory")
	}
	if !filepath.IsAbs(locator) {
		return store.SourceIdentity{}, fault.Invalid("path", fmt.Sprintf("%q is relative; an absolute path is required (the daemon reads it on its own machine)", locator))
	}
	root := filepath.Clean(locator)
	info, err := os.Stat(root)
	if err != nil {
		return store.SourceIdentity{}, fault.Invalid("path", fmt.Sprintf("%q cannot be read on the daemon's machine: %v", root, err))
	}
	if !info.IsDir() {
		return store.SourceIdentity{}, fault.Invalid("path", fmt.Sprintf("%q is not a directory", root))
	}
	if _, err := sinceOf(opts); err != nil {
		return store.SourceIdentity{}, err
	}
	if _, err := Prune(opts); err != nil {
		return store.SourceIdentity{}, err
	}
	loc := root
	if d := opts["dir"]; d != "" {
		p, err := cleanPattern(d)
		if err != nil {
			return store.SourceIdentity{}, err
		}
		loc += "#dir=" + p
	}
	return store.SourceIdentity{Adapter: DirectoryName, Locator: loc}, nil
}

// rootOf is the directory an identity's locator names.
func rootOf(id store.SourceIdentity) string {
	root, _, _ := strings.Cut(id.Locator, "#dir=")
	return root
}

func cleanPattern(p string) (string, error) {
	p = strings.Trim(path.Clean("/"+filepath.ToSlash(p)), "/")
	if p == "" || p == "." {
		return "", fault.Invalid("options", "dir is empty; give a directory under the root, or leave it out")
	}
	return p, nil
}

func sinceOf(opts map[string]string) (time.Time, error) {
	s := opts["since"]
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse("2006-01-02", s); err == nil {
		return t, nil
	}
	return time.Time{}, fault.Invalid("options", fmt.Sprintf("since %q is not an RFC 3339 instant or a date (YYYY-MM-DD)", s))
}

// dirMatcher matches a file's directory (relative, slash-separated) against
// the dir pattern: the directory or one of its parents matches.
func dirMatcher(pattern string) (func(dir string) bool, error) {
	if pattern == "" {
		return func(string) bool { return true }, nil
	}
	p, err := cleanPattern(pattern)
	if err != nil {
		return nil, err
	}
	re, err := regexp.Compile("^" + strings.ReplaceAll(regexp.QuoteMeta(p), `\*`, ".*") + "$")
	if err != nil {
		return nil, fault.Invalid("options", "dir is not a usable pattern")
	}
	return func(dir string) bool {
		for d := dir; d != "." && d != ""; d = path.Dir(d) {
			if re.MatchString(d) {
				return true
			}
		}
		return false
	}, nil
}

// ParseCursor checks a stored cursor.
func (Directory) ParseCursor(raw json.RawMessage) error {
	_, err := parseDirCursor(raw)
	return err
}

func parseDirCursor(raw json.RawMessage) (*dirCursor, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var c dirCursor
	if err := dec.Decode(&c); err != nil || c.MTime < 0 {
		return nil, fault.New(fault.SourceCursorInvalid, "the directory source's stored cursor is unreadable",
			"mine again with full, which reads everything again without duplicating")
	}
	return &c, nil
}

// Discover walks the root, skipping the directories SkippedDir names and
// every symlink, and lists the regular files past the cursor, oldest
// change first (then by path). Empty files and files over MaxFileBytes
// are listed as filtered.
func (d Directory) Discover(ctx context.Context, run Run, cursor json.RawMessage) ([]Ref, error) {
	refs, _, err := d.DiscoverSuspects(ctx, run, cursor)
	return refs, err
}

// DiscoverSuspects is Discover, and also lists (suspects) the files at or
// before the cursor that sit in a directory changed since it, or under
// one: a directory moved or renamed into the tree changes its own change
// time but not its files', which keep their old times. Files filtered
// without reading (empty, too large) are no suspects: they would not be
// filed. Without a cursor there are none.
func (d Directory) DiscoverSuspects(ctx context.Context, run Run, cursor json.RawMessage) (refs, suspects []Ref, err error) {
	id, opts := run.ID, run.Options
	cur, err := parseDirCursor(cursor)
	if err != nil {
		return nil, nil, err
	}
	since, err := sinceOf(opts)
	if err != nil {
		return nil, nil, err
	}
	changedSince := int64(-1)
	if cur != nil {
		changedSince = cur.MTime
	}
	var maybe []found
	refs, _, err = d.walk(ctx, id, opts, changedSince, func(f found) bool {
		if !since.IsZero() && f.mtime < since.UnixNano() {
			return false
		}
		if cur == nil || f.ctime > cur.MTime || (f.ctime == cur.MTime && f.rel > cur.Path) {
			return true
		}
		if f.dirChanged {
			maybe = append(maybe, f)
		}
		return false
	})
	if err != nil {
		return nil, nil, err
	}
	for _, r := range d.refs(maybe) {
		if r.Filtered == "" {
			suspects = append(suspects, r)
		}
	}
	return refs, suspects, nil
}

// List lists every file Discover would list without a cursor, whatever
// since says; complete is false when a directory under the root could not
// be read.
func (d Directory) List(ctx context.Context, run Run) ([]Ref, bool, error) {
	id, opts := run.ID, run.Options
	return d.walk(ctx, id, opts, -1, func(found) bool { return true })
}

// found is a file the walk met: its path under the root, modification
// and change times (Unix nanoseconds), size, and whether its directory,
// or one above it under the root, changed after the time the walk
// was given.
type found struct {
	rel        string
	mtime      int64
	ctime      int64
	size       int64
	dirChanged bool
}

// walk lists the regular files under the root that the dir option and
// keep select, in cursor order; complete is false when an entry under the
// root could not be read (it is left out). With changedSince >= 0, each
// file says whether its directory changed since then: the root's own
// change counts for the files directly in it (a file made, renamed or
// removed there changes it), a subdirectory's for its whole subtree (a
// tree moved in changes only its top).
func (d Directory) walk(ctx context.Context, id store.SourceIdentity, opts map[string]string, changedSince int64, keep func(found) bool) ([]Ref, bool, error) {
	match, err := dirMatcher(opts["dir"])
	if err != nil {
		return nil, false, err
	}
	root := rootOf(id)
	complete := true
	var files []found
	// changed holds the directories (by absolute path) changed since
	// changedSince, subtrees included, the root only for itself.
	changed := map[string]bool{}
	err = filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			if p == root {
				return err
			}
			complete = false
			return nil // an unreadable entry is left out
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if e.IsDir() {
			if p != root && SkippedDir(e.Name()) {
				return filepath.SkipDir
			}
			if changedSince >= 0 {
				parent := filepath.Dir(p)
				if p != root && parent != root && changed[parent] {
					changed[p] = true
				} else if info, err := e.Info(); err != nil || changeTime(info) > changedSince {
					changed[p] = true
				}
			}
			return nil
		}
		if !e.Type().IsRegular() { // symlinks, devices, sockets
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			complete = false
			return nil
		}
		rel = filepath.ToSlash(rel)
		if !match(path.Dir(rel)) || (d.keep != nil && !d.keep(rel)) {
			return nil
		}
		info, err := e.Info()
		if err != nil {
			complete = false
			return nil
		}
		f := found{rel: rel, mtime: info.ModTime().UnixNano(), ctime: changeTime(info), size: info.Size(),
			dirChanged: changedSince >= 0 && changed[filepath.Dir(p)]}
		if keep(f) {
			files = append(files, f)
		}
		return nil
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil, false, ctx.Err()
		}
		return nil, false, fault.Wrap(fault.SourceFailed, err, fmt.Sprintf("cannot read %s: %v", root, err), "check the directory exists and the daemon may read it")
	}
	return d.refs(files), complete, nil
}

// refs sorts files in cursor order and makes their refs.
func (d Directory) refs(files []found) []Ref {
	sort.Slice(files, func(i, j int) bool {
		if files[i].ctime != files[j].ctime {
			return files[i].ctime < files[j].ctime
		}
		return files[i].rel < files[j].rel
	})
	refs := make([]Ref, len(files))
	for i, f := range files {
		c, _ := json.Marshal(dirCursor{MTime: f.ctime, Path: f.rel})
		refs[i] = Ref{ID: f.rel, Cursor: c, Size: f.size}
		switch {
		case f.size == 0:
			refs[i].Filtered = "empty"
		case f.size > d.MaxFileBytes:
			refs[i].Filtered = "too_large"
		case names.Drawer(f.rel) != "":
			refs[i].Filtered = "unnameable"
		}
	}
	return refs
}

// Read reads one file: not UTF-8 or blank is filtered; a UTF-8 byte-order
// mark is dropped and line endings become \n. The whole file is one unit.
// Its metadata is its permission bits: a chmod files it again.
func (d Directory) Read(ctx context.Context, run Run, ref Ref) (*Document, error) {
	id := run.ID
	root := rootOf(id)
	abs := filepath.Join(root, filepath.FromSlash(ref.ID))
	info, err := os.Lstat(abs)
	if err != nil {
		return nil, &Filtered{Reason: "vanished"}
	}
	if !info.Mode().IsRegular() {
		return nil, &Filtered{Reason: "not_a_file"}
	}
	if info.Size() > d.MaxFileBytes {
		return nil, &Filtered{Reason: "too_large"}
	}
	b, err := os.ReadFile(abs)
	if err != nil {
		return nil, &Filtered{Reason: "unreadable"}
	}
	if int64(len(b)) > d.MaxFileBytes {
		return nil, &Filtered{Reason: "too_large"}
	}
	if !utf8.Valid(b) {
		return nil, &Filtered{Reason: "not_utf8"}
	}
	if bytes.IndexByte(b, 0) >= 0 {
		return nil, &Filtered{Reason: "binary"}
	}
	text := strings.TrimPrefix(string(b), "\uFEFF")
	text = strings.ReplaceAll(text, "\r\n", "\n")
	if strings.TrimSpace(text) == "" {
		return nil, &Filtered{Reason: "blank"}
	}
	mode := fmt.Sprintf("%04o", info.Mode().Perm())
	origin, _ := json.Marshal(map[string]string{"path": ref.ID, "mode": mode})
	return &Document{ID: ref.ID, Name: ref.ID, Room: FilesRoom, Kind: store.KindFile, URI: abs, Origin: origin, Meta: "mode=" + mode,
		Units: []string{text}, Bytes: int64(len(b))}, nil
}
