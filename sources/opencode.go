package sources

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/ncruces/go-sqlite3"

	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/store"
)

// OpenCodeName is the opencode source's name.
const OpenCodeName = "opencode"

// OpenCodeFormat is the storage the opencode source follows: the SQLite
// database OpenCode keeps its sessions in (opencode.db under its data
// directory; tables session, message and part, each message and part a
// JSON document in its data column). Checked against OpenCode 1.18.33,
// whose sessions' version column says so; older versions kept the same
// JSON documents as files under storage/, which this source does not read.
const OpenCodeFormat = "sqlite-1"

// openCodeDB is the database's file name in OpenCode's data directory
// (OpenCode's "latest" channel; other channels write opencode-<channel>.db,
// which a locator may name directly).
const openCodeDB = "opencode.db"

// openCodeSettle is how long after a session's last change discovery keeps
// listing it again: a write OpenCode stamped earlier than one already seen
// may commit later, and reading an unchanged session again files nothing.
const openCodeSettle = 2 * time.Second

// OpenCode is the transcript source of OpenCode's stored sessions: one
// document per session in its SQLite database, read read-only (the
// database may be written by a running OpenCode meanwhile: SQLite's
// write-ahead log and locks keep each read consistent). A session that
// gained messages is read again and files only its new turns
// (store.FileDocument keeps the unchanged chunks). A sub-agent's session
// (one with a parent) is its own document, its turns marked as a
// sub-agent's.
type OpenCode struct {
	// Home is the home directory the default location is under ("": the
	// daemon user's, or $XDG_DATA_HOME when set).
	Home string
	// MaxBytes bounds the JSON of one session read (0: MaxSessionBytes);
	// a larger session is filtered "too_large".
	MaxBytes int64
}

// Info declares the options project, prune and since, and the storage
// version.
func (o OpenCode) Info() Info {
	return Info{Name: OpenCodeName, Format: OpenCodeFormat, Options: []string{OptionProject, OptionPrune, "since"},
		Capabilities: Capabilities{Incremental: true, Triggers: []string{"watch"}}, DefaultLocator: "~/.local/share/opencode"}
}

// dataDir is OpenCode's data directory: $XDG_DATA_HOME/opencode or
// ~/.local/share/opencode.
func (o OpenCode) dataDir() (string, error) {
	if o.Home == "" {
		if x := os.Getenv("XDG_DATA_HOME"); filepath.IsAbs(x) {
			return filepath.Join(x, "opencode"), nil
		}
	}
	home := o.Home
	if home == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			return "", err
		}
		home = h
	}
	return filepath.Join(home, ".local", "share", "opencode"), nil
}

// Resolve takes OpenCode's data directory ("" or "~" forms mean its
// standard location under the daemon user's home) or a database file in
// it; the identity names the database file. A project option (an absolute
// path) selects its own identity.
func (o OpenCode) Resolve(locator string, opts map[string]string) (store.SourceIdentity, error) {
	switch {
	case locator == "" || locator == "~" || locator == "~/.local/share/opencode":
		dir, err := o.dataDir()
		if err != nil {
			return store.SourceIdentity{}, fault.Invalid("locator", "the daemon's user has no home directory; give the absolute path of OpenCode's data directory")
		}
		locator = dir
	case strings.HasPrefix(locator, "~/"):
		home := o.Home
		if home == "" {
			h, err := os.UserHomeDir()
			if err != nil {
				return store.SourceIdentity{}, fault.Invalid("locator", "the daemon's user has no home directory; give the absolute path of OpenCode's data directory")
			}
			home = h
		}
		locator = filepath.Join(home, locator[2:])
	}
	if !filepath.IsAbs(locator) {
		return store.SourceIdentity{}, fault.Invalid("path", fmt.Sprintf("%q is relative; give the absolute path of OpenCode's data directory or its database", locator))
	}
	db := filepath.Clean(locator)
	info, err := os.Stat(db)
	if err != nil {
		return store.SourceIdentity{}, fault.Invalid("path", fmt.Sprintf("%q cannot be read on the daemon's machine: %v", db, err))
	}
	if info.IsDir() {
		db = filepath.Join(db, openCodeDB)
		if info, err = os.Stat(db); err != nil {
			return store.SourceIdentity{}, fault.Invalid("path", fmt.Sprintf("%q holds no OpenCode database (%s): has OpenCode run as this user? Older OpenCode versions kept JSON files under storage/, which this source does not read", filepath.Dir(db), openCodeDB))
		}
	}
	if !info.Mode().IsRegular() {
		return store.SourceIdentity{}, fault.Invalid("path", fmt.Sprintf("%q is not a file", db))
	}
	if _, err := sinceOf(opts); err != nil {
		return store.SourceIdentity{}, err
	}
	if _, err := Prune(opts); err != nil {
		return store.SourceIdentity{}, err
	}
	proj, err := projectOf(opts)
	if err != nil {
		return store.SourceIdentity{}, err
	}
	loc := db
	if proj != "" {
		loc += projectSep + proj
	}
	return store.SourceIdentity{Adapter: OpenCodeName, Locator: loc}, nil
}

// openCodeCursor is the source's cursor: the last change (Unix
// milliseconds, OpenCode's own clock) and id of the last session listed.
type openCodeCursor struct {
	Updated int64  `json:"updated_ms"`
	ID      string `json:"session"`
}

func parseOpenCodeCursor(raw json.RawMessage) (*openCodeCursor, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var c openCodeCursor
	if err := dec.Decode(&c); err != nil || c.Updated < 0 {
		return nil, fault.New(fault.SourceCursorInvalid, "the opencode source's stored cursor is unreadable",
			"mine again with full, which reads everything again without duplicating")
	}
	return &c, nil
}

// ParseCursor checks a stored cursor.
func (OpenCode) ParseCursor(raw json.RawMessage) error {
	_, err := parseOpenCodeCursor(raw)
	return err
}

// openCodeOpen opens the database read-only: never created, never
// written, a busy writer waited for.
func openCodeOpen(ctx context.Context, path string) (*sqlite3.Conn, error) {
	u := url.URL{Scheme: "file", Path: path, RawQuery: "mode=ro"}
	c, err := sqlite3.OpenFlags(u.String(), sqlite3.OPEN_READONLY|sqlite3.OPEN_URI)
	if err != nil {
		return nil, err
	}
	if err := c.BusyTimeout(5 * time.Second); err != nil {
		c.Close()
		return nil, err
	}
	c.SetInterrupt(ctx)
	return c, nil
}

// openCodeIdentity splits an identity's locator into the database path
// and the project option.
func openCodeIdentity(id store.SourceIdentity) (db, proj string) {
	db, proj, _ = strings.Cut(id.Locator, projectSep)
	return db, proj
}

// openCodeSession is a session row as discovery sees it.
type openCodeSession struct {
	id, dir string
	updated int64
}

// sessions lists every session with its last change: the latest of the
// session's, its messages' and its parts' update times.
func openCodeSessions(ctx context.Context, db string) ([]openCodeSession, error) {
	c, err := openCodeOpen(ctx, db)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	// OpenCode creates the database, then its tables: none yet is no
	// session yet; some of them only is a schema this source does not know.
	tables, _, err := c.Prepare(`SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN ('session', 'message', 'part')`)
	if err != nil {
		return nil, err
	}
	defer tables.Close()
	if !tables.Step() {
		return nil, tables.Err()
	}
	switch tables.ColumnInt(0) {
	case 0:
		return nil, nil
	case 3:
	default:
		return nil, errOpenCodeSchema
	}
	st, _, err := c.Prepare(`SELECT s.id, s.directory, max(s.time_updated,
		coalesce((SELECT max(m.time_updated) FROM message m WHERE m.session_id = s.id), 0),
		coalesce((SELECT max(p.time_updated) FROM part p WHERE p.session_id = s.id), 0))
		FROM session s`)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	var out []openCodeSession
	for st.Step() {
		out = append(out, openCodeSession{id: st.ColumnText(0), dir: st.ColumnText(1), updated: st.ColumnInt64(2)})
	}
	if err := st.Err(); err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].updated != out[j].updated {
			return out[i].updated < out[j].updated
		}
		return out[i].id < out[j].id
	})
	return out, nil
}

// errOpenCodeSchema is a database that has some of OpenCode's session
// tables and not others.
var errOpenCodeSchema = errors.New("some of OpenCode's session tables only")

func openCodeFailed(db string, err error) error {
	if errors.Is(err, errOpenCodeSchema) {
		return fault.New(fault.SourceFailed, fmt.Sprintf("%s has some of OpenCode's session tables and not others: a storage version this source (%s) does not know", db, OpenCodeFormat),
			"check the file is OpenCode's database; a newer OpenCode may need a newer loci")
	}
	return fault.Wrap(fault.SourceFailed, err, fmt.Sprintf("cannot read OpenCode's database %s: %v", db, err),
		"check the file is OpenCode's database and the daemon may read it (and its directory, for the -wal and -shm files)")
}

// refs makes the refs of sessions in cursor order; a session changed
// within openCodeSettle of now carries a cursor before that window, so the
// next discovery lists it again.
func (o OpenCode) refs(list []openCodeSession, proj string, now time.Time) []Ref {
	settled := now.Add(-openCodeSettle).UnixMilli()
	refs := make([]Ref, 0, len(list))
	for _, s := range list {
		cur := openCodeCursor{Updated: s.updated, ID: s.id}
		if s.updated >= settled {
			cur = openCodeCursor{Updated: settled}
		}
		c, _ := json.Marshal(cur)
		r := Ref{ID: s.id, Cursor: c}
		if proj != "" && !underPath(s.dir, proj) {
			r.Filtered = "other_project"
		}
		refs = append(refs, r)
	}
	return refs
}

// Discover lists the sessions changed past the cursor (and since the
// since option's time), oldest change first; sessions of another project
// than the project option's are listed filtered.
func (o OpenCode) Discover(ctx context.Context, run Run, cursor json.RawMessage) ([]Ref, error) {
	id, opts := run.ID, run.Options
	cur, err := parseOpenCodeCursor(cursor)
	if err != nil {
		return nil, err
	}
	since, err := sinceOf(opts)
	if err != nil {
		return nil, err
	}
	db, proj := openCodeIdentity(id)
	list, err := openCodeSessions(ctx, db)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, openCodeFailed(db, err)
	}
	kept := list[:0]
	for _, s := range list {
		if cur != nil && (s.updated < cur.Updated || s.updated == cur.Updated && s.id <= cur.ID) {
			continue
		}
		if !since.IsZero() && s.updated < since.UnixMilli() {
			continue
		}
		kept = append(kept, s)
	}
	return o.refs(kept, proj, time.Now()), nil
}

// List lists every session in the database, whatever the cursor and the
// since option say.
func (o OpenCode) List(ctx context.Context, run Run) ([]Ref, bool, error) {
	id := run.ID
	db, proj := openCodeIdentity(id)
	list, err := openCodeSessions(ctx, db)
	if err != nil {
		if ctx.Err() != nil {
			return nil, false, ctx.Err()
		}
		return nil, false, openCodeFailed(db, err)
	}
	return o.refs(list, proj, time.Now()), true, nil
}

// openCodeMessage is the part of a message's data the source reads.
type openCodeMessage struct {
	Role string `json:"role"`
	Time struct {
		Created   int64 `json:"created"`
		Completed int64 `json:"completed"`
	} `json:"time"`
	// Summary is true on a compaction's summary (an assistant message
	// restating the conversation): left out. A user message's summary is
	// an object.
	Summary json.RawMessage `json:"summary"`
	Error   json.RawMessage `json:"error"`
}

// openCodePart is the part of a part's data the source reads.
type openCodePart struct {
	Type      string `json:"type"`
	Text      string `json:"text"`
	Synthetic bool   `json:"synthetic"`
	Ignored   bool   `json:"ignored"`
	Tool      string `json:"tool"`
	State     struct {
		Status string          `json:"status"`
		Input  json.RawMessage `json:"input"`
		Output string          `json:"output"`
		Error  string          `json:"error"`
		Title  string          `json:"title"`
	} `json:"state"`
	Mime        string `json:"mime"`
	Filename    string `json:"filename"`
	Description string `json:"description"`
	Agent       string `json:"agent"`
}

// openCodeKnownParts are the part types the source knows and leaves out:
// the model's reasoning, step boundaries, file snapshots and patches,
// retries, compaction marks and agent mentions.
var openCodeKnownParts = map[string]bool{"reasoning": true, "step-start": true, "step-finish": true,
	"snapshot": true, "patch": true, "retry": true, "compaction": true, "agent": true}

// openCodeArgKeys are the tool arguments a tool marker shows, in order of
// preference; a tool with none of them shows its arguments as JSON.
var openCodeArgKeys = []string{"command", "filePath", "pattern", "url", "description", "query", "name"}

// openCodeToolArgs is a tool call's marker arguments.
func openCodeToolArgs(input json.RawMessage) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(input, &m) != nil {
		return ""
	}
	for _, k := range openCodeArgKeys {
		var s string
		if json.Unmarshal(m[k], &s) == nil && s != "" {
			if k == "pattern" {
				var p string
				if json.Unmarshal(m["path"], &p) == nil && p != "" {
					s += " in " + p
				}
			}
			return s
		}
	}
	if len(m) == 0 {
		return ""
	}
	var b bytes.Buffer
	if json.Compact(&b, input) != nil {
		return ""
	}
	return b.String()
}

// partText is a part's contribution to its turn's text ("" for none) and
// whether its type is unknown.
func (p *openCodePart) text() (string, bool) {
	switch p.Type {
	case "text":
		if p.Synthetic || p.Ignored {
			// OpenCode's own text (an attached file's contents, what
			// its read tool said): tool output, never the person's.
			return "", false
		}
		return p.Text, false
	case "tool":
		s := ToolMarker(p.Tool, openCodeToolArgs(p.State.Input))
		switch p.State.Status {
		case "completed":
			s += "\n" + ResultMarker(len(p.State.Output), false)
		case "error":
			s += "\n" + ResultMarker(len(p.State.Error), true)
		}
		return s, false
	case "file":
		if strings.HasPrefix(p.Mime, "image/") {
			return ImageMarker(), false
		}
		name := p.Filename
		if name == "" {
			name = p.Mime
		}
		return "[file " + shorten(strings.Join(strings.Fields(name), " "), markerArgChars) + "]", false
	case "subtask":
		return ToolMarker("task", p.Description), false
	}
	return "", !openCodeKnownParts[p.Type]
}

// Read reads one session, its messages and their parts in one read
// transaction. Consecutive messages of one role make one turn (OpenCode
// stores each step of an answer as its own message). A last assistant
// message still being written waits for the next run; a session of
// another project than the project option's is filtered.
func (o OpenCode) Read(ctx context.Context, run Run, ref Ref) (*Document, error) {
	id := run.ID
	db, proj := openCodeIdentity(id)
	c, err := openCodeOpen(ctx, db)
	if err != nil {
		return nil, openCodeFailed(db, err)
	}
	defer c.Close()
	limit := o.MaxBytes
	if limit <= 0 {
		limit = MaxSessionBytes
	}
	s, n, err := openCodeRead(c, ref.ID, limit)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var fe *Filtered
		if errors.As(err, &fe) {
			return nil, err
		}
		return nil, openCodeFailed(db, err)
	}
	if proj != "" && !underPath(s.Project, proj) {
		return nil, &Filtered{Reason: "other_project"}
	}
	doc, err := TranscriptDocument(ref.ID, OpenCodeName, db+"#"+ref.ID, OpenCodeName+"/"+OpenCodeFormat, "", s)
	if err != nil {
		return nil, err
	}
	doc.Bytes = n
	return doc, nil
}

// openCodeRead reads a session in one read transaction; n is the bytes of
// JSON read, at most limit (past it the session is filtered "too_large").
func openCodeRead(c *sqlite3.Conn, sid string, limit int64) (s *Session, n int64, err error) {
	if err := c.Exec("BEGIN DEFERRED"); err != nil {
		return nil, 0, err
	}
	defer func() {
		if e := c.Exec("ROLLBACK"); e != nil && err == nil {
			err = e
		}
	}()
	st, _, err := c.Prepare(`SELECT directory, title, version, coalesce(parent_id, '') FROM session WHERE id = ?`)
	if err != nil {
		return nil, 0, err
	}
	defer st.Close()
	if err := st.BindText(1, sid); err != nil {
		return nil, 0, err
	}
	if !st.Step() {
		if err := st.Err(); err != nil {
			return nil, 0, err
		}
		return nil, 0, &Filtered{Reason: "vanished"}
	}
	s = &Session{ID: sid, Agent: OpenCodeName, Project: st.ColumnText(0), Title: st.ColumnText(1), AgentVersion: st.ColumnText(2)}
	sidechain := st.ColumnText(3) != ""

	// Parts by message, in their order.
	parts := map[string][]string{}
	ps, _, err := c.Prepare(`SELECT message_id, data FROM part WHERE session_id = ? ORDER BY message_id, id`)
	if err != nil {
		return nil, 0, err
	}
	defer ps.Close()
	if err := ps.BindText(1, sid); err != nil {
		return nil, 0, err
	}
	for ps.Step() {
		data := ps.ColumnRawText(1) // valid until the next step
		if n += int64(len(data)); n > limit {
			return nil, n, &Filtered{Reason: "too_large"}
		}
		var p openCodePart
		if json.Unmarshal(data, &p) != nil {
			s.Skipped++
			continue
		}
		text, unknown := p.text()
		if unknown {
			s.Skipped++
		}
		if text = strings.TrimSpace(text); text != "" {
			mid := ps.ColumnText(0)
			parts[mid] = append(parts[mid], text)
		}
	}
	if err := ps.Err(); err != nil {
		return nil, 0, err
	}

	ms, _, err := c.Prepare(`SELECT id, time_created, data FROM message WHERE session_id = ? ORDER BY time_created, id`)
	if err != nil {
		return nil, 0, err
	}
	defer ms.Close()
	if err := ms.BindText(1, sid); err != nil {
		return nil, 0, err
	}
	type msg struct {
		role     string
		at       time.Time
		text     string
		complete bool
	}
	var msgs []msg
	for ms.Step() {
		data := ms.ColumnRawText(2)
		if n += int64(len(data)); n > limit {
			return nil, n, &Filtered{Reason: "too_large"}
		}
		var m openCodeMessage
		if json.Unmarshal(data, &m) != nil {
			s.Skipped++
			continue
		}
		if m.Role != "user" && m.Role != "assistant" {
			s.Skipped++
			continue
		}
		if m.Role == "assistant" && string(m.Summary) == "true" {
			continue
		}
		created := m.Time.Created
		if created == 0 {
			created = ms.ColumnInt64(1)
		}
		msgs = append(msgs, msg{role: m.Role, at: time.UnixMilli(created).UTC(), text: strings.Join(parts[ms.ColumnText(0)], "\n"),
			complete: m.Role == "user" || m.Time.Completed != 0 || len(m.Error) > 0 && string(m.Error) != "null"})
	}
	if err := ms.Err(); err != nil {
		return nil, 0, err
	}
	// An answer still being written waits for the next run.
	for len(msgs) > 0 && !msgs[len(msgs)-1].complete {
		msgs = msgs[:len(msgs)-1]
	}
	for _, m := range msgs {
		if m.text == "" {
			continue
		}
		if k := len(s.Turns) - 1; k >= 0 && s.Turns[k].Role == m.role {
			s.Turns[k].Text += "\n" + m.text
			continue
		}
		s.Turns = append(s.Turns, Turn{Role: m.role, Time: m.at, Text: m.text, Sidechain: sidechain})
	}
	return s, n, nil
}
