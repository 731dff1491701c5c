package kinds

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sync"

	"github.com/loci-dev/loci/actors"
	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/export"
	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/store"
)

// KindImport is the import kind's name.
const KindImport = "import"

// ImportParams are an import job's parameters. Only the daemon submits
// one (POST /api/imports spools the file, checks all of it, then queues
// the job with Submission.Typed): no REST body or MCP argument can name
// a file.
type ImportParams struct {
	// Spool is the spooled file's name in the daemon's import folder.
	Spool string `json:"spool"`
	// WingMap renames wings on the way in (the file's name -> the
	// palace's).
	WingMap map[string]string `json:"wing_map,omitempty"`
	// SkipUnknown skips records of types this version does not know.
	SkipUnknown bool `json:"skip_unknown,omitempty"`
	// Records is how many records the file holds (its progress total).
	Records int64 `json:"records,omitempty"`
	// Notes are what the request's options do here, for the report.
	Notes []string `json:"notes,omitempty"`
}

// spoolName is what a spooled file's name looks like (ImportSpoolName).
var spoolName = regexp.MustCompile(`^import-[0-9a-f-]{36}\.jsonl$`)

// ImportSpoolName is the name of a new spooled file.
func ImportSpoolName() string { return "import-" + store.NewID() + ".jsonl" }

// CheckSpoolName refuses a name that is not one ImportSpoolName makes.
func CheckSpoolName(name string) error {
	if !spoolName.MatchString(name) {
		return fault.Invalid("spool", "is not a spooled import file's name")
	}
	return nil
}

// importState is an import job's checkpoint: the records applied (a
// replay reads the file again from its start and applies the records
// after them) and the report so far.
type importState struct {
	Records int64 `json:"records"`
	Offset  int64 `json:"offset"`
	// Done: the end record was applied (a replay after a crash that came
	// before the job's completion was recorded only reports).
	Done   bool             `json:"done,omitempty"`
	Report api.ImportReport `json:"report"`
}

// importBatch and importBatchBytes bound the records and the bytes of
// content of one transaction (an import's batch is one write of the
// job's); a variable for the tests.
var importBatch = 1024

const importBatchBytes = 1 << 20

// Import is the import kind: the records of an export file spooled in dir
// by POST /api/imports, checked whole before the job was queued, applied
// in batches through the writer with the file's position in the same
// transaction (a job replayed after a crash goes on after the last
// committed batch: no record twice, none lost). The spooled file is
// removed when the job completes or fails. v is the embedding profiles
// (nil: none): vectors of the default profile's identity are kept, and
// drawers without one are embedded after the job (the embed kind follows
// every kind that Files).
func Import(dir string, dd store.Dedup, v *actors.Vectors) actors.Kind {
	return actors.Define(KindImport, actors.Spec[ImportParams]{
		Files:  true,
		Writes: always,
		Decode: func(ctx context.Context, s actors.Submission, p ImportParams) (actors.Plan, error) {
			if s.Typed == nil {
				return actors.Plan{}, fault.Invalid("type", "import jobs are made by POST /api/imports with the export file as the body (loci import FILE)")
			}
			if err := CheckSpoolName(p.Spool); err != nil {
				return actors.Plan{}, err
			}
			if _, err := os.Stat(filepath.Join(dir, p.Spool)); err != nil {
				return actors.Plan{}, fault.Wrap(fault.InputInvalid, err, "spool: the spooled import file is missing", "import the file again")
			}
			// The spooled file is in this daemon's folder.
			return actors.Plan{Input: p, Priority: store.PriorityNormal, Local: actors.ThisDaemon}, nil
		},
		Run: func(ctx context.Context, r *actors.Run) (any, error) { return runImport(ctx, r, dir, dd, v) },
	})
}

// ImportProfile is the default embedding profile as an import keeps its
// vectors (zero: none configured).
func ImportProfile(v *actors.Vectors) store.ImportProfile {
	if v == nil || v.Default == "" || v.Profiles[v.Default] == nil {
		return store.ImportProfile{}
	}
	id := v.Profiles[v.Default].Identity()
	return store.ImportProfile{Name: v.Default, Provider: id.Provider, Model: id.Model, Pipeline: id.Pipeline, Dimension: id.Dimension}
}

func runImport(ctx context.Context, r *actors.Run, dir string, dd store.Dedup, v *actors.Vectors) (any, error) {
	var in ImportParams
	if err := json.Unmarshal(r.Job.Input, &in); err != nil {
		return nil, fault.Wrap(fault.StoreMalformed, err, "the job's input is unreadable", "import the file again")
	}
	if err := CheckSpoolName(in.Spool); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, in.Spool)
	var st importState
	_ = json.Unmarshal(r.Job.Checkpoint, &st)
	if st.Done {
		// Every record is in; the daemon stopped before the job's end was
		// recorded.
		_ = os.Remove(path)
		st.Report.Notes = in.Notes
		return st.Report, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fault.Wrap(fault.InputInvalid, err, "the spooled import file is gone (it is removed when its job ends)", "import the file again")
	}
	defer f.Close()
	rd := export.NewReader(f, export.ReaderOptions{SkipUnknown: in.SkipUnknown})
	im := &store.Importer{Dedup: dd, Profile: ImportProfile(v)}
	if st.Records > 0 {
		// A replay: the committed records are judged again without
		// writing, which rebuilds what they mapped (merged wings, rooms
		// and entities, duplicate drawers) for the records after them.
		err := r.DB().View(ctx, func(tx store.Reader) error {
			for n := int64(0); n < st.Records; n++ {
				rec, err := rd.Next()
				if err != nil {
					return err
				}
				if _, _, err := ApplyImportRecord(im, store.ImportTarget{R: tx}, rec, in.WingMap, nil); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		im.Commit()
		im.ForgetDry()
	}
	// The file is read and the drawers' signatures computed (in parallel)
	// one batch ahead of the writer.
	batches := make(chan importBatchOf, 1)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(batches)
		readBatches(rd, batches, stop, dd.Enabled)
	}()
	defer func() { close(stop); wg.Wait() }()
	for b := range batches {
		if b.err != nil {
			return nil, b.err
		}
		if r.Stopping() {
			return nil, actors.ErrStopped
		}
		recs, prep := b.recs, b.prep
		for len(recs) > 0 {
			n, err := importWrite(ctx, r, im, &st, recs, prep, in.WingMap, in.Records)
			if err != nil {
				return nil, err
			}
			recs, prep = recs[n:], prep[n:]
		}
	}
	_ = os.Remove(path)
	st.Report.Notes = in.Notes
	return st.Report, nil
}

// importBatchOf is a batch of records read ahead of the writer, with
// their drawers' signatures; err ends the reading.
type importBatchOf struct {
	recs []export.Record
	prep []*store.Prepared
	err  error
}

// readBatches reads the file into batches until its end, an error or
// stop, computing the current drawers' signatures (dedup: the palace
// judges duplicates) on every core.
func readBatches(rd *export.Reader, out chan<- importBatchOf, stop <-chan struct{}, dedup bool) {
	send := func(b importBatchOf) bool {
		select {
		case out <- b:
			return true
		case <-stop:
			return false
		}
	}
	defer func() {
		if p := recover(); p != nil {
			send(importBatchOf{err: fault.Newf(fault.ServerFailed, "see the log", "reading the import file failed: %v", p)})
		}
	}()
	for {
		var b importBatchOf
		end := false
		for size := 0; len(b.recs) < importBatch && size < importBatchBytes; {
			rec, err := rd.Next()
			if errors.Is(err, io.EOF) {
				end = true
				break
			}
			if err != nil {
				send(importBatchOf{err: err})
				return
			}
			b.recs = append(b.recs, rec)
			size += recordSize(rec)
		}
		b.prep = make([]*store.Prepared, len(b.recs))
		if dedup {
			prepareBatch(b.recs, b.prep)
		}
		if len(b.recs) > 0 && !send(b) {
			return
		}
		if end {
			return
		}
	}
}

// prepareBatch computes the signatures of a batch's current drawers on
// every core.
func prepareBatch(recs []export.Record, prep []*store.Prepared) {
	workers := runtime.GOMAXPROCS(0)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { _ = recover() }() // a drawer left unprepared is judged by the writer
			for i := w; i < len(recs); i += workers {
				if d := recs[i].Drawer; d != nil {
					prep[i] = store.PrepareImport(d.Content, d.ValidTo == nil)
				}
			}
		}()
	}
	wg.Wait()
}

// importWrite applies records in one transaction with the checkpoint;
// a batch too big for one is split (the first half written). It returns
// how many records it wrote.
func importWrite(ctx context.Context, r *actors.Run, im *store.Importer, st *importState, batch []export.Record, prep []*store.Prepared, wingMap map[string]string, total int64) (int, error) {
	for {
		next := *st
		err := r.Write(ctx, func(tx store.Tx) error {
			im.Begin()
			next = st.clone()
			for i, rec := range batch {
				id, res, err := ApplyImportRecord(im, store.ImportTarget{R: tx, W: tx}, rec, wingMap, prep[i])
				if err != nil {
					return err
				}
				TallyImport(&next.Report, rec, id, res)
			}
			last := batch[len(batch)-1]
			next.Records, next.Offset, next.Done = st.Records+int64(len(batch)), last.Offset, last.End != nil
			return nil
		}, &next, store.Progress{Current: st.Report.Records + countedRecords(batch), Total: totalOf(total), Message: "records imported"})
		if errors.Is(err, store.ErrTxnTooBig) && len(batch) > 1 {
			batch, prep = batch[:len(batch)/2], prep[:len(batch)/2]
			continue
		}
		if err != nil {
			return 0, err
		}
		im.Commit()
		*st = next
		return len(batch), nil
	}
}

func totalOf(n int64) *int64 {
	if n <= 0 {
		return nil
	}
	return &n
}

// clone copies a state deeply enough for a transaction to change it.
func (s importState) clone() importState {
	out := s
	out.Report.Types = maps.Clone(s.Report.Types)
	out.Report.Conflicts = slices.Clone(s.Report.Conflicts)
	out.Report.Skipped = slices.Clone(s.Report.Skipped)
	return out
}

// recordSize is what a record weighs in a transaction, roughly.
func recordSize(rec export.Record) int {
	switch {
	case rec.Drawer != nil:
		return 3*len(rec.Drawer.Content) + 512
	case rec.Vector != nil:
		return 4*len(rec.Vector.Vector) + 256
	}
	return 256
}

// ApplyImportRecord imports one record of an export file (t.W nil: judges
// it without writing), with the file's wing names renamed by wingMap. It
// returns the record's id and outcome; the header and end records have
// none (an empty outcome). An error names the record's line.
func ApplyImportRecord(im *store.Importer, t store.ImportTarget, rec export.Record, wingMap map[string]string, p *store.Prepared) (string, store.Imported, error) {
	var (
		id  string
		res store.Imported
		err error
	)
	switch {
	case rec.Unknown:
		res = skippedUnknown(rec)
	case rec.Wing != nil:
		w := rec.Wing
		name := w.Name
		if to, ok := wingMap[name]; ok {
			name = to
		}
		id = w.ID
		res, err = im.Wing(t, store.Wing{ID: w.ID, Name: name, Description: w.Description, CreatedAt: w.CreatedAt})
	case rec.Room != nil:
		rm := rec.Room
		id = rm.ID
		res, err = im.Room(t, store.Room{ID: rm.ID, WingID: rm.WingID, Name: rm.Name, Description: rm.Description, CreatedAt: rm.CreatedAt})
	case rec.Drawer != nil:
		d := rec.Drawer
		id = d.ID
		res, err = im.DrawerPrepared(t, store.Drawer{ID: d.ID, WingID: d.WingID, RoomID: d.RoomID, Name: d.Name, Content: d.Content,
			Tags:       slices.Clone(d.Tags),
			Source:     store.Source{Kind: d.Source.Kind, URI: d.Source.URI, Agent: d.Source.Agent, Origin: d.Source.Origin},
			Provenance: store.Provenance{RequestedBy: d.Provenance.RequestedBy, JobID: d.Provenance.JobID},
			ValidFrom:  d.ValidFrom, ValidTo: d.ValidTo, CreatedAt: d.CreatedAt, Supersedes: d.Supersedes,
			SupersededBy: d.SupersededBy, Diary: d.Diary}, p)
	case rec.Entity != nil:
		e := rec.Entity
		id = e.ID
		res, err = im.Entity(t, store.Entity{ID: e.ID, Name: e.Name, Kind: e.Kind, Key: e.Key, Aliases: slices.Clone(e.Aliases), CreatedAt: e.CreatedAt})
	case rec.Mention != nil:
		m := rec.Mention
		id = m.DrawerID + "/" + m.EntityID
		res, err = im.Mention(t, store.Mention{Drawer: m.DrawerID, Entity: m.EntityID, Name: m.Name, Rule: m.Rule,
			Confidence: m.Confidence, Extractor: m.Extractor, Origin: m.Origin, CreatedAt: m.CreatedAt})
	case rec.Vector != nil:
		x := rec.Vector
		id = x.DrawerID
		res, err = im.Vector(t, store.Embedding{DrawerID: x.DrawerID, Profile: x.Profile, Provider: x.Provider, Model: x.Model,
			Dimension: x.Dimension, Pipeline: x.Pipeline, CreatedAt: x.CreatedAt, Vector: x.Vector})
	case rec.Source != nil:
		s := rec.Source
		id = s.Key
		res, err = im.Source(t, store.SourceState{Key: s.Key, Identity: store.SourceIdentity{Adapter: s.Adapter, Account: s.Account, Locator: s.Locator},
			WingID: s.WingID, LastJob: s.LastJob, LastRun: s.LastRun})
	case rec.Document != nil:
		d := rec.Document
		id = d.ID
		chunks := make([]store.ChunkState, len(d.Chunks))
		for i, c := range d.Chunks {
			chunks[i] = store.ChunkState{Drawer: c.DrawerID, Hash: c.Hash}
		}
		res, err = im.Document(t, store.DocumentState{Source: d.Source, ID: d.ID, WingID: d.WingID, Revision: d.Revision, Meta: d.Meta, Chunks: chunks})
	case rec.Fact != nil:
		f := rec.Fact
		id = f.ID
		ev := make([]store.Evidence, len(f.Evidence))
		for i, e := range f.Evidence {
			ev[i] = store.Evidence{ID: e.ID, Drawer: e.DrawerID, Job: e.JobID, Extractor: e.Extractor, Confidence: e.Confidence, RecordedAt: e.RecordedAt}
		}
		if len(ev) == 0 {
			ev = nil
		}
		res, err = im.Fact(t, store.Relationship{ID: f.ID, Subject: f.Subject, Predicate: f.Predicate, Object: f.Object, Confidence: f.Confidence,
			ValidFrom: f.ValidFrom, ValidTo: f.ValidTo, RecordedAt: f.RecordedAt, RetractedAt: f.RetractedAt, Drawer: f.DrawerID, Job: f.JobID,
			Extractor: f.Extractor, SupersededBy: f.SupersededBy, Reason: f.Reason, ClosedBy: f.ClosedBy, Evidence: ev})
	case rec.Decision != nil:
		d := rec.Decision
		id = d.ID
		res, err = im.FactLink(t, store.RelationshipLink{ID: d.ID, From: d.From, To: d.To, Kind: d.Kind, Reason: d.Reason,
			Drawer: d.DrawerID, Job: d.JobID, CreatedAt: d.CreatedAt})
	case rec.EntityLink != nil:
		l := rec.EntityLink
		id = l.ID
		res, err = im.EntityLink(t, store.EntityLink{ID: l.ID, From: l.From, To: l.To, Kind: l.Kind, CreatedAt: l.CreatedAt})
	}
	if err != nil {
		e := fault.As(err)
		return id, res, fault.Wrap(e.Code, err, fmt.Sprintf("line %d (byte %d), %s %s: %s", rec.Line, rec.Offset, rec.Type, id, e.Msg), e.Help)
	}
	return id, res, nil
}

// TallyImport counts a record's outcome in a report (the header
// counts as a record only, the end record not at all: countedRecord).
func TallyImport(rep *api.ImportReport, rec export.Record, id string, res store.Imported) {
	rep.Records += countedRecord(rec)
	if res.Outcome == "" {
		return
	}
	if rep.Types == nil {
		rep.Types = map[string]api.ImportCounts{}
	}
	c := rep.Types[rec.Type]
	bump(&c, res)
	rep.Types[rec.Type] = c
	bump(&rep.Totals, res)
	issue := api.ImportIssue{Line: rec.Line, Type: rec.Type, ID: id, Reason: res.Reason}
	switch res.Outcome {
	case store.ImportConflict:
		if len(rep.Conflicts) < api.MaxImportIssues {
			rep.Conflicts = append(rep.Conflicts, issue)
		}
	case store.ImportSkipped:
		if len(rep.Skipped) < api.MaxImportIssues {
			rep.Skipped = append(rep.Skipped, issue)
		}
	}
}

func bump(c *api.ImportCounts, res store.Imported) {
	switch res.Outcome {
	case store.ImportCreated:
		c.Created++
	case store.ImportUnchanged:
		c.Unchanged++
	case store.ImportUpdated:
		c.Updated++
	case store.ImportMerged:
		c.Merged++
	case store.ImportConflict:
		c.Conflicts++
	case store.ImportDuplicate:
		c.Duplicates++
	case store.ImportSkipped:
		c.Skipped++
	}
	c.Similar += res.Similar
}

// JudgeImport reads a whole export file with the Reader's checks and
// judges every record against the palace without writing: the report of
// what an import would change (a dry run), or (check) only whether every
// record passes the palace's rules, duplicates not judged. A bad file is
// its first error, naming the line.
func JudgeImport(ctx context.Context, db store.DB, f io.Reader, p ImportParams, dd store.Dedup, profile store.ImportProfile, check bool) (api.ImportReport, error) {
	rd := export.NewReader(f, export.ReaderOptions{SkipUnknown: p.SkipUnknown})
	if check {
		dd.Enabled = false
	}
	im := &store.Importer{Dedup: dd, Profile: profile, CheckOnly: check}
	rep := api.ImportReport{DryRun: true}
	err := db.View(ctx, func(r store.Reader) error {
		for {
			if err := ctx.Err(); err != nil {
				return err
			}
			rec, err := rd.Next()
			if errors.Is(err, io.EOF) {
				return checkWingMap(rd, p.WingMap)
			}
			if err != nil {
				return err
			}
			im.Begin()
			id, res, err := ApplyImportRecord(im, store.ImportTarget{R: r}, rec, p.WingMap, nil)
			if err != nil {
				return err
			}
			im.Commit()
			TallyImport(&rep, rec, id, res)
		}
	})
	return rep, err
}
