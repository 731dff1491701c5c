// Package backup writes, checks and restores whole-palace backups: a
// header (format, palace, schema, store version, counts, the body's
// digest) and the body, a consistent dump of the store at one version,
// full or incremental. The store takes part through its store.Dumper
// capability; a backend without it answers loci::backup::unsupported.
//
// A file is a header block of HeaderSize bytes (the header as JSON,
// padded with spaces and ended by a newline), then the body: the
// backend's dump (Badger: its own length-prefixed KVList frames). The
// digest of the body is in the header at the start: WriteFile reserves
// the block, writes the body, then writes the header at offset 0; Write,
// which has a plain stream, dumps the same snapshot twice (once for the
// digest, once to send), which the snapshot answers with the same bytes.
package backup

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/store"
)

// Format is the Header.Format of every backup file.
const Format = "loci-backup"

// FormatVersion is the file format this build writes and the newest it
// reads.
const FormatVersion = 1

// HeaderSize is the size of the header block at the start of a file.
const HeaderSize = 4096

// Header is what a backup file starts with.
type Header struct {
	Format       string    `json:"format"`  // "loci-backup"
	Version      int       `json:"version"` // the file format's version
	PalaceID     string    `json:"palace_id"`
	Backend      string    `json:"backend"` // the store family that wrote the body
	SchemaHash   string    `json:"schema_hash"`
	DataVersion  int       `json:"data_version"`
	Since        uint64    `json:"since"`         // 0 for a full backup
	StoreVersion uint64    `json:"store_version"` // the store version the body reaches
	CreatedAt    time.Time `json:"created_at"`
	Counts       Counts    `json:"counts"`
	Records      int64     `json:"records"`
	BodyBytes    int64     `json:"body_bytes"`
	BodyDigest   string    `json:"body_digest"` // "sha256:<hex>"
	// HeaderDigest is the digest of the header's JSON with this field
	// empty: a damaged header is refused, not misread.
	HeaderDigest string `json:"header_digest"`
}

// Counts are the palace's counts at the backup's version.
type Counts struct {
	Wings   int `json:"wings"`
	Rooms   int `json:"rooms"`
	Drawers int `json:"drawers"`
}

// Options shape one backup.
type Options struct {
	// Since makes an incremental backup of what changed after the
	// store version an earlier backup reached (its Header.StoreVersion);
	// 0 is a full backup.
	Since uint64
	// Progress, when set, is called now and then with the body's bytes
	// and records written so far.
	Progress func(bytes, records int64)
	// PalaceID, when set, is the palace the backup must be of (an
	// incremental's base names it): another palace is refused with
	// loci::backup::palace_mismatch before anything is written.
	PalaceID string
	// OnHeader, when set, is called with the header before Write writes
	// its first byte (a stream's response headers: its length, palace).
	OnHeader func(Header)
}

// Size is the file's size: the header block and the body.
func (h Header) Size() int64 { return HeaderSize + h.BodyBytes }

// Unsupported is the refusal of a backup (or a restore) of a store
// without a consistent dump of loci's: a shared store (PostgreSQL) is
// backed up with the database's own tools, pg_dump.
func Unsupported(db store.DB) *fault.Error {
	if db.Shared() {
		return fault.Newf(fault.BackupUnsupported,
			"back the database up with PostgreSQL's own tools: pg_dump -Fc -h HOST -p PORT -U USER DATABASE (the database at "+db.Location()+
				"), restored with pg_restore; `loci export` writes the palace's records too",
			"loci does not back up a shared store: the %s database is backed up with pg_dump", db.Backend())
	}
	return fault.Newf(fault.BackupUnsupported, "back up with the store's own tools, or use `loci export`",
		"the %s store cannot be backed up by loci (it has no consistent dump)", db.Backend())
}

// begin opens the snapshot and fills the header's description of it.
func begin(ctx context.Context, db store.DB, o Options) (store.Snapshot, Header, error) {
	d, ok := db.(store.Dumper)
	if !ok {
		return nil, Header{}, Unsupported(db)
	}
	// The palace's identity first: the first time it is asked, it is
	// written, a commit the snapshot then holds.
	id, err := store.PalaceID(ctx, db)
	if err != nil {
		return nil, Header{}, err
	}
	if o.PalaceID != "" && o.PalaceID != id {
		return nil, Header{}, fault.Newf(fault.BackupPalaceMismatch, "take a full backup of this palace (leave --since out), or back up the palace the earlier backup came from",
			"the earlier backup is of palace %s; this palace is %s", o.PalaceID, id)
	}
	st, err := db.Migrator(store.Steps()).State(ctx)
	if err != nil {
		return nil, Header{}, err
	}
	snap, err := d.Snapshot(ctx)
	if err != nil {
		return nil, Header{}, err
	}
	h := Header{Format: Format, Version: FormatVersion, PalaceID: id, Backend: db.Backend(), SchemaHash: st.SchemaHash,
		DataVersion: st.DataVersion, Since: o.Since, StoreVersion: snap.Version(), CreatedAt: time.Now().UTC().Truncate(time.Millisecond)}
	if o.Since > h.StoreVersion {
		snap.Close()
		return nil, Header{}, fault.Newf(fault.BackupInvalid, "give the store_version of an earlier backup of this palace (loci backup verify FILE --json shows it)",
			"since %d is beyond this palace's store version %d", o.Since, h.StoreVersion)
	}
	err = snap.View(func(r store.Reader) error {
		c, err := r.Counts()
		h.Counts = Counts{Wings: c.Wings, Rooms: c.Rooms, Drawers: c.Drawers}
		return err
	})
	if err != nil {
		snap.Close()
		return nil, Header{}, err
	}
	return snap, h, nil
}

func digestOf(h hash.Hash) string { return "sha256:" + hex.EncodeToString(h.Sum(nil)) }

// headerDigest is the digest of the header's JSON without its own.
func headerDigest(h Header) string {
	h.HeaderDigest = ""
	j, _ := json.Marshal(h)
	sum := sha256.Sum256(j)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// encodeHeader is the header block: the JSON, spaces, a newline.
func encodeHeader(h Header) ([]byte, error) {
	h.HeaderDigest = headerDigest(h)
	j, err := json.Marshal(h)
	if err != nil {
		return nil, err
	}
	if len(j)+1 > HeaderSize {
		return nil, fmt.Errorf("backup: the header takes %d bytes, more than its block", len(j))
	}
	b := bytes.Repeat([]byte{' '}, HeaderSize)
	copy(b, j)
	b[HeaderSize-1] = '\n'
	return b, nil
}

// Write writes a backup of db to w (header first, then the body). The
// digest must be in the header, so the body is dumped twice from the one
// snapshot: once into the digest, once into w.
func Write(ctx context.Context, db store.DB, w io.Writer, o Options) (Header, error) {
	snap, h, err := begin(ctx, db, o)
	if err != nil {
		return Header{}, err
	}
	defer snap.Close()
	sum := sha256.New()
	st, err := snap.Dump(ctx, o.Since, sum, nil)
	if err != nil {
		return Header{}, err
	}
	h.Records, h.BodyBytes, h.BodyDigest = st.Records, st.Bytes, digestOf(sum)
	h.HeaderDigest = headerDigest(h)
	block, err := encodeHeader(h)
	if err != nil {
		return Header{}, err
	}
	if o.OnHeader != nil {
		o.OnHeader(h)
	}
	if _, err := w.Write(block); err != nil {
		return h, err
	}
	bw := bufio.NewWriterSize(w, 256<<10)
	again, err := snap.Dump(ctx, o.Since, bw, o.Progress)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil && again != st {
		err = fmt.Errorf("backup: the snapshot dumped %d records in %d bytes, then %d in %d", st.Records, st.Bytes, again.Records, again.Bytes)
	}
	return h, err
}

// WriteFile writes a backup of db to path through a temporary file in
// the same folder, fsynced and renamed into place, so that a crash never
// leaves a file at path that looks complete: the header block is
// reserved, the body written and digested, then the header written at
// offset 0, the file synced, renamed, and the folder synced.
func WriteFile(ctx context.Context, db store.DB, path string, o Options) (Header, error) {
	snap, h, err := begin(ctx, db, o)
	if err != nil {
		return Header{}, err
	}
	defer snap.Close()
	return Commit(path, func(f *os.File) (Header, error) {
		if _, err := f.Write(make([]byte, HeaderSize)); err != nil {
			return h, err
		}
		sum := sha256.New()
		bw := bufio.NewWriterSize(io.MultiWriter(f, sum), 256<<10)
		st, err := snap.Dump(ctx, o.Since, bw, o.Progress)
		if err == nil {
			err = bw.Flush()
		}
		if err != nil {
			return h, err
		}
		h.Records, h.BodyBytes, h.BodyDigest = st.Records, st.Bytes, digestOf(sum)
		h.HeaderDigest = headerDigest(h)
		block, err := encodeHeader(h)
		if err != nil {
			return h, err
		}
		_, err = f.WriteAt(block, 0)
		return h, err
	})
}

// Commit creates path through a temporary file in its folder: fill
// writes it, then it is synced, closed, renamed to path and the folder
// synced. On any failure the temporary file is removed and nothing is at
// path. The CLI writes a downloaded backup with it.
func Commit(path string, fill func(*os.File) (Header, error)) (h Header, err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return Header{}, fault.Wrap(fault.IOFailed, err, "cannot create a file in "+dir+": "+err.Error(), "check that the folder exists and is writable")
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if h, err = fill(f); err != nil {
		return h, err
	}
	if err = f.Sync(); err != nil {
		return h, fault.Wrap(fault.IOFailed, err, "cannot sync "+tmp+": "+err.Error(), "check the disk")
	}
	if err = f.Close(); err != nil {
		return h, fault.Wrap(fault.IOFailed, err, "cannot close "+tmp+": "+err.Error(), "check the disk")
	}
	if err = os.Rename(tmp, path); err != nil {
		return h, fault.Wrap(fault.IOFailed, err, "cannot rename the backup into place: "+err.Error(), "check that "+path+" is not a folder")
	}
	if d, derr := os.Open(dir); derr == nil {
		err = d.Sync()
		d.Close()
	}
	return h, err
}

// ReadHeader reads and checks a backup file's header without reading
// its body.
func ReadHeader(path string) (Header, error) {
	f, err := os.Open(path)
	if err != nil {
		return Header{}, fault.Wrap(fault.BackupInvalid, err, "cannot open "+path+": "+err.Error(), "give the path of a backup file")
	}
	defer f.Close()
	return DecodeHeader(f)
}

// DecodeHeader reads and checks the header block from the start of r.
func DecodeHeader(r io.Reader) (Header, error) {
	block := make([]byte, HeaderSize)
	n, err := io.ReadFull(r, block)
	prefix := []byte(`{"format":"` + Format + `"`)
	ours := bytes.HasPrefix(block[:n], []byte("{")) && bytes.Contains(block[:n], []byte(`"format":"`+Format+`"`))
	if !ours {
		if n < len(prefix) && bytes.HasPrefix(prefix, block[:n]) && n > 0 {
			return Header{}, truncated(int64(n), "the file ends inside its header")
		}
		return Header{}, fault.New(fault.BackupInvalid, "not a loci backup: it does not start with a loci-backup header (byte 0)",
			"give a file written by `loci backup`")
	}
	if err != nil {
		return Header{}, truncated(int64(n), "the file ends inside its header block")
	}
	var h Header
	end := bytes.IndexByte(block, '\n')
	if end < 0 || block[HeaderSize-1] != '\n' || len(bytes.TrimRight(block[:HeaderSize-1], " ")) != bytes.LastIndexByte(block[:HeaderSize-1], '}')+1 {
		return Header{}, corrupt(0, "the header block is damaged")
	}
	text := bytes.TrimRight(block[:HeaderSize-1], " ")
	// A newer format may add fields: its version is read first.
	var v struct {
		Version int `json:"version"`
	}
	if json.Unmarshal(text, &v) == nil && v.Version > FormatVersion {
		return Header{Version: v.Version}, futureVersion(Header{Version: v.Version})
	}
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&h); err != nil {
		return Header{}, corrupt(0, "the header does not decode: "+err.Error())
	}
	switch {
	case h.Version > FormatVersion:
		return h, futureVersion(h)
	case h.Version < 1:
		return Header{}, corrupt(0, fmt.Sprintf("the header names format version %d", h.Version))
	case h.PalaceID == "" || h.Backend == "":
		return Header{}, corrupt(0, "the header names no palace or no backend")
	case h.BodyBytes < 0 || h.Records < 0 || h.StoreVersion < h.Since:
		return Header{}, corrupt(0, fmt.Sprintf("the header is inconsistent: %d body bytes, %d records, since %d, store version %d", h.BodyBytes, h.Records, h.Since, h.StoreVersion))
	case !strings.HasPrefix(h.BodyDigest, "sha256:") || len(h.BodyDigest) != len("sha256:")+64:
		return Header{}, corrupt(0, "the header's digest is not sha256:<64 hex digits>")
	case h.HeaderDigest != headerDigest(h):
		return Header{}, corrupt(0, "the header does not match its own digest (it was changed or damaged)")
	}
	return h, nil
}

// truncated and corrupt say why in a sentence of ours, whole (Newf would
// cut it as it cuts a quoted input: "the body's digest is sha256:…, th…").
func truncated(off int64, why string) error {
	return fault.New(fault.BackupTruncated, fmt.Sprintf("%s (byte %d)", fault.Clip(why, fault.MaxMsg), off),
		"the file was cut short (an interrupted copy or download?): use a complete copy, or take a new backup")
}

func corrupt(off int64, why string) error {
	return fault.New(fault.BackupCorrupt, fmt.Sprintf("%s (byte %d)", fault.Clip(why, fault.MaxMsg), off),
		"the file is damaged: use another copy, or take a new backup")
}

func futureVersion(h Header) error {
	return fault.Newf(fault.BackupFutureVersion, "restore it with the loci release that wrote it or a newer one",
		"the backup's format version %d is newer than this loci reads (%d)", h.Version, FormatVersion)
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// Verify reads a whole backup from r and checks it end to end: the
// header, the body's framing and version range (the backend's checker),
// its length, its record count and its digest. A refusal is a fault
// naming the byte offset (from the file's start) where it makes sense.
func Verify(ctx context.Context, r io.Reader) (Header, error) {
	h, err := DecodeHeader(r)
	if err != nil {
		return h, err
	}
	check, ok := store.DumpCheckerFor(h.Backend)
	if !ok {
		return h, fault.Newf(fault.BackupUnsupported, "verify and restore it with a loci build that has the "+h.Backend+" store",
			"the backup's body is of the %s store, which this build lacks", h.Backend)
	}
	sum := sha256.New()
	body := &countingReader{r: io.TeeReader(io.LimitReader(r, h.BodyBytes), sum)}
	records, err := check(contextReader{ctx, body}, h.Since, h.StoreVersion)
	if err != nil {
		if ctx.Err() != nil {
			return h, ctx.Err()
		}
		var dc *store.DumpCorrupt
		if errors.As(err, &dc) {
			if dc.Truncated && body.n < h.BodyBytes {
				return h, truncated(HeaderSize+body.n, fmt.Sprintf("the file ends after %d of its %d body bytes", body.n, h.BodyBytes))
			}
			return h, corrupt(HeaderSize+dc.Offset, dc.Reason)
		}
		return h, fault.Wrap(fault.IOFailed, err, "cannot read the backup: "+err.Error(), "check the file and the disk")
	}
	if body.n < h.BodyBytes {
		return h, truncated(HeaderSize+body.n, fmt.Sprintf("the file ends after %d of its %d body bytes", body.n, h.BodyBytes))
	}
	if n, _ := io.ReadFull(r, make([]byte, 1)); n > 0 {
		return h, corrupt(h.Size(), "bytes follow the body's end")
	}
	if d := digestOf(sum); d != h.BodyDigest {
		return h, corrupt(HeaderSize, fmt.Sprintf("the body's digest is %s, the header says %s", d, h.BodyDigest))
	}
	if records != h.Records {
		return h, corrupt(HeaderSize, fmt.Sprintf("the body holds %d records, the header says %d", records, h.Records))
	}
	return h, nil
}

// VerifyFile is Verify of the file at path.
func VerifyFile(ctx context.Context, path string) (Header, error) {
	f, err := os.Open(path)
	if err != nil {
		return Header{}, fault.Wrap(fault.BackupInvalid, err, "cannot open "+path+": "+err.Error(), "give the path of a backup file")
	}
	defer f.Close()
	h, err := Verify(ctx, bufio.NewReaderSize(f, 1<<20))
	return h, naming(path, err)
}

// naming puts the file's path in front of a fault's message.
func naming(path string, err error) error {
	var fe *fault.Error
	if !errors.As(err, &fe) {
		return err
	}
	c := *fe
	c.Msg = path + ": " + c.Msg
	return &c
}

// contextReader stops reading once ctx is done.
type contextReader struct {
	ctx context.Context
	r   io.Reader
}

func (c contextReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
