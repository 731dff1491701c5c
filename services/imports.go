package services

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/loci-dev/loci/actors"
	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/config"
	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/services/kinds"
	"github.com/loci-dev/loci/store"
)

// Imports takes export files into the palace (POST /api/imports): it
// spools the file under the palace's folder, checks all of it before
// anything changes, then reports what an import would change (a dry run)
// or queues the durable import job that applies it.
type Imports struct {
	DB   store.DB
	Jobs *actors.Jobs
	// Dir is the spool folder (<palace>/imports), the import kind's.
	Dir string
	// Gate refuses writes while the palace's disk is below its reserve
	// (the writer's gate: loci::store::disk_full); the spool checks it as
	// it grows.
	Gate func() error
	// Dedup is the palace's duplicate rules (a dry run judges with them).
	Dedup store.Dedup
	// Profile is the default embedding profile (a dry run reports which
	// vectors would be kept).
	Profile store.ImportProfile
	// MaxBytes bounds one upload (import.max_bytes; 0: the default): a
	// body longer is refused with loci::export::too_large (413) as soon
	// as it is known to be, its spool removed.
	MaxBytes int64
	Log      *slog.Logger

	mu       sync.Mutex
	spooling map[string]bool // spooled files whose request is not done
}

// ImportOptions are an import request's options.
type ImportOptions struct {
	// WingMap renames the file's wings (its name -> the palace's).
	WingMap map[string]string
	// DryRun reports what would change and changes nothing.
	DryRun bool
	// SkipUnknown skips records of types this version does not know.
	SkipUnknown bool
	// RequestedBy and Channel say who asked, as for any job.
	RequestedBy, Channel string
}

// spoolChunk is how much of a body is copied between two checks of the
// free space.
const spoolChunk = 1 << 20

// TooLarge is the refusal of an upload longer than limit bytes
// (import.max_bytes), with a way that exists to import the palace.
func TooLarge(limit int64) error {
	return fault.Newf(fault.ExportTooLarge,
		"export the palace a few wings a file (`loci export --wing NAME --out NAME.jsonl`) and import each, or raise import.max_bytes in the daemon's configuration (then restart it) if the file is trusted",
		"the import is larger than import.max_bytes (%d bytes); nothing was imported", limit)
}

func (s *Imports) maxBytes() int64 {
	if s.MaxBytes > 0 {
		return s.MaxBytes
	}
	return config.DefaultImportMaxBytes
}

// Import spools body, checks the whole file (the export Reader's checks
// and the palace's rules for every record), then answers the report of a
// dry run, or the queued import job. A bad file is its first error,
// naming the line and byte offset; the spool is removed and nothing
// changed.
func (s *Imports) Import(ctx context.Context, body io.Reader, o ImportOptions) (*api.ImportReport, *store.Job, error) {
	return s.ImportSized(ctx, body, -1, o)
}

// ImportSized is Import of a body whose length is known (size >= 0, an
// upload's Content-Length): one longer than MaxBytes is refused before
// any of it is read.
func (s *Imports) ImportSized(ctx context.Context, body io.Reader, size int64, o ImportOptions) (*api.ImportReport, *store.Job, error) {
	if size > s.maxBytes() {
		return nil, nil, TooLarge(s.maxBytes())
	}
	name, err := s.spool(ctx, body)
	if err != nil {
		return nil, nil, err
	}
	path := filepath.Join(s.Dir, name)
	keep := false
	defer func() {
		s.mu.Lock()
		delete(s.spooling, name)
		s.mu.Unlock()
		if !keep {
			_ = os.Remove(path)
		}
	}()
	p := kinds.ImportParams{Spool: name, WingMap: o.WingMap, SkipUnknown: o.SkipUnknown}
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fault.Wrap(fault.ServerFailed, err, "the spooled import file cannot be read: "+err.Error(), "see the log")
	}
	rep, err := kinds.JudgeImport(ctx, s.DB, f, p, s.Dedup, s.Profile, !o.DryRun)
	f.Close()
	if err != nil {
		return nil, nil, err
	}
	notes := s.wingMapNotes(ctx, o.WingMap)
	if o.DryRun {
		rep.DryRun = true
		rep.Notes = notes
		return &rep, nil, nil
	}
	p.Records, p.Notes = rep.Records, notes
	job, err := s.Jobs.Submit(ctx, actors.Submission{Type: kinds.KindImport, RequestedBy: o.RequestedBy, Channel: o.Channel, Typed: p})
	if err != nil {
		return nil, nil, err
	}
	keep = true
	return nil, job, nil
}

// spool copies body to a new file of the spool folder, synced, checking
// the free space as it grows; on any failure the file is removed.
func (s *Imports) spool(ctx context.Context, body io.Reader) (name string, err error) {
	if s.Gate != nil {
		if err := s.Gate(); err != nil {
			return "", err
		}
	}
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return "", fault.Wrap(fault.ServerFailed, err, "cannot make the import folder: "+err.Error(), "check the palace folder's permissions")
	}
	s.Sweep(ctx)
	name = kinds.ImportSpoolName()
	s.mu.Lock()
	if s.spooling == nil {
		s.spooling = map[string]bool{}
	}
	s.spooling[name] = true
	s.mu.Unlock()
	path := filepath.Join(s.Dir, name)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", fault.Wrap(fault.ServerFailed, err, "cannot spool the import: "+err.Error(), "check the palace folder's permissions")
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fault.Wrap(fault.ServerFailed, cerr, "cannot spool the import: "+cerr.Error(), "see the log")
		}
		if err != nil {
			_ = os.Remove(path)
			s.mu.Lock()
			delete(s.spooling, name)
			s.mu.Unlock()
		}
	}()
	buf := make([]byte, 64<<10)
	var written int64
	limit := s.maxBytes()
	// One byte more than the limit is read: a body of exactly the limit
	// is taken.
	body = io.LimitReader(body, limit+1)
	for {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		if s.Gate != nil {
			if err := s.Gate(); err != nil {
				return "", err
			}
		}
		n, err := io.CopyBuffer(f, io.LimitReader(body, spoolChunk), buf)
		written += n
		if written > limit {
			return "", TooLarge(limit)
		}
		if err != nil {
			var mbe interface{ Timeout() bool }
			if errors.As(err, &mbe) && mbe.Timeout() {
				return "", fault.Wrap(fault.InputInvalid, err, "body: the upload stalled", "send the file again")
			}
			return "", fault.Wrap(fault.InputInvalid, err, fmt.Sprintf("body: cannot be read after %d bytes: %v", written, err), "send the file again")
		}
		if n < spoolChunk {
			break
		}
	}
	if written == 0 {
		return "", fault.Invalid("body", "is empty; send the export file (JSON Lines) as the body")
	}
	if err := f.Sync(); err != nil {
		return "", fault.Wrap(fault.ServerFailed, err, "cannot spool the import: "+err.Error(), "see the log")
	}
	// The folder's entry too: the job queued next reads the file after a
	// crash of the machine.
	if d, err := os.Open(s.Dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return name, nil
}

// Sweep removes the spooled files no import job will read: not being
// uploaded, and not the file of a queued, running or paused import job
// (a job that completes or fails removes its own; one cancelled or
// deleted leaves it here).
func (s *Imports) Sweep(ctx context.Context) {
	entries, err := os.ReadDir(s.Dir)
	if err != nil {
		return
	}
	live := map[string]bool{}
	s.mu.Lock()
	for n := range s.spooling {
		live[n] = true
	}
	s.mu.Unlock()
	err = s.DB.View(ctx, func(r store.Reader) error {
		return r.ActiveJobs(func(j *store.Job) bool {
			if j.Kind == kinds.KindImport {
				if in, err := r.JobInput(j.ID); err == nil {
					var p kinds.ImportParams
					if json.Unmarshal(in, &p) == nil {
						live[p.Spool] = true
					}
				}
			}
			return true
		})
	})
	if err != nil {
		return
	}
	for _, e := range entries {
		if kinds.CheckSpoolName(e.Name()) == nil && !live[e.Name()] {
			if err := os.Remove(filepath.Join(s.Dir, e.Name())); err == nil && s.Log != nil {
				s.Log.Info("removed an import file no job reads", "file", e.Name())
			}
		}
	}
}

// wingMapNotes say, for each --wing-map pair, where the file's wing goes
// in this palace: a new wing, or merged into a wing the palace holds.
func (s *Imports) wingMapNotes(ctx context.Context, wingMap map[string]string) []string {
	if len(wingMap) == 0 {
		return nil
	}
	froms := make([]string, 0, len(wingMap))
	for from := range wingMap {
		froms = append(froms, from)
	}
	slices.Sort(froms)
	var notes []string
	_ = s.DB.View(ctx, func(r store.Reader) error {
		for _, from := range froms {
			to := wingMap[from]
			if w, err := r.WingByName(to); err == nil && w != nil {
				notes = append(notes, fmt.Sprintf("wing-map %s=%s: the palace already holds a wing %q: the file's wing is merged into it (rooms of the same name merged, the others added; a record whose id the palace holds as another record is a conflict and the palace's is kept)", from, to, to))
			} else {
				notes = append(notes, fmt.Sprintf("wing-map %s=%s: the file's wing %q becomes a new wing %q (unless the palace holds the wing's id, then a conflict: the palace's wing is kept)", from, to, from, to))
			}
		}
		return nil
	})
	return notes
}

// ParseWingMap reads --wing-map's pairs, each FROM=TO (the query's
// repeated wing_map): the file's wing FROM is imported as wing TO. Both
// names follow the palace's name rules (FROM holds no '='); a wing mapped
// twice is refused.
func ParseWingMap(pairs []string) (map[string]string, error) {
	if len(pairs) == 0 {
		return nil, nil
	}
	out := map[string]string{}
	for _, pair := range pairs {
		from, to, ok := strings.Cut(pair, "=")
		if !ok {
			return nil, fault.Invalid("wing_map", fmt.Sprintf("%q is not FROM=TO", pair))
		}
		for _, n := range []string{from, to} {
			if err := store.CheckPlace("wing", n); err != nil {
				e := fault.As(err)
				return nil, fault.Wrap(e.Code, err, "wing_map: "+e.Msg, e.Help)
			}
		}
		if _, dup := out[from]; dup {
			return nil, fault.Invalid("wing_map", fmt.Sprintf("maps wing %q twice", from))
		}
		out[from] = to
	}
	return out, nil
}
