package export

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/names"
	"github.com/loci-dev/loci/store"
	"github.com/loci-dev/loci/store/graph"
)

// Limits bound what a Reader accepts, so that a hostile file is refused
// early, before memory grows: the length of one line and the count of
// each kind of record the Reader remembers to check references. A zero
// field takes DefaultLimits' value.
type Limits struct {
	// MaxLineBytes bounds one line (its JSON, without the newline).
	MaxLineBytes int
	MaxWings     int
	MaxRooms     int
	MaxDrawers   int
	MaxEntities  int
	MaxFacts     int
	MaxSources   int
	// MaxRecords bounds the records of a file, every type counted.
	MaxRecords int64
	// MaxDimension bounds a vector's length.
	MaxDimension int
}

// DefaultLimits are the limits a Reader applies where ReaderOptions leave
// them zero. A line holds at most a drawer of store.MaxContentBytes
// escaped (at most 6 bytes a byte) with its other fields; the counts are
// well beyond a real palace's (the palace's limits on places: names
// package) and keep the Reader's memory of ids within a few hundred MB.
func DefaultLimits() Limits {
	return Limits{
		MaxLineBytes: 6*store.MaxContentBytes + 1<<20,
		MaxWings:     10_000,
		MaxRooms:     100_000,
		MaxDrawers:   10_000_000,
		MaxEntities:  5_000_000,
		MaxFacts:     10_000_000,
		MaxSources:   100_000,
		MaxRecords:   100_000_000,
		MaxDimension: 16_384,
	}
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	pick := func(v *int, def int) {
		if *v <= 0 {
			*v = def
		}
	}
	pick(&l.MaxLineBytes, d.MaxLineBytes)
	pick(&l.MaxWings, d.MaxWings)
	pick(&l.MaxRooms, d.MaxRooms)
	pick(&l.MaxDrawers, d.MaxDrawers)
	pick(&l.MaxEntities, d.MaxEntities)
	pick(&l.MaxFacts, d.MaxFacts)
	pick(&l.MaxSources, d.MaxSources)
	pick(&l.MaxDimension, d.MaxDimension)
	if l.MaxRecords <= 0 {
		l.MaxRecords = d.MaxRecords
	}
	return l
}

// ReaderOptions shape a Reader.
type ReaderOptions struct {
	// SkipUnknown skips records of a type this version does not know
	// instead of refusing the file (--skip-unknown): Next returns each as
	// a Record with Unknown set, its Type and position and no payload, so
	// that the import reports what it left out.
	SkipUnknown bool
	// Limits bound the file (DefaultLimits where zero).
	Limits Limits
}

// Reader reads an export file record by record, checking each before it
// is returned: the header first, of a known format and version; every
// line within the line limit, of a known type (or skipped), with the
// fields of its type and no other, names by the palace's rules; every
// reference to a record written before it; the counts within the
// limits; and at the end, the end record's count and digest. An error is
// a *fault.Error (code loci::export::*) whose message names the line and
// its byte offset; after one, Next returns it again.
type Reader struct {
	br   *bufio.Reader
	opts ReaderOptions
	lim  Limits

	line, offset int64 // the line being read: number (from 1) and offset
	next         int64 // offset of the next line
	records      int64 // records read before the current one (skipped ones too)
	digest       hash.Hash
	header       *Header
	ended        bool
	err          error
	counts       map[string]int
	unknownTypes map[string]bool // the unknown types named so far (at most MaxUnknownTypes)
	lineBuf      []byte          // the line being read, reused (a record's fields are copies)

	wings     map[uuid.UUID]int32 // wing id -> index
	wingNames map[string]bool
	rooms     map[uuid.UUID]roomRef
	roomNames map[string]bool     // wing index "/" name
	drawers   map[uuid.UUID]int32 // drawer id -> room index
	// successor[d] is the drawer d names as superseded_by, until that
	// drawer is read (it must name d as supersedes).
	successor map[uuid.UUID]uuid.UUID
	entities  map[uuid.UUID]struct{}
	facts     map[uuid.UUID]struct{}
	sources   map[string]int32 // source key -> wing index
	nRooms    int32
	roomWings []int32 // room index -> wing index
}

type roomRef struct {
	index int32
	wing  int32
}

// NewReader reads an export file from r. A file that is age-encrypted is
// refused with loci::export::encrypted: decrypt it first (Decrypt).
func NewReader(r io.Reader, o ReaderOptions) *Reader {
	return &Reader{
		br: bufio.NewReaderSize(r, 64<<10), opts: o, lim: o.Limits.withDefaults(), digest: sha256.New(),
		counts: map[string]int{}, wings: map[uuid.UUID]int32{}, wingNames: map[string]bool{},
		rooms: map[uuid.UUID]roomRef{}, roomNames: map[string]bool{}, drawers: map[uuid.UUID]int32{},
		successor: map[uuid.UUID]uuid.UUID{}, entities: map[uuid.UUID]struct{}{}, facts: map[uuid.UUID]struct{}{},
		sources: map[string]int32{}, unknownTypes: map[string]bool{},
	}
}

// MaxUnknownTypes bounds the distinct unknown record types a Reader
// names (SkipUnknown): the records of further types are returned with
// Type UnknownType, so that a hostile file's many invented types cannot
// grow a report's table of types.
const MaxUnknownTypes = 16

// UnknownType is the Type of a skipped record whose own type was not
// named (more than MaxUnknownTypes distinct unknown types, or a type
// longer than MaxUnknownTypeBytes).
const UnknownType = "unknown"

// MaxUnknownTypeBytes bounds the length of an unknown type the Reader
// names.
const MaxUnknownTypeBytes = 64

// unknownName is the Type a skipped record of type typ is returned with.
func (r *Reader) unknownName(typ string) string {
	if r.unknownTypes[typ] {
		return typ
	}
	if len(typ) > MaxUnknownTypeBytes || len(r.unknownTypes) >= MaxUnknownTypes || typ == UnknownType || names.Place(typ) != "" {
		return UnknownType
	}
	r.unknownTypes[typ] = true
	return typ
}

// BackupFormat is the format a loci backup's header names (the backup
// package's Format; export does not depend on backup). A file that
// starts with it is refused with advice to restore it.
const BackupFormat = "loci-backup"

// HasWing reports whether the file read so far holds a wing of that name
// (its name in the file, before any --wing-map).
func (r *Reader) HasWing(name string) bool { return r.wingNames[name] }

// WingNames are the names of the wings read so far, at most max, sorted.
func (r *Reader) WingNames(max int) []string {
	out := make([]string, 0, min(max, len(r.wingNames)))
	for n := range r.wingNames {
		out = append(out, n)
	}
	slices.Sort(out)
	if len(out) > max {
		out = out[:max]
	}
	return out
}

// Header is the file's header once the first record was read; nil before.
func (r *Reader) Header() *Header { return r.header }

// Position is the line number (from 1) and byte offset of the record Next
// returned last.
func (r *Reader) Position() (line, offset int64) { return r.line, r.offset }

// Next returns the next record, the end record last; then io.EOF. An
// error refuses the file: the records returned before it must not be
// kept without the end record.
func (r *Reader) Next() (Record, error) {
	if r.err != nil {
		return Record{}, r.err
	}
	rec, err := r.next1()
	if err != nil && err != io.EOF {
		r.err = err
	}
	return rec, err
}

func (r *Reader) next1() (Record, error) {
	for {
		if r.ended {
			// Only blank space may follow the end record.
			for {
				b, err := r.br.ReadByte()
				if err == io.EOF {
					return Record{}, io.EOF
				}
				if err != nil {
					return Record{}, r.ioErr(err)
				}
				if b != '\n' && b != ' ' && b != '\t' && b != '\r' {
					r.line++
					r.offset = r.next
					return Record{}, r.fail(fault.ExportInvalid, "the file holds data after its end record; export again, or cut the file after the end record",
						"data after the end record")
				}
				r.next++
			}
		}
		line, partial, err := r.readLine()
		if err != nil {
			return Record{}, err
		}
		if line == nil { // end of input before the end record
			r.line++
			r.offset = r.next
			if r.header == nil && r.records == 0 {
				return Record{}, r.fail(fault.ExportTruncated, "the file is empty; export again", "the file is empty")
			}
			return Record{}, r.fail(fault.ExportTruncated, "the file was cut short (a copy or a download that stopped); export it again",
				"the file ends after %d records without its end record", r.records)
		}
		rec, skip, err := r.parse(line)
		if partial && (err != nil || rec.Type != TypeEnd) {
			// Only the end record may lack its newline: a last line cut
			// short is a truncated file.
			return Record{}, r.fail(fault.ExportTruncated, "the file was cut short (a copy or a download that stopped); export it again",
				"the file ends inside a line, after %d records, without its end record", r.records)
		}
		if err != nil {
			return Record{}, err
		}
		if rec.Type != TypeEnd {
			r.digest.Write(line)
			r.digest.Write([]byte{'\n'})
			r.records++
		}
		if skip {
			rec.Unknown = true
			rec.Type = r.unknownName(rec.Type)
		}
		return rec, nil
	}
}

// readLine reads the next line (without its newline), bounded by the
// line limit; nil at the end of input; partial when the input ended
// before the line's newline.
func (r *Reader) readLine() (line []byte, partial bool, err error) {
	r.line++
	r.offset = r.next
	buf := r.lineBuf[:0]
	defer func() { r.lineBuf = buf[:0] }()
	for {
		frag, rerr := r.br.ReadSlice('\n')
		err = rerr
		if len(buf)+len(frag) > r.lim.MaxLineBytes+1 {
			return nil, false, r.fail(fault.ExportTooLarge, fmt.Sprintf("a line holds at most %d bytes (a drawer's content is at most %d bytes); this file was not written by loci export or was altered", r.lim.MaxLineBytes, store.MaxContentBytes),
				"the line is longer than %d bytes", r.lim.MaxLineBytes)
		}
		buf = append(buf, frag...)
		switch {
		case err == nil:
			r.next += int64(len(buf))
			return buf[:len(buf)-1], false, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err == io.EOF:
			r.next += int64(len(buf))
			if len(buf) == 0 {
				r.line--
				return nil, false, nil
			}
			// A last line without its newline: only the end record may
			// lack it.
			return buf, true, nil
		default:
			return nil, false, r.ioErr(err)
		}
	}
}

func (r *Reader) ioErr(err error) error {
	var fe *fault.Error
	if errors.As(err, &fe) {
		return fe
	}
	return fault.Wrap(fault.IOFailed, err, fmt.Sprintf("line %d (byte %d): reading the file failed: %v", r.line, r.offset, err), "check the file and the disk, then try again")
}

// fail makes the Reader's error, naming the line and its offset.
func (r *Reader) fail(code fault.Code, help, format string, args ...any) *fault.Error {
	e := fault.Newf(code, help, format, args...)
	e.Msg = fmt.Sprintf("line %d (byte %d): %s", r.line, r.offset, e.Msg)
	return e
}

func (r *Reader) invalid(format string, args ...any) *fault.Error {
	return r.fail(fault.ExportInvalid, "the file breaks the export format (docs/EXPORT.md) or the palace's rules: export it again with loci export, or correct that line", format, args...)
}

// LimitHelp is the advice of a limit error: the limits of one import
// file are fixed (no setting raises them); a palace beyond them is moved
// a few wings at a time.
func LimitHelp(what string, n int64) string {
	return fmt.Sprintf("one import file holds at most %d %s (a fixed limit of loci import, no setting raises it): export the palace a wing at a time (`loci export --wing NAME --out NAME.jsonl`, or several --wing flags a file) and import each file", n, what)
}

func (r *Reader) limit(what string, n int) *fault.Error {
	return r.fail(fault.ExportLimit, LimitHelp(what, int64(n)), "more than %d %s", n, what)
}

// ageHeader starts an age-encrypted file, binary or armored.
var ageHeaders = [][]byte{[]byte("age-encryption.org/"), []byte("-----BEGIN AGE ENCRYPTED FILE-----")}

func (r *Reader) parse(line []byte) (Record, bool, error) {
	rec := Record{Line: r.line, Offset: r.offset}
	if r.records >= r.lim.MaxRecords {
		return rec, false, r.fail(fault.ExportLimit, LimitHelp("records", r.lim.MaxRecords), "more than %d records", r.lim.MaxRecords)
	}
	if r.header == nil {
		for _, h := range ageHeaders {
			if bytes.HasPrefix(line, h) {
				return rec, false, r.fail(fault.ExportEncrypted, "the file is encrypted with age: give the identity file its recipient matches (--identity FILE), or the passphrase (LOCI_EXPORT_PASSPHRASE)",
					"the file is age-encrypted")
			}
		}
	}
	typ, ok := sniffType(line)
	if !ok {
		var head struct {
			Type *string `json:"type"`
		}
		if r.header == nil && r.records == 0 && isBackup(line) {
			return rec, false, r.fail(fault.ExportInvalid, "this is a loci backup, not an export: restore it with `loci restore FILE` (the daemon stopped), or import a file written by `loci export`",
				"the file is a loci backup (its header names the format %q), not an export", BackupFormat)
		}
		if err := json.Unmarshal(line, &head); err != nil {
			if r.header == nil && r.records == 0 {
				return rec, false, r.fail(fault.ExportInvalid, "give a file written by loci export (JSON Lines; a header record first)", "not an export file: %s", jsonProblem(err))
			}
			return rec, false, r.invalid("not a JSON object: %s", jsonProblem(err))
		}
		if head.Type == nil {
			return rec, false, r.invalid("a record has no \"type\"")
		}
		typ = *head.Type
	}
	rec.Type = typ
	if r.header == nil && rec.Type != TypeHeader {
		return rec, false, r.fail(fault.ExportInvalid, "give a file written by loci export: it starts with its header record",
			"the first record is %q, not the header", fault.Clip(rec.Type, fault.MaxQuoted))
	}
	var err error
	switch rec.Type {
	case TypeHeader:
		rec.Header = &Header{}
		if err = r.decode(line, rec.Header); err == nil {
			err = r.checkHeader(rec.Header)
		}
	case TypeWing:
		rec.Wing = &Wing{}
		if err = r.decode(line, rec.Wing); err == nil {
			err = r.checkWing(rec.Wing)
		}
	case TypeRoom:
		rec.Room = &Room{}
		if err = r.decode(line, rec.Room); err == nil {
			err = r.checkRoom(rec.Room)
		}
	case TypeEntity:
		rec.Entity = &Entity{}
		if err = r.decode(line, rec.Entity); err == nil {
			err = r.checkEntity(rec.Entity)
		}
	case TypeDrawer:
		rec.Drawer = &Drawer{}
		if err = r.decode(line, rec.Drawer); err == nil {
			err = r.checkDrawer(rec.Drawer)
		}
	case TypeMention:
		rec.Mention = &Mention{}
		if err = r.decode(line, rec.Mention); err == nil {
			err = r.checkMention(rec.Mention)
		}
	case TypeVector:
		rec.Vector = &Vector{}
		if err = r.decode(line, rec.Vector); err == nil {
			err = r.checkVector(rec.Vector)
		}
	case TypeSource:
		rec.Source = &SourceState{}
		if err = r.decode(line, rec.Source); err == nil {
			err = r.checkSource(rec.Source)
		}
	case TypeDocument:
		rec.Document = &Document{}
		if err = r.decode(line, rec.Document); err == nil {
			err = r.checkDocument(rec.Document)
		}
	case TypeFact:
		rec.Fact = &Fact{}
		if err = r.decode(line, rec.Fact); err == nil {
			err = r.checkFact(rec.Fact)
		}
	case TypeDecision:
		rec.Decision = &Decision{}
		if err = r.decode(line, rec.Decision); err == nil {
			err = r.checkDecision(rec.Decision)
		}
	case TypeEntityLink:
		rec.EntityLink = &EntityLink{}
		if err = r.decode(line, rec.EntityLink); err == nil {
			err = r.checkEntityLink(rec.EntityLink)
		}
	case TypeEnd:
		rec.End = &End{}
		if err = r.decode(line, rec.End); err == nil {
			err = r.checkEnd(rec.End)
		}
	default:
		if r.opts.SkipUnknown {
			return rec, true, nil
		}
		return rec, false, r.fail(fault.ExportUnknownRecord, "the file was written by a newer loci, or altered; skip records of unknown types with --skip-unknown if losing them is acceptable",
			"unknown record type %q", fault.Clip(rec.Type, fault.MaxQuoted))
	}
	if err != nil {
		return rec, false, err
	}
	r.counts[rec.Type]++
	return rec, false, nil
}

// isBackup reports a first line that is a loci backup's header: a JSON
// object whose "format" is BackupFormat.
func isBackup(line []byte) bool {
	var h struct {
		Format string `json:"format"`
	}
	return bytes.HasPrefix(bytes.TrimSpace(line), []byte("{")) && json.Unmarshal(line, &h) == nil && h.Format == BackupFormat
}

// jsonProblem is a JSON error's text without the input it quotes.
func jsonProblem(err error) string {
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return "unexpected end of JSON input (the line ends inside its object)"
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("%s at byte %d of the line", se.Error(), se.Offset)
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("field %q holds a JSON %s where %s is expected", te.Field, te.Value, te.Type)
	}
	return err.Error()
}

// sniffType reads the type of a line as loci export writes it,
// {"type":"<word>",...}, without decoding the line; false when the line
// has another shape (the JSON decoder then reads it).
func sniffType(line []byte) (string, bool) {
	const prefix = `{"type":"`
	if !bytes.HasPrefix(line, []byte(prefix)) {
		return "", false
	}
	rest := line[len(prefix):]
	for i, c := range rest {
		switch {
		case c == '"':
			if i == 0 || i+1 >= len(rest) || (rest[i+1] != ',' && rest[i+1] != '}') {
				return "", false
			}
			return string(rest[:i]), true
		case c != '_' && (c < 'a' || c > 'z'):
			return "", false
		}
	}
	return "", false
}

// decode decodes a line into its record, refusing fields the record does
// not have, anything after the object, and a "type" that differs from
// the one the line was read as (a key given twice).
func (r *Reader) decode(line []byte, v typed) error {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return r.invalid("%s", jsonProblem(err))
	}
	if dec.More() {
		return r.invalid("more than one JSON value on the line")
	}
	if t, _ := sniffType(line); t != "" && v.recordType() != t {
		return r.invalid("the record's \"type\" is given twice")
	}
	return nil
}

// typed is a record: it knows its type field.
type typed interface{ recordType() string }

func (h *Header) recordType() string      { return h.Type }
func (w *Wing) recordType() string        { return w.Type }
func (r *Room) recordType() string        { return r.Type }
func (d *Drawer) recordType() string      { return d.Type }
func (m *Mention) recordType() string     { return m.Type }
func (v *Vector) recordType() string      { return v.Type }
func (e *Entity) recordType() string      { return e.Type }
func (l *EntityLink) recordType() string  { return l.Type }
func (s *SourceState) recordType() string { return s.Type }
func (d *Document) recordType() string    { return d.Type }
func (f *Fact) recordType() string        { return f.Type }
func (d *Decision) recordType() string    { return d.Type }
func (e *End) recordType() string         { return e.Type }

// id parses a record's id or reference (a UUID).
func (r *Reader) id(field, v string) (uuid.UUID, error) {
	u, err := uuid.Parse(v)
	if err != nil || v != u.String() {
		return uuid.UUID{}, r.invalid("%s: %q is not an id (a UUID in its canonical spelling)", field, fault.Clip(v, fault.MaxQuoted))
	}
	return u, nil
}

// optID checks an optional id.
func (r *Reader) optID(field, v string) error {
	if v == "" {
		return nil
	}
	_, err := r.id(field, v)
	return err
}

func (r *Reader) checkHeader(h *Header) error {
	if r.header != nil {
		return r.invalid("a second header record; a file holds one, on its first line")
	}
	if h.Format != Format {
		return r.fail(fault.ExportVersion, "give a file written by loci export", "the format is %q, not %q", fault.Clip(h.Format, fault.MaxQuoted), Format)
	}
	if h.Version > Version {
		return r.fail(fault.ExportVersion, "the file was written by a newer loci: upgrade loci to import it",
			"the format's version %d is newer than %d, the newest this loci reads", h.Version, Version)
	}
	if h.Version < 1 {
		return r.fail(fault.ExportVersion, "give a file written by loci export", "the format's version %d is not a version", h.Version)
	}
	if _, err := r.id("palace_id", h.PalaceID); err != nil {
		return err
	}
	if h.CreatedAt.IsZero() {
		return r.invalid("header: created_at is missing")
	}
	for _, w := range h.Selection.Wings {
		if p := names.Place(w); p != "" {
			return r.invalid("header: selection.wings: the wing name %q %s", fault.Clip(w, fault.MaxQuoted), p)
		}
	}
	r.header = h
	return nil
}

func (r *Reader) checkWing(w *Wing) error {
	id, err := r.id("id", w.ID)
	if err != nil {
		return err
	}
	if p := names.Place(w.Name); p != "" {
		return r.invalid("wing: the name %q %s", fault.Clip(w.Name, fault.MaxQuoted), p)
	}
	if _, dup := r.wings[id]; dup {
		return r.invalid("wing %s is written twice", w.ID)
	}
	if r.wingNames[w.Name] {
		return r.invalid("two wings are named %q", fault.Clip(w.Name, fault.MaxQuoted))
	}
	if len(r.wings) >= r.lim.MaxWings {
		return r.limit("wings", r.lim.MaxWings)
	}
	if w.CreatedAt.IsZero() {
		return r.invalid("wing: created_at is missing")
	}
	r.wings[id] = int32(len(r.wings))
	r.wingNames[w.Name] = true
	return nil
}

func (r *Reader) checkRoom(rm *Room) error {
	id, err := r.id("id", rm.ID)
	if err != nil {
		return err
	}
	wid, err := r.id("wing_id", rm.WingID)
	if err != nil {
		return err
	}
	wing, ok := r.wings[wid]
	if !ok {
		return r.invalid("room %s names wing %s, which no record before it holds", rm.ID, rm.WingID)
	}
	if p := names.Place(rm.Name); p != "" {
		return r.invalid("room: the name %q %s", fault.Clip(rm.Name, fault.MaxQuoted), p)
	}
	if _, dup := r.rooms[id]; dup {
		return r.invalid("room %s is written twice", rm.ID)
	}
	key := fmt.Sprint(wing, "/", rm.Name)
	if r.roomNames[key] {
		return r.invalid("two rooms of wing %s are named %q", rm.WingID, fault.Clip(rm.Name, fault.MaxQuoted))
	}
	if len(r.rooms) >= r.lim.MaxRooms {
		return r.limit("rooms", r.lim.MaxRooms)
	}
	if rm.CreatedAt.IsZero() {
		return r.invalid("room: created_at is missing")
	}
	r.rooms[id] = roomRef{index: r.nRooms, wing: wing}
	r.nRooms++
	r.roomWings = append(r.roomWings, wing)
	r.roomNames[key] = true
	return nil
}

// requesters are the channels a drawer may have been requested by.
var requesters = []string{"", store.ByCLI, store.ByHTTP, store.ByMCP, store.ByUnknown, store.ByDaemon}

func (r *Reader) checkDrawer(d *Drawer) error {
	id, err := r.id("id", d.ID)
	if err != nil {
		return err
	}
	if _, dup := r.drawers[id]; dup {
		return r.invalid("drawer %s is written twice", d.ID)
	}
	wid, err := r.id("wing_id", d.WingID)
	if err != nil {
		return err
	}
	rid, err := r.id("room_id", d.RoomID)
	if err != nil {
		return err
	}
	wing, ok := r.wings[wid]
	if !ok {
		return r.invalid("drawer %s names wing %s, which no record before it holds", d.ID, d.WingID)
	}
	room, ok := r.rooms[rid]
	if !ok {
		return r.invalid("drawer %s names room %s, which no record before it holds", d.ID, d.RoomID)
	}
	if room.wing != wing {
		return r.invalid("drawer %s names room %s, which is not in wing %s", d.ID, d.RoomID, d.WingID)
	}
	if p := names.Drawer(d.Name); d.Name != "" && p != "" {
		return r.invalid("drawer %s: the name %q %s", d.ID, fault.Clip(d.Name, fault.MaxQuoted), p)
	}
	if err := store.CheckContent("content", d.Content); err != nil {
		return r.invalid("drawer %s: %s", d.ID, fault.As(err).Msg)
	}
	tags, err := store.CheckTags(d.Tags)
	if err != nil {
		return r.invalid("drawer %s: %s", d.ID, fault.As(err).Msg)
	}
	if len(tags) != len(d.Tags) {
		return r.invalid("drawer %s: a tag is given twice", d.ID)
	}
	if err := store.CheckSourceKind(d.Source.Kind); err != nil {
		return r.invalid("drawer %s: %s", d.ID, fault.As(err).Msg)
	}
	if len(d.Source.Origin) > 0 && !json.Valid(d.Source.Origin) {
		return r.invalid("drawer %s: source.origin is not JSON", d.ID)
	}
	if !slices.Contains(requesters, d.Provenance.RequestedBy) {
		return r.invalid("drawer %s: provenance.requested_by %q is not one of cli, http, mcp, unknown, daemon", d.ID, fault.Clip(d.Provenance.RequestedBy, fault.MaxQuoted))
	}
	if d.CreatedAt.IsZero() || d.ValidFrom.IsZero() {
		return r.invalid("drawer %s: created_at and valid_from are required", d.ID)
	}
	if d.ValidTo != nil && d.ValidTo.Before(d.ValidFrom) {
		return r.invalid("drawer %s: valid_to is before valid_from", d.ID)
	}
	if d.SupersededBy != "" && d.ValidTo == nil {
		return r.invalid("drawer %s is superseded but still valid (no valid_to)", d.ID)
	}
	if d.Supersedes != "" {
		prev, err := r.id("supersedes", d.Supersedes)
		if err != nil {
			return err
		}
		prevRoom, ok := r.drawers[prev]
		if !ok {
			return r.invalid("drawer %s supersedes drawer %s, which no record before it holds (a chain's versions come oldest first)", d.ID, d.Supersedes)
		}
		if r.roomWing(prevRoom) != wing {
			return r.invalid("drawer %s in wing %s supersedes drawer %s of another wing; a drawer supersedes only one of its own wing", d.ID, d.WingID, d.Supersedes)
		}
		if prevRoom != room.index {
			return r.invalid("drawer %s supersedes drawer %s of another room; a drawer supersedes only one of its own room", d.ID, d.Supersedes)
		}
		if r.successor[prev] != id {
			return r.invalid("drawer %s supersedes drawer %s, whose superseded_by does not name it", d.ID, d.Supersedes)
		}
		delete(r.successor, prev)
	}
	if d.SupersededBy != "" {
		next, err := r.id("superseded_by", d.SupersededBy)
		if err != nil {
			return err
		}
		r.successor[id] = next
	}
	if len(r.drawers) >= r.lim.MaxDrawers {
		return r.limit("drawers", r.lim.MaxDrawers)
	}
	r.drawers[id] = room.index
	return nil
}

// roomWing is the wing index of a room index.
func (r *Reader) roomWing(index int32) int32 { return r.roomWings[index] }

func (r *Reader) drawerRef(field, v string) error {
	id, err := r.id(field, v)
	if err != nil {
		return err
	}
	if _, ok := r.drawers[id]; !ok {
		return r.invalid("%s: drawer %s is not held by a record before this one", field, v)
	}
	return nil
}

func (r *Reader) entityRef(field, v string) error {
	id, err := r.id(field, v)
	if err != nil {
		return err
	}
	if _, ok := r.entities[id]; !ok {
		return r.invalid("%s: entity %s is not held by a record before this one", field, v)
	}
	return nil
}

func (r *Reader) factRef(field, v string) error {
	id, err := r.id(field, v)
	if err != nil {
		return err
	}
	if _, ok := r.facts[id]; !ok {
		return r.invalid("%s: fact %s is not held by a record before this one", field, v)
	}
	return nil
}

func (r *Reader) confidence(field string, c float64) error {
	if math.IsNaN(c) || c < 0 || c > 1 {
		return r.invalid("%s: %v is not between 0 and 1", field, c)
	}
	return nil
}

func (r *Reader) checkEntity(e *Entity) error {
	id, err := r.id("id", e.ID)
	if err != nil {
		return err
	}
	if _, dup := r.entities[id]; dup {
		return r.invalid("entity %s is written twice", e.ID)
	}
	if err := store.CheckEntityName("name", e.Name); err != nil {
		return r.invalid("entity %s: %s", e.ID, fault.As(err).Msg)
	}
	if !graph.CheckKind(e.Kind) {
		return r.invalid("entity %s: kind %q is not one of %s", e.ID, fault.Clip(e.Kind, fault.MaxQuoted), strings.Join(graph.Kinds, ", "))
	}
	if len(e.Aliases) > 1000 {
		return r.invalid("entity %s has %d aliases; at most 1000 are accepted", e.ID, len(e.Aliases))
	}
	for _, a := range e.Aliases {
		if err := store.CheckEntityName("aliases", a); err != nil {
			return r.invalid("entity %s: %s", e.ID, fault.As(err).Msg)
		}
	}
	if len(r.entities) >= r.lim.MaxEntities {
		return r.limit("entities", r.lim.MaxEntities)
	}
	r.entities[id] = struct{}{}
	return nil
}

func (r *Reader) checkEntityLink(l *EntityLink) error {
	if _, err := r.id("id", l.ID); err != nil {
		return err
	}
	if err := r.entityRef("from", l.From); err != nil {
		return err
	}
	if err := r.entityRef("to", l.To); err != nil {
		return err
	}
	if l.Kind != graph.PossiblySameAs {
		return r.invalid("entity_link %s: kind %q is not %s", l.ID, fault.Clip(l.Kind, fault.MaxQuoted), graph.PossiblySameAs)
	}
	return nil
}

func (r *Reader) checkMention(m *Mention) error {
	if err := r.drawerRef("drawer_id", m.DrawerID); err != nil {
		return err
	}
	if err := r.entityRef("entity_id", m.EntityID); err != nil {
		return err
	}
	if err := store.CheckEntityName("name", m.Name); err != nil {
		return r.invalid("mention: %s", fault.As(err).Msg)
	}
	return r.confidence("confidence", m.Confidence)
}

func (r *Reader) checkVector(v *Vector) error {
	if err := r.drawerRef("drawer_id", v.DrawerID); err != nil {
		return err
	}
	if strings.TrimSpace(v.Profile) == "" {
		return r.invalid("vector: profile is blank")
	}
	if v.Dimension <= 0 || v.Dimension > r.lim.MaxDimension {
		return r.invalid("vector: dimension %d is not between 1 and %d", v.Dimension, r.lim.MaxDimension)
	}
	if len(v.Vector) != v.Dimension {
		return r.invalid("vector: it holds %d numbers, its dimension says %d", len(v.Vector), v.Dimension)
	}
	return nil
}

func (r *Reader) checkSource(s *SourceState) error {
	if len(s.Key) != 32 || !lowerHex(s.Key) {
		return r.invalid("source: key %q is not 32 lowercase hex digits", fault.Clip(s.Key, fault.MaxQuoted))
	}
	if _, dup := r.sources[s.Key]; dup {
		return r.invalid("source %s is written twice", s.Key)
	}
	wid, err := r.id("wing_id", s.WingID)
	if err != nil {
		return err
	}
	wing, ok := r.wings[wid]
	if !ok {
		return r.invalid("source %s names wing %s, which no record before it holds", s.Key, s.WingID)
	}
	if strings.TrimSpace(s.Adapter) == "" {
		return r.invalid("source %s: adapter is blank", s.Key)
	}
	if s.Documents < 0 {
		return r.invalid("source %s: documents is negative", s.Key)
	}
	if len(r.sources) >= r.lim.MaxSources {
		return r.limit("sources", r.lim.MaxSources)
	}
	r.sources[s.Key] = wing
	return nil
}

func (r *Reader) checkDocument(d *Document) error {
	wing, ok := r.sources[d.Source]
	if !ok {
		return r.invalid("document %q names source %q, which no record before it holds", fault.Clip(d.ID, fault.MaxQuoted), fault.Clip(d.Source, fault.MaxQuoted))
	}
	wid, err := r.id("wing_id", d.WingID)
	if err != nil {
		return err
	}
	if w, ok := r.wings[wid]; !ok || w != wing {
		return r.invalid("document %q: wing %s is not its source's", fault.Clip(d.ID, fault.MaxQuoted), d.WingID)
	}
	if d.ID == "" {
		return r.invalid("document: id is empty")
	}
	for i, c := range d.Chunks {
		if _, err := r.id(fmt.Sprintf("chunks[%d].drawer_id", i), c.DrawerID); err != nil {
			return err
		}
	}
	return nil
}

func (r *Reader) checkFact(f *Fact) error {
	id, err := r.id("id", f.ID)
	if err != nil {
		return err
	}
	if _, dup := r.facts[id]; dup {
		return r.invalid("fact %s is written twice", f.ID)
	}
	if err := r.entityRef("subject", f.Subject); err != nil {
		return err
	}
	if err := r.entityRef("object", f.Object); err != nil {
		return err
	}
	if !graph.CheckPredicate(f.Predicate) {
		return r.invalid("fact %s: predicate %q is not one of %s", f.ID, fault.Clip(f.Predicate, fault.MaxQuoted), strings.Join(graph.Predicates, ", "))
	}
	if err := r.confidence("confidence", f.Confidence); err != nil {
		return err
	}
	if f.RecordedAt.IsZero() || f.ValidFrom.IsZero() {
		return r.invalid("fact %s: valid_from and recorded_at are required", f.ID)
	}
	for _, ref := range []struct{ field, v string }{{"drawer_id", f.DrawerID}, {"closed_by", f.ClosedBy}, {"superseded_by", f.SupersededBy}} {
		if err := r.optID(ref.field, ref.v); err != nil {
			return err
		}
	}
	for i, e := range f.Evidence {
		if _, err := r.id(fmt.Sprintf("evidence[%d].id", i), e.ID); err != nil {
			return err
		}
		if err := r.optID(fmt.Sprintf("evidence[%d].drawer_id", i), e.DrawerID); err != nil {
			return err
		}
		if err := r.confidence(fmt.Sprintf("evidence[%d].confidence", i), e.Confidence); err != nil {
			return err
		}
	}
	if len(r.facts) >= r.lim.MaxFacts {
		return r.limit("facts", r.lim.MaxFacts)
	}
	r.facts[id] = struct{}{}
	return nil
}

func (r *Reader) checkDecision(d *Decision) error {
	if _, err := r.id("id", d.ID); err != nil {
		return err
	}
	if err := r.factRef("from", d.From); err != nil {
		return err
	}
	if err := r.factRef("to", d.To); err != nil {
		return err
	}
	if !slices.Contains(graph.LinkKinds, d.Kind) {
		return r.invalid("decision %s: kind %q is not one of %s", d.ID, fault.Clip(d.Kind, fault.MaxQuoted), strings.Join(graph.LinkKinds, ", "))
	}
	return r.optID("drawer_id", d.DrawerID)
}

func (r *Reader) checkEnd(e *End) error {
	truncated := func(format string, args ...any) error {
		return r.fail(fault.ExportTruncated, "the file was cut short or altered after it was written; export it again", format, args...)
	}
	if e.Records != r.records {
		return truncated("the end record counts %d records, the file holds %d before it", e.Records, r.records)
	}
	if want := "sha256:" + hex.EncodeToString(r.digest.Sum(nil)); e.Digest != want {
		return truncated("the end record's digest %q is not the digest of the lines before it", fault.Clip(e.Digest, fault.MaxQuoted))
	}
	for len(r.successor) > 0 {
		for d, next := range r.successor {
			return r.invalid("drawer %s is superseded by drawer %s, which the file does not hold", d, next)
		}
	}
	r.ended = true
	return nil
}

// lowerHex reports whether s is made of lowercase hexadecimal digits only.
func lowerHex(s string) bool {
	for _, c := range []byte(s) {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
