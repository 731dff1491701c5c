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
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/names"
	"github.com/loci-dev/loci/store"
)

// Turn is one turn of a conversation as a transcript source keeps it: who
// spoke, when, and the conversational text, with tool calls, tool results
// and images as compact markers (ToolMarker, ResultMarker, ImageMarker)
// and never the model's reasoning or a tool's output.
type Turn struct {
	// Role is who spoke: "user" or "assistant" (a format's own roles are
	// mapped to these; "system" where a format records one worth keeping).
	Role string
	// Time is when the turn was recorded (zero when the format has none).
	Time time.Time
	// Text is the turn's text and markers, one marker per line.
	Text string
	// Sidechain marks a sub-agent's turn (Claude Code's sidechains): it
	// is kept, marked as such.
	Sidechain bool
}

// Session is one parsed conversation: a session file, a stored session or
// one conversation of an export.
type Session struct {
	// ID is the agent's own id of the session.
	ID string
	// Agent and AgentVersion are the agent that wrote it and its version
	// where the format records it.
	Agent, AgentVersion string
	// Project is the working directory the session ran in, where known.
	Project string
	// Title is the conversation's title, where the format has one.
	Title string
	// Private is true when the person marked the conversation private in
	// the agent: it is not mined.
	Private bool
	// Turns are the conversation's turns in order.
	Turns []Turn
	// Skipped counts the records of types the parser does not know (they
	// are left out, never an error).
	Skipped int
}

// First and Last are the times of the first and last turns that have one.
func (s *Session) First() time.Time {
	for _, t := range s.Turns {
		if !t.Time.IsZero() {
			return t.Time
		}
	}
	return time.Time{}
}

// Last is the time of the last turn that has one.
func (s *Session) Last() time.Time {
	for i := len(s.Turns) - 1; i >= 0; i-- {
		if !s.Turns[i].Time.IsZero() {
			return s.Turns[i].Time
		}
	}
	return time.Time{}
}

// markerArgChars bounds a tool call's arguments in its marker.
const markerArgChars = 120

// ToolMarker is a tool call's marker line: "[tool Bash: git status]", its
// arguments on one line and cut to markerArgChars (an ellipsis says so;
// a secret the cut would split is left out whole).
func ToolMarker(name, args string) string {
	args = strings.Join(strings.Fields(args), " ")
	if args == "" {
		return "[tool " + name + "]"
	}
	return "[tool " + name + ": " + shortenArgs(args, markerArgChars) + "]"
}

// shortenArgs is shorten for a marker's arguments, never cutting through a
// secret: one the cut would split is left out whole, since the secret
// policy, which redacts the units later, cannot find half a secret.
func shortenArgs(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	cut := len(string([]rune(s)[:n-1]))
	for _, f := range Scan(s) {
		if f.Start < cut && f.End > cut {
			cut = f.Start
		}
	}
	return s[:cut] + "…"
}

// ResultMarker is a tool result's marker line: its size, never its text;
// failed adds that the tool reported an error.
func ResultMarker(bytes int, failed bool) string {
	s := "[tool result: " + humanBytes(bytes)
	if failed {
		s += ", error"
	}
	return s + "]"
}

// ImageMarker is an image's marker line.
func ImageMarker() string { return "[image]" }

// shorten cuts s to at most n runes, ending with "…" when cut.
func shorten(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

func humanBytes(n int) string {
	switch {
	case n < 1024:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KB", float64(n)/1024)
	}
	return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
}

// TurnHeader is the first line of a turn's unit: "[user · 2026-11-25
// 10:03:12 UTC]", "[assistant (sub-agent) · …]"; without a time, only the
// role. Search hits read who said it and when back from it (ParseTurnHeader).
func TurnHeader(t Turn) string {
	role := t.Role
	if t.Sidechain {
		role += " (sub-agent)"
	}
	if t.Time.IsZero() {
		return "[" + role + "]"
	}
	return "[" + role + " · " + t.Time.UTC().Format("2006-01-02 15:04:05") + " UTC]"
}

// ParseTurnHeader reads a line TurnHeader wrote: the role (with
// " (sub-agent)" when marked) and the time (zero when absent).
func ParseTurnHeader(line string) (role string, at time.Time, ok bool) {
	if !strings.HasPrefix(line, "[") || !strings.HasSuffix(line, "]") {
		return "", time.Time{}, false
	}
	body := line[1 : len(line)-1]
	role, when, hasTime := strings.Cut(body, " · ")
	base := strings.TrimSuffix(role, " (sub-agent)")
	if base != "user" && base != "assistant" && base != "system" {
		return "", time.Time{}, false
	}
	if !hasTime {
		return role, time.Time{}, true
	}
	at, err := time.Parse("2006-01-02 15:04:05 UTC", when)
	if err != nil {
		return "", time.Time{}, false
	}
	return role, at.UTC(), true
}

// TurnUnits renders a session's turns as a document's units, one per turn
// with text (its header line, its text, a blank line): chunking packs whole
// turns into drawers. Turns with no text are left out.
func TurnUnits(s *Session) []string {
	units := make([]string, 0, len(s.Turns))
	for _, t := range s.Turns {
		text := strings.TrimSpace(strings.ReplaceAll(t.Text, "\r\n", "\n"))
		if text == "" {
			continue
		}
		if len(text) > MaxTurnBytes {
			text = cutTurn(text)
		}
		units = append(units, TurnHeader(t)+"\n"+text+"\n\n")
	}
	return units
}

// MaxTurnBytes bounds the text a transcript keeps of one turn: a turn past
// it (a pasted log, a file dumped into the prompt) keeps its start and a
// marker of the size left out, so one huge turn costs neither the session
// nor the transaction that files it.
const MaxTurnBytes = 64 << 10

// cutTurn keeps a long turn's first MaxTurnBytes (at a rune boundary) and
// says how much was left out.
func cutTurn(text string) string {
	end := MaxTurnBytes
	for end > 0 && !utf8.RuneStart(text[end]) {
		end--
	}
	return text[:end] + "\n[turn cut: " + humanBytes(len(text)-end) + " more]"
}

// transcriptOrigin is a transcript drawer's source.origin (the chunk index
// is added per drawer).
type transcriptOrigin struct {
	Path         string `json:"path,omitempty"`
	SessionID    string `json:"session_id,omitempty"`
	Agent        string `json:"agent"`
	AgentVersion string `json:"agent_version,omitempty"`
	Format       string `json:"format"`
	Project      string `json:"project,omitempty"`
	Title        string `json:"title,omitempty"`
	First        string `json:"first,omitempty"`
	Last         string `json:"last,omitempty"`
	Turns        int    `json:"turns"`
}

// TranscriptDocument makes the document of a parsed session: its turns as
// units, source.kind transcript, the origin naming the session id, the
// agent and its version, the format, the project and the first and last
// times. A private session, or one with no turn of text, is Filtered.
func TranscriptDocument(id, room, uri, format string, path string, s *Session) (*Document, error) {
	if s.Private {
		return nil, &Filtered{Reason: "private"}
	}
	units := TurnUnits(s)
	if len(units) == 0 {
		return nil, &Filtered{Reason: "blank"}
	}
	o := transcriptOrigin{Path: path, SessionID: s.ID, Agent: s.Agent, AgentVersion: s.AgentVersion, Format: format,
		Project: s.Project, Title: s.Title, Turns: len(units)}
	if t := s.First(); !t.IsZero() {
		o.First = t.UTC().Format(time.RFC3339)
	}
	if t := s.Last(); !t.IsZero() {
		o.Last = t.UTC().Format(time.RFC3339)
	}
	origin, err := json.Marshal(o)
	if err != nil {
		return nil, err
	}
	// The title names the first drawer where it can (an agent's titles
	// are anyone's words: one that is no drawer name leaves the id).
	name := id
	if s.Title != "" && names.Drawer(s.Title) == "" {
		name = s.Title
	}
	return &Document{ID: id, Name: name, Room: room, Kind: store.KindTranscript, URI: uri, Origin: origin,
		Meta: "format=" + format, Units: units, Skipped: s.Skipped}, nil
}

// SessionFormat is one agent's session files as SessionFiles reads them.
type SessionFormat struct {
	// Name is the source's name ("claude-code").
	Name string
	// Version is the session format version the parser follows, shown by
	// GET /api/sources.
	Version string
	// DefaultDir is the agent's standard location, under the home
	// directory of the daemon's user (".claude/projects").
	DefaultDir string
	// Room is the room the sessions are filed in.
	Room string
	// Match reports a session file by its slash-separated path under the
	// root ("-work-app/0a1b….jsonl").
	Match func(rel string) bool
	// Parse reads one session file's complete lines. It must skip records
	// of types it does not know (counting them in Session.Skipped) and
	// fail only when the file is not a session at all.
	Parse func(ctx context.Context, r io.Reader) (*Session, error)
	// Retention, when set, reads how long the agent keeps a session
	// (its settings under home) and the setting's name: see Guarded.
	Retention func(home string) (time.Duration, string)
}

// MaxSessionBytes bounds a session file SessionFiles reads.
const MaxSessionBytes = 256 << 20

// SessionFiles is a transcript source whose sessions are files under one
// directory (Claude Code's projects, Codex's rollouts): one document per
// session file, discovered like the directory source's files (by change
// time then path, suspects included), read through its format's parser.
// A session file that grew is read again and files only its new turns
// (store.FileDocument keeps the unchanged chunks); a rewritten one
// supersedes what changed. A last line still being written (no newline
// yet) waits for the next run.
type SessionFiles struct {
	Format SessionFormat
	// Home is the home directory the default location is under ("":
	// the daemon user's).
	Home string
}

// OptionProject is the transcript sources' option that keeps only the
// sessions whose working directory is a path or under it.
const OptionProject = "project"

// Info declares the options dir, since, project and prune, and the format
// version.
func (f SessionFiles) Info() Info {
	return Info{Name: f.Format.Name, Format: f.Format.Version, Options: []string{"dir", OptionProject, OptionPrune, "since"},
		Capabilities: Capabilities{Incremental: true, Triggers: []string{"watch"}}, DefaultLocator: "~/" + f.Format.DefaultDir}
}

func (f SessionFiles) home() (string, error) {
	if f.Home != "" {
		return f.Home, nil
	}
	return os.UserHomeDir()
}

// projectSep separates the project option in a locator.
const projectSep = "#project="

// Resolve takes the root ("" or "~" forms mean the agent's standard
// location under the daemon user's home), then as the directory source; a
// project option (an absolute path) selects its own identity.
func (f SessionFiles) Resolve(locator string, opts map[string]string) (store.SourceIdentity, error) {
	if locator == "" || locator == "~" || strings.HasPrefix(locator, "~/") {
		home, err := f.home()
		if err != nil {
			return store.SourceIdentity{}, fault.Invalid("locator", "the daemon's user has no home directory; give the session directory's absolute path")
		}
		if locator == "" {
			locator = "~/" + f.Format.DefaultDir
		}
		locator = filepath.Join(home, strings.TrimPrefix(strings.TrimPrefix(locator, "~"), "/"))
	}
	proj, err := projectOf(opts)
	if err != nil {
		return store.SourceIdentity{}, err
	}
	id, err := Directory{}.Resolve(locator, opts)
	if err != nil {
		return id, err
	}
	id.Adapter = f.Format.Name
	if proj != "" {
		id.Locator += projectSep + proj
	}
	return id, nil
}

func projectOf(opts map[string]string) (string, error) {
	p := opts[OptionProject]
	if p == "" {
		return "", nil
	}
	if !filepath.IsAbs(p) {
		return "", fault.Invalid("options", fmt.Sprintf("project %q is relative; give the absolute path of the project's directory", p))
	}
	return filepath.Clean(p), nil
}

// dirID is the directory source's identity under a transcript identity:
// the locator without the project option.
func dirID(id store.SourceIdentity) (store.SourceIdentity, string) {
	loc, proj, _ := strings.Cut(id.Locator, projectSep)
	return store.SourceIdentity{Adapter: DirectoryName, Account: id.Account, Locator: loc}, proj
}

func (f SessionFiles) dir() Directory {
	return Directory{MaxFileBytes: MaxSessionBytes, keep: f.Format.Match}
}

// ParseCursor checks a stored cursor (the directory source's).
func (f SessionFiles) ParseCursor(raw json.RawMessage) error { return f.dir().ParseCursor(raw) }

// Discover lists the session files past the cursor, oldest change first.
func (f SessionFiles) Discover(ctx context.Context, run Run, cursor json.RawMessage) ([]Ref, error) {
	run.ID, _ = dirID(run.ID)
	return f.dir().Discover(ctx, run, cursor)
}

// DiscoverSuspects is the directory source's: session files moved into
// the tree keep their old times.
func (f SessionFiles) DiscoverSuspects(ctx context.Context, run Run, cursor json.RawMessage) (refs, suspects []Ref, err error) {
	run.ID, _ = dirID(run.ID)
	return f.dir().DiscoverSuspects(ctx, run, cursor)
}

// List lists every session file under the root.
func (f SessionFiles) List(ctx context.Context, run Run) ([]Ref, bool, error) {
	run.ID, _ = dirID(run.ID)
	return f.dir().List(ctx, run)
}

// Read parses one session file's complete lines; a session of another
// project than the project option's is filtered ("other_project").
func (f SessionFiles) Read(ctx context.Context, run Run, ref Ref) (*Document, error) {
	id := run.ID
	d, proj := dirID(id)
	abs := filepath.Join(rootOf(d), filepath.FromSlash(ref.ID))
	file, err := os.Open(abs)
	if err != nil {
		return nil, &Filtered{Reason: "vanished"}
	}
	defer file.Close()
	info, err := file.Stat()
	if err != nil || !info.Mode().IsRegular() {
		return nil, &Filtered{Reason: "not_a_file"}
	}
	if info.Size() > MaxSessionBytes {
		return nil, &Filtered{Reason: "too_large"}
	}
	r := &completeLines{r: bufio.NewReaderSize(io.LimitReader(file, info.Size()), 1<<16)}
	s, err := f.Format.Parse(ctx, r)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var fe *Filtered
		if errors.As(err, &fe) {
			return nil, err
		}
		return nil, &Filtered{Reason: "not_a_session"}
	}
	if proj != "" && !underPath(s.Project, proj) {
		return nil, &Filtered{Reason: "other_project"}
	}
	doc, err := TranscriptDocument(ref.ID, f.Format.Room, abs, f.Format.Name+"/"+f.Format.Version, ref.ID, s)
	if err != nil {
		return nil, err
	}
	doc.Bytes = r.n
	return doc, nil
}

// underPath reports p is dir or under it.
func underPath(p, dir string) bool {
	if p == "" {
		return false
	}
	p = filepath.Clean(p)
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, string(filepath.Separator))+string(filepath.Separator))
}

// completeLines reads only up to the last newline of what it wraps: a line
// an agent is still writing is left for the next run.
type completeLines struct {
	r       *bufio.Reader
	pending []byte // a line read but not yet handed out
	n       int64  // bytes handed out
	eof     bool
}

func (c *completeLines) Read(p []byte) (int, error) {
	for len(c.pending) == 0 {
		if c.eof {
			return 0, io.EOF
		}
		line, err := c.r.ReadSlice('\n')
		switch {
		case err == nil:
			c.pending = append(c.pending[:0], line...)
		case errors.Is(err, bufio.ErrBufferFull):
			// A long line: its start is copied out of the buffer (the next
			// read reuses it) before the rest is read; the whole line is
			// handed out only once its newline came.
			c.pending = append(c.pending[:0], line...)
			rest, err := c.r.ReadBytes('\n')
			if err != nil {
				c.pending = c.pending[:0]
				c.eof = true // no newline: the whole long line waits
				return 0, io.EOF
			}
			c.pending = append(c.pending, rest...)
		default:
			c.eof = true // a last line without its newline waits
			return 0, io.EOF
		}
	}
	n := copy(p, c.pending)
	c.pending = c.pending[n:]
	c.n += int64(n)
	return n, nil
}

// JSONLines calls fn with each non-blank line of r (a JSON Lines stream),
// its number from 1; a line that is not a JSON object is counted in bad
// and skipped. It stops at ctx's end. The line is fn's only during the
// call (the next line is read into the same memory): fn copies what it
// keeps, as json.Unmarshal and gjson do.
func JSONLines(ctx context.Context, r io.Reader, fn func(n int, line []byte) error) (bad int, err error) {
	br := bufio.NewReaderSize(r, 1<<16)
	var long []byte // a line longer than br's buffer, gathered here (reused)
	for n := 1; ; n++ {
		if n%256 == 0 && ctx.Err() != nil {
			return bad, ctx.Err()
		}
		// Lines are read in place rather than each into a new slice: a
		// mine of 200 MB of sessions made 200 MB of garbage.
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long[:0], line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = br.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if len(bytes.TrimSpace(line)) > 0 {
			line = bytes.TrimSpace(line)
			// gjson's check is several times faster than encoding/json's
			// (session files are mostly long records no parser reads).
			if line[0] != '{' || !gjson.ValidBytes(line) {
				bad++
			} else if err := fn(n, line); err != nil {
				return bad, err
			}
		}
		if err == io.EOF {
			return bad, nil
		}
		if err != nil {
			return bad, err
		}
	}
}
