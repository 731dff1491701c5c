package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/loci-dev/loci/sources/bundled/guests/internal/wire"
	"github.com/loci-dev/loci/sources/contract"
)

// The built-in directory source's constants this source mirrors.
const (
	// defaultMaxFileBytes is mining.max_file_bytes' default: files over
	// it are filtered (the max_file_bytes option changes it).
	defaultMaxFileBytes = 2 << 20
	// maxDrawerName is the longest drawer name, in bytes (names.MaxDrawerName).
	maxDrawerName = 1024
	// filesRoom is the room documents go to.
	filesRoom = "files"
	// kindFile is the drawers' source.kind.
	kindFile = "file"
	// optMaxFileBytes is the one option.
	optMaxFileBytes = "max_file_bytes"
)

// skippedDirs are the directory names never entered, besides every name
// starting with a dot (sources.SkippedDir).
var skippedDirs = map[string]bool{".git": true, "target": true, "node_modules": true, ".venv": true, "venv": true,
	"dist": true, "build": true, ".cache": true}

func skippedDir(name string) bool { return skippedDirs[name] || strings.HasPrefix(name, ".") }

// source is the contract.Handler.
type source struct{}

// cursor is where discovery resumes: the change time (Unix nanoseconds)
// and path of the last file listed. Both fields are required: a cursor
// of another shape is not this source's.
type cursor struct {
	CTime *int64  `json:"ctime_ns"`
	Path  *string `json:"path"`
}

func parseCursor(raw json.RawMessage) (*cursor, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var c cursor
	if err := dec.Decode(&c); err != nil || dec.More() || c.CTime == nil || c.Path == nil || *c.CTime < 0 {
		return nil, contract.Errorf(contract.ErrCursor, "the cursor is not one the directory-wasm source wrote; mine again with full, which reads everything again without duplicating")
	}
	return &c, nil
}

// root checks a locator: an absolute path, cleaned, of a directory.
func root(locator string) (string, error) {
	if locator == "" {
		return "", contract.Errorf(contract.ErrInvalid, "the locator is required: the absolute path of a directory")
	}
	if !path.IsAbs(locator) {
		return "", contract.Errorf(contract.ErrInvalid, "%q is relative; an absolute path is required (the daemon reads it on its own machine)", locator)
	}
	r := path.Clean(locator)
	info, err := os.Stat(r)
	if err != nil {
		return "", contract.Errorf(contract.ErrInvalid, "%q cannot be read: %v", r, err)
	}
	if !info.IsDir() {
		return "", contract.Errorf(contract.ErrInvalid, "%q is not a directory", r)
	}
	return r, nil
}

// maxFileBytes reads the options: max_file_bytes, a positive number of
// bytes, and nothing else.
func maxFileBytes(opts map[string]string) (int64, error) {
	for k := range opts {
		if k != optMaxFileBytes {
			return 0, contract.Errorf(contract.ErrInvalid, "unknown option %q; the directory-wasm source takes %s only", k, optMaxFileBytes)
		}
	}
	s, ok := opts[optMaxFileBytes]
	if !ok || s == "" {
		return defaultMaxFileBytes, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, contract.Errorf(contract.ErrInvalid, "%s %q is not a positive number of bytes", optMaxFileBytes, s)
	}
	return n, nil
}

// Resolve checks the locator and the options; the identity is the
// cleaned absolute path.
func (source) Resolve(req *contract.Request) (*contract.Answer, error) {
	r, err := root(req.Locator)
	if err != nil {
		return nil, err
	}
	if _, err := maxFileBytes(req.Options); err != nil {
		return nil, err
	}
	return &contract.Answer{Identity: &contract.Identity{Locator: r}}, nil
}

// file is a file the walk met.
type file struct {
	rel   string
	ctime int64
	size  int64
}

// Discover walks the locator once and lists the files past the cursor in
// cursor order, at most Limit of them.
func (source) Discover(req *contract.Request) (*contract.Answer, error) {
	cur, err := parseCursor(req.Cursor)
	if err != nil {
		return nil, err
	}
	r, err := root(req.Locator)
	if err != nil {
		return nil, err
	}
	limit, err := maxFileBytes(req.Options)
	if err != nil {
		return nil, err
	}
	var files []file
	err = filepath.WalkDir(r, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			if p == r {
				return err
			}
			return nil // an unreadable entry is left out
		}
		if e.IsDir() {
			if p != r && skippedDir(e.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if !e.Type().IsRegular() { // symlinks, devices, sockets
			return nil
		}
		info, err := e.Info()
		if err != nil {
			return nil
		}
		rel := strings.TrimPrefix(p[len(r):], "/")
		f := file{rel: rel, ctime: changeTime(info), size: info.Size()}
		if cur == nil || f.ctime > *cur.CTime || (f.ctime == *cur.CTime && f.rel > *cur.Path) {
			files = append(files, f)
		}
		return nil
	})
	if err != nil {
		return nil, contract.Errorf(contract.ErrFailed, "cannot read %s: %v", r, err)
	}
	slices.SortFunc(files, func(a, b file) int {
		if a.ctime != b.ctime {
			if a.ctime < b.ctime {
				return -1
			}
			return 1
		}
		return strings.Compare(a.rel, b.rel)
	})
	a := &contract.Answer{Items: []contract.Item{}}
	if req.Limit > 0 && len(files) > req.Limit {
		files, a.More = files[:req.Limit], true
	}
	for _, f := range files {
		// The cursor's JSON by hand: json.Marshal per file is most of a
		// walk's cost in WebAssembly.
		c := strconv.AppendInt(append(make([]byte, 0, 32+len(f.rel)), `{"ctime_ns":`...), f.ctime, 10)
		c = append(wire.AppendString(append(c, `,"path":`...), f.rel), '}')
		it := contract.Item{ID: f.rel, Cursor: c, Size: f.size}
		switch {
		case f.size == 0:
			it.Filtered = "empty"
		case f.size > limit:
			it.Filtered = "too_large"
		case !nameable(f.rel):
			it.Filtered = "unnameable"
		}
		a.Items = append(a.Items, it)
	}
	return a, nil
}

// Read reads every item asked, one result each in order.
func (source) Read(req *contract.Request) (*contract.Answer, error) {
	r, err := root(req.Locator)
	if err != nil {
		return nil, err
	}
	limit, err := maxFileBytes(req.Options)
	if err != nil {
		return nil, err
	}
	a := &contract.Answer{Documents: make([]contract.ReadResult, 0, len(req.Items))}
	for _, it := range req.Items {
		doc, err := readFile(r, it.ID, limit)
		res := contract.ReadResult{ID: it.ID, Document: doc}
		if err != nil {
			res.Error = err
		}
		a.Documents = append(a.Documents, res)
	}
	return a, nil
}

// readFile reads one file as one unit, or says why not.
func readFile(root, id string, limit int64) (*contract.Document, *contract.Error) {
	filtered := func(reason string) *contract.Error {
		return &contract.Error{Kind: contract.ErrFiltered, Message: reason}
	}
	if id == "" || path.IsAbs(id) || path.Clean(id) != id || id == ".." || strings.HasPrefix(id, "../") {
		return nil, contract.Errorf(contract.ErrNotFound, "%q is not a path under %s", id, root)
	}
	abs := path.Join(root, id)
	info, err := os.Lstat(abs)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, contract.Errorf(contract.ErrNotFound, "%s is gone", id)
		}
		return nil, filtered("unreadable")
	}
	if !info.Mode().IsRegular() {
		return nil, filtered("not_a_file")
	}
	if info.Size() > limit {
		return nil, filtered("too_large")
	}
	b, err := os.ReadFile(abs)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, contract.Errorf(contract.ErrNotFound, "%s is gone", id)
		}
		return nil, filtered("unreadable")
	}
	if int64(len(b)) > limit {
		return nil, filtered("too_large")
	}
	if !utf8.Valid(b) {
		return nil, filtered("not_utf8")
	}
	if bytes.IndexByte(b, 0) >= 0 {
		return nil, filtered("binary")
	}
	text := strings.TrimPrefix(string(b), "\uFEFF")
	text = strings.ReplaceAll(text, "\r\n", "\n")
	if strings.TrimSpace(text) == "" {
		return nil, filtered("blank")
	}
	origin := append(wire.AppendString([]byte(`{"path":`), id), '}')
	return &contract.Document{Name: id, Room: filesRoom, Kind: kindFile, URI: abs, Origin: origin,
		Units: []string{text}, Bytes: int64(len(b))}, nil
}

// nameable mirrors names.Drawer: a drawer may be called by the path.
func nameable(s string) bool {
	switch {
	case s == "", !utf8.ValidString(s), len(s) > maxDrawerName, strings.TrimSpace(s) != s,
		strings.IndexFunc(s, unicode.IsControl) >= 0,
		strings.IndexFunc(s, func(r rune) bool { return unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp) }) >= 0,
		looksLikeUUID(s):
		return false
	}
	for _, seg := range strings.Split(s, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return false
		}
	}
	return true
}

// looksLikeUUID mirrors names.LooksLikeUUID (github.com/google/uuid's
// Parse): the 36-character form, with urn:uuid: or braces, or 32 hex
// digits.
func looksLikeUUID(s string) bool {
	switch len(s) {
	case 36:
	case 45:
		if !strings.EqualFold(s[:9], "urn:uuid:") {
			return false
		}
		s = s[9:]
	case 38:
		if s[0] != '{' || s[37] != '}' {
			return false
		}
		s = s[1:37]
	case 32:
		return hexOnly(s)
	default:
		return false
	}
	if s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return false
	}
	return hexOnly(strings.ReplaceAll(s, "-", "")) && len(strings.ReplaceAll(s, "-", "")) == 32
}

func hexOnly(s string) bool {
	for _, c := range s {
		if !strings.ContainsRune("0123456789abcdefABCDEF", c) {
			return false
		}
	}
	return true
}
