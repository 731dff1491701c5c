package sources

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/store"
)

// MaxExportBytes bounds an export file an export-file source reads (the
// spec's limit): a bigger one is refused.
const MaxExportBytes = 128 << 20

// MaxConversationBytes bounds one conversation of an export: a bigger one
// is listed as filtered ("too_large"), skipped and counted, never an
// error.
const MaxConversationBytes = 16 << 20

// ExportFileName is the file of an unzipped export the export-file
// sources read when their locator is a directory.
const ExportFileName = "conversations.json"

// ExportFormat is one chat app's data export as ExportFile reads it: the
// conversations.json file, a JSON array of conversations.
type ExportFormat struct {
	// Name is the source's name ("chatgpt-export").
	Name string
	// Version is the export format version the parser follows, shown by
	// GET /api/sources.
	Version string
	// Room is the room the conversations are filed in.
	Room string
	// App names the app in messages ("ChatGPT").
	App string
	// IDKeys are a conversation's keys that hold its id, the first
	// present wins; TimeKeys those holding its last update time (Unix
	// seconds or RFC 3339), the first present wins.
	IDKeys, TimeKeys []string
	// URL is a conversation's address in the app (its drawers' uri).
	URL func(id string) string
	// Parse reads one conversation (its JSON object). It must skip
	// records of types it does not know (counting them in
	// Session.Skipped) and fail only when raw is not a conversation.
	Parse func(raw []byte) (*Session, error)
}

// ExportFile is an export-file source: one document per conversation of a
// chat app's conversations.json (an array of conversations), the id the
// conversation's, the name its title. The locator is the absolute path of
// the file, or of the directory an export was unzipped into (holding
// conversations.json); the file's path is the source's identity.
//
// The file is read streaming (jsontext tokens over the top-level array;
// a conversation's contents are skipped, never held, while its id, update
// time and byte span are noted), and each conversation is read on its own
// from its span, so memory is bounded by MaxConversationBytes, never the
// file's size. A file over MaxExportBytes is refused.
//
// The cursor is the update time and id of the last conversation mined, and
// discovery goes in that order: a new export (the file replaced) lists only
// the conversations updated since; unchanged ones are not even read (and a
// full mine reads them to find them unchanged: store.FileDocument keeps
// them). A conversation the app has deleted stays unless prune is given.
type ExportFile struct {
	Format ExportFormat
	// spans keeps the spans of the last scan Read had to make; nil: every
	// such Read scans.
	spans *spanCache
}

// spanCache keeps the spans of the scan Read makes when a conversation is
// not where discovery found it (the export replaced during a mine), so
// that the conversations of a replaced file are found again with one
// scan, not one each; it scans again when the file's size or time
// changes.
type spanCache struct {
	mu    sync.Mutex
	path  string
	size  int64
	mtime time.Time
	spans map[string]exportEntry
	scans int // scans made, for tests
}

// find is the span of the conversation id in the file at path.
func (c *spanCache) find(ctx context.Context, e ExportFile, path, id string) (exportEntry, bool, error) {
	if c == nil {
		c = &spanCache{}
	}
	info, err := os.Stat(path)
	if err != nil {
		return exportEntry{}, false, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.spans == nil || c.path != path || c.size != info.Size() || !c.mtime.Equal(info.ModTime()) {
		entries, err := e.scan(ctx, path)
		if err != nil {
			return exportEntry{}, false, err
		}
		c.scans++
		c.path, c.size, c.mtime = path, info.Size(), info.ModTime()
		c.spans = make(map[string]exportEntry, len(entries))
		for _, en := range entries {
			c.spans[en.id] = en
		}
	}
	en, ok := c.spans[id]
	return en, ok, nil
}

// Info declares the options prune and since (RFC 3339 instant or
// YYYY-MM-DD: only conversations updated since then), no default locator
// (an export is where the person unzipped it), and the format version.
func (e ExportFile) Info() Info {
	return Info{Name: e.Format.Name, Format: e.Format.Version, Options: []string{OptionPrune, "since"},
		Capabilities: Capabilities{Incremental: true, Triggers: []string{"watch"}}}
}

// Resolve takes the absolute path of the export's conversations.json or
// of the directory holding it, and makes the file's clean absolute path
// the locator; a file over MaxExportBytes, or one that does not start as a
// JSON array, is refused.
func (e ExportFile) Resolve(locator string, opts map[string]string) (store.SourceIdentity, error) {
	if _, err := Prune(opts); err != nil {
		return store.SourceIdentity{}, err
	}
	if _, err := sinceOf(opts); err != nil {
		return store.SourceIdentity{}, err
	}
	if locator == "" {
		return store.SourceIdentity{}, fault.Invalid("locator", fmt.Sprintf("is required: the absolute path of the %s export's %s, or of the directory it was unzipped into", e.Format.App, ExportFileName))
	}
	if !filepath.IsAbs(locator) {
		return store.SourceIdentity{}, fault.Invalid("locator", fmt.Sprintf("%q is relative; an absolute path is required (the daemon reads it on its own machine)", locator))
	}
	p := filepath.Clean(locator)
	if strings.EqualFold(filepath.Ext(p), ".zip") {
		return store.SourceIdentity{}, fault.Invalid("locator", fmt.Sprintf("%q is the export's zip archive; unzip it and give the directory (or its %s)", p, ExportFileName))
	}
	info, err := os.Stat(p)
	if err != nil {
		return store.SourceIdentity{}, fault.Invalid("locator", fmt.Sprintf("%q cannot be read on the daemon's machine: %v", p, err))
	}
	if info.IsDir() {
		p = filepath.Join(p, ExportFileName)
		if info, err = os.Stat(p); err != nil {
			return store.SourceIdentity{}, fault.Invalid("locator", fmt.Sprintf("%q holds no %s: give the directory the %s export was unzipped into, or the file itself", filepath.Dir(p), ExportFileName, e.Format.App))
		}
	}
	if !info.Mode().IsRegular() {
		return store.SourceIdentity{}, fault.Invalid("locator", fmt.Sprintf("%q is not a regular file", p))
	}
	if err := e.checkFile(p, info.Size()); err != nil {
		return store.SourceIdentity{}, err
	}
	return store.SourceIdentity{Adapter: e.Format.Name, Locator: p}, nil
}

// checkFile refuses a file over MaxExportBytes and one whose first
// character is not a JSON array's.
func (e ExportFile) checkFile(p string, size int64) error {
	if size > MaxExportBytes {
		return fault.New(fault.InputInvalid,
			fmt.Sprintf("locator: %q is %s; the %s source reads export files of at most 128 MiB", p, humanBytes64(size), e.Format.Name),
			"split the file's conversations array into files of at most 128 MiB and mine each")
	}
	f, err := os.Open(p)
	if err != nil {
		return fault.Invalid("locator", fmt.Sprintf("%q cannot be read on the daemon's machine: %v", p, err))
	}
	defer f.Close()
	br := bufio.NewReader(f)
	for {
		c, err := br.ReadByte()
		if err != nil || c != ' ' && c != '\t' && c != '\r' && c != '\n' {
			if err != nil || c != '[' {
				return fault.Invalid("locator", fmt.Sprintf("%q is not a %s export's %s: it does not hold a JSON array of conversations", p, e.Format.App, ExportFileName))
			}
			return nil
		}
	}
}

func humanBytes64(n int64) string {
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

// exportCursor is the export-file sources' cursor: the update time (Unix
// nanoseconds) and id of the last conversation mined.
type exportCursor struct {
	Time int64  `json:"time_ns"`
	ID   string `json:"id"`
}

func (c exportCursor) before(o exportCursor) bool {
	return c.Time < o.Time || c.Time == o.Time && c.ID < o.ID
}

// ParseCursor checks a stored cursor.
func (e ExportFile) ParseCursor(raw json.RawMessage) error {
	_, err := e.parseCursor(raw)
	return err
}

func (e ExportFile) parseCursor(raw json.RawMessage) (*exportCursor, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var c exportCursor
	if err := dec.Decode(&c); err != nil || c.ID == "" {
		return nil, fault.New(fault.SourceCursorInvalid, fmt.Sprintf("the %s source's stored cursor is unreadable", e.Format.Name),
			"mine again with full, which reads everything again without duplicating")
	}
	return &c, nil
}

// exportEntry is one conversation as the scan found it: its id, update
// time and byte span in the file.
type exportEntry struct {
	id        string
	at        exportCursor
	off, size int64
}

// Discover lists the conversations updated past the cursor (and since
// the since option's instant), oldest update first (then by id); those
// over MaxConversationBytes are listed as filtered.
func (e ExportFile) Discover(ctx context.Context, run Run, cursor json.RawMessage) ([]Ref, error) {
	id, opts := run.ID, run.Options
	c, err := e.parseCursor(cursor)
	if err != nil {
		return nil, err
	}
	since, err := sinceOf(opts)
	if err != nil {
		return nil, err
	}
	entries, err := e.scan(ctx, id.Locator)
	if err != nil {
		return nil, err
	}
	refs := make([]Ref, 0, len(entries))
	for _, en := range entries {
		if c != nil && !c.before(en.at) || !since.IsZero() && en.at.Time < since.UnixNano() {
			continue
		}
		refs = append(refs, en.ref())
	}
	return refs, nil
}

// List lists every conversation of the file.
func (e ExportFile) List(ctx context.Context, run Run) ([]Ref, bool, error) {
	id := run.ID
	entries, err := e.scan(ctx, id.Locator)
	if err != nil {
		return nil, false, err
	}
	refs := make([]Ref, len(entries))
	for i, en := range entries {
		refs[i] = en.ref()
	}
	return refs, true, nil
}

func (en exportEntry) ref() Ref {
	cur, _ := json.Marshal(en.at)
	r := Ref{ID: en.id, Cursor: cur, Size: en.size, Offset: en.off}
	if en.size > MaxConversationBytes {
		r.Filtered = "too_large"
	}
	return r
}

// scan goes once through the file's top-level array, noting each
// conversation's id, update time and span and skipping everything else
// token by token (nothing of a conversation's contents is held). The
// entries come sorted by update time then id; an element without an id is
// left out, and an id found twice keeps its later update.
func (e ExportFile) scan(ctx context.Context, path string) ([]exportEntry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fault.Wrap(fault.SourceFailed, err, fmt.Sprintf("the %s export %q cannot be opened", e.Format.App, path),
			"check that the file is still there and readable by the daemon's user")
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, fault.Wrap(fault.SourceFailed, err, "the export cannot be read", "check the file")
	}
	if err := e.checkFile(path, info.Size()); err != nil {
		return nil, err
	}
	dec := jsontext.NewDecoder(bufio.NewReaderSize(io.LimitReader(f, MaxExportBytes+1), 1<<16),
		jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	broken := func(err error) error {
		return fault.Wrap(fault.SourceFailed, err,
			fmt.Sprintf("the %s export %q is not valid JSON near byte %d (truncated or damaged?)", e.Format.App, path, dec.InputOffset()),
			"download the export again and unzip it over the old one")
	}
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '[' {
		return nil, broken(err)
	}
	byID := map[string]int{}
	var out []exportEntry
	for n := 0; dec.PeekKind() != ']'; n++ {
		if n%64 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		start := dec.InputOffset()
		if dec.PeekKind() != '{' {
			if err := dec.SkipValue(); err != nil {
				return nil, broken(err)
			}
			continue
		}
		en, err := e.scanOne(dec)
		if err != nil {
			return nil, broken(err)
		}
		en.off, en.size = start, dec.InputOffset()-start
		if en.id == "" {
			continue
		}
		if k, ok := byID[en.id]; ok {
			if out[k].at.before(en.at) {
				out[k] = en
			}
			continue
		}
		byID[en.id] = len(out)
		out = append(out, en)
	}
	if _, err := dec.ReadToken(); err != nil {
		return nil, broken(err)
	}
	slices.SortFunc(out, func(a, b exportEntry) int {
		switch {
		case a.at.before(b.at):
			return -1
		case b.at.before(a.at):
			return 1
		}
		return 0
	})
	return out, nil
}

// scanOne reads one conversation object's id and time keys and skips the
// rest.
func (e ExportFile) scanOne(dec *jsontext.Decoder) (exportEntry, error) {
	var en exportEntry
	if _, err := dec.ReadToken(); err != nil {
		return en, err
	}
	ids := make([]string, len(e.Format.IDKeys))
	times := make([]int64, len(e.Format.TimeKeys))
	for dec.PeekKind() != '}' {
		tok, err := dec.ReadToken()
		if err != nil {
			return en, err
		}
		name := tok.String()
		if i := slices.Index(e.Format.IDKeys, name); i >= 0 && dec.PeekKind() == '"' {
			t, err := dec.ReadToken()
			if err != nil {
				return en, err
			}
			ids[i] = t.String()
			continue
		}
		if i := slices.Index(e.Format.TimeKeys, name); i >= 0 {
			v, err := dec.ReadValue()
			if err != nil {
				return en, err
			}
			times[i] = exportTime(v)
			continue
		}
		if err := dec.SkipValue(); err != nil {
			return en, err
		}
	}
	if _, err := dec.ReadToken(); err != nil {
		return en, err
	}
	for _, id := range ids {
		if id != "" {
			en.id = id
			break
		}
	}
	for _, t := range times {
		if t != 0 {
			en.at.Time = t
			break
		}
	}
	en.at.ID = en.id
	return en, nil
}

// exportTime reads a time value: Unix seconds (a number, ChatGPT's) or
// RFC 3339 (a string, Claude's), as Unix nanoseconds; 0 when absent or
// unreadable.
func exportTime(v []byte) int64 {
	t := exportInstant(v)
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// exportInstant reads a time value as exportTime does.
func exportInstant(v []byte) time.Time {
	v = bytes.TrimSpace(v)
	if len(v) == 0 || string(v) == "null" {
		return time.Time{}
	}
	if v[0] == '"' {
		var s string
		if json.Unmarshal(v, &s) != nil || s == "" {
			return time.Time{}
		}
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return time.Time{}
		}
		return t.UTC()
	}
	f, err := strconv.ParseFloat(string(v), 64)
	if err != nil || f <= 0 {
		return time.Time{}
	}
	sec := int64(f)
	return time.Unix(sec, int64((f-float64(sec))*1e9)/1000*1000).UTC()
}

// Read reads one conversation from its span (found again by its id when
// the file changed since discovery) and parses it.
func (e ExportFile) Read(ctx context.Context, run Run, ref Ref) (*Document, error) {
	id := run.ID
	if ref.Filtered != "" {
		return nil, &Filtered{Reason: ref.Filtered}
	}
	f, err := os.Open(id.Locator)
	if err != nil {
		return nil, &Filtered{Reason: "vanished"}
	}
	defer f.Close()
	raw, s := e.readAt(f, ref.Offset, ref.Size, ref.ID)
	if s == nil {
		// The file changed since discovery (or the ref came without its
		// span): find the conversation again.
		en, ok, err := e.spans.find(ctx, e, id.Locator, ref.ID)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, &Filtered{Reason: "vanished"}
		}
		if en.size > MaxConversationBytes {
			return nil, &Filtered{Reason: "too_large"}
		}
		if raw, s = e.readAt(f, en.off, en.size, ref.ID); s == nil {
			return nil, &Filtered{Reason: "not_a_conversation"}
		}
	}
	s.ID = ref.ID
	doc, err := TranscriptDocument(ref.ID, e.Format.Room, e.Format.URL(ref.ID), e.Format.Name+"/"+e.Format.Version, id.Locator, s)
	if err != nil {
		return nil, err
	}
	doc.Bytes = int64(len(raw))
	return doc, nil
}

// readAt reads and parses the conversation of the span, nil when the span
// does not hold the conversation of that id.
func (e ExportFile) readAt(f *os.File, off, size int64, want string) ([]byte, *Session) {
	if size <= 0 || size > MaxConversationBytes+64 {
		return nil, nil
	}
	raw := make([]byte, size)
	if _, err := f.ReadAt(raw, off); err != nil {
		return nil, nil
	}
	raw = bytes.TrimLeft(raw, " \t\r\n,")
	s, err := e.Format.Parse(raw)
	if err != nil || s.ID != want {
		return nil, nil
	}
	return raw, s
}

// addTurn appends a message's lines as a turn, or to the last turn when
// the same role spoke (a ChatGPT answer is several messages: text, a tool
// call, its result, more text): one turn per speaker's go.
func addTurn(s *Session, role string, at time.Time, lines []string) {
	text := strings.TrimSpace(strings.Join(lines, "\n"))
	if text == "" {
		return
	}
	if n := len(s.Turns); n > 0 && s.Turns[n-1].Role == role {
		s.Turns[n-1].Text += "\n" + text
		if s.Turns[n-1].Time.IsZero() {
			s.Turns[n-1].Time = at
		}
		return
	}
	s.Turns = append(s.Turns, Turn{Role: role, Time: at, Text: text})
}

// toolArgs renders a tool call's JSON input for its marker: a lone string
// field's value, else the compact JSON.
func toolArgs(raw json.RawMessage) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) == nil && len(m) == 1 {
		for _, v := range m {
			var s string
			if json.Unmarshal(v, &s) == nil {
				return s
			}
		}
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	if b.String() == "null" {
		return ""
	}
	return b.String()
}

// errNotConversation is a Parse failure: the JSON is not a conversation.
var errNotConversation = errors.New("not a conversation")
