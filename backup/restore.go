package backup

import (
	"bufio"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/store"
)

// RestoreOptions shape a restore.
type RestoreOptions struct {
	// Progress, when set, is called now and then with the file being
	// loaded (its index in the chain) and its body bytes loaded so far.
	Progress func(file int, bytes int64)
}

// Check verifies every file end to end (Verify) and that together they
// are restorable by a build whose latest data version is latestData: a
// full backup first, then incrementals each starting at the version the
// one before reached, all of one palace and one backend, none of a newer
// data version. It reads and changes nothing else.
func Check(ctx context.Context, paths []string, latestData int) ([]Header, error) {
	if len(paths) == 0 {
		return nil, fault.New(fault.BackupInvalid, "no backup file given", "give a full backup, then its incrementals in order")
	}
	hs := make([]Header, 0, len(paths))
	for _, p := range paths {
		h, err := VerifyFile(ctx, p)
		if err != nil {
			return nil, err
		}
		if h.DataVersion > latestData {
			return nil, naming(p, fault.Newf(fault.BackupFutureVersion, "restore it with the loci release that wrote it or a newer one",
				"the backup's data version %d is newer than this loci knows (%d)", h.DataVersion, latestData))
		}
		hs = append(hs, h)
	}
	return hs, Chain(paths, hs)
}

// Chain checks that the headers (of the files at paths) form a chain: a
// full backup, then incrementals of the same palace and backend, each
// since the version the previous one reached.
func Chain(paths []string, hs []Header) error {
	for i, h := range hs {
		if i == 0 {
			if h.Since != 0 {
				return naming(paths[i], fault.Newf(fault.BackupGap, "give the full backup first, then its incrementals in the order they were taken",
					"the first file is an incremental backup (since store version %d), not a full one", h.Since))
			}
			continue
		}
		prev := hs[i-1]
		switch {
		case h.PalaceID != prev.PalaceID:
			return naming(paths[i], fault.Newf(fault.BackupPalaceMismatch, "give the backups of one palace only",
				"it is a backup of palace %s; %s is of palace %s", h.PalaceID, paths[i-1], prev.PalaceID))
		case h.Backend != prev.Backend:
			return naming(paths[i], fault.Newf(fault.BackupGap, "give the backups of one store only",
				"it is a backup of a %s store; %s is of a %s store", h.Backend, paths[i-1], prev.Backend))
		case h.Since == 0:
			return naming(paths[i], fault.Newf(fault.BackupGap, "give one full backup, then only its incrementals",
				"it is a full backup, after %s", paths[i-1]))
		case h.Since != prev.StoreVersion:
			return naming(paths[i], fault.Newf(fault.BackupGap, "give every incremental backup between them, in the order they were taken",
				"it starts at store version %d, but %s reaches %d: the chain has a gap", h.Since, paths[i-1], prev.StoreVersion))
		}
	}
	return nil
}

// Apply loads the checked chain (Check's headers) into db, which must
// hold nothing (loci::backup::not_empty otherwise): each body in order,
// its digest checked again as it is read (a file changed since Check
// stops the load). At the end the restored palace is counted and must
// hold what the last backup's header says.
func Apply(ctx context.Context, db store.DB, paths []string, hs []Header, o RestoreOptions) error {
	d, ok := db.(store.Dumper)
	if !ok {
		return fault.Newf(fault.BackupUnsupported, "restore into a palace on a store that loci can load (the embedded store)",
			"the %s store cannot be restored into by loci", db.Backend())
	}
	for i, h := range hs {
		if h.Backend != db.Backend() {
			return naming(paths[i], fault.Newf(fault.BackupUnsupported, "restore it into a palace on a "+h.Backend+" store",
				"it holds a %s store's dump; the target is a %s store", h.Backend, db.Backend()))
		}
	}
	holds, err := d.Holds(ctx)
	if err != nil {
		return err
	}
	if holds {
		return fault.Newf(fault.BackupNotEmpty, "restore into an empty palace, or give --force to replace this one",
			"the palace at %s holds data", db.Location())
	}
	for i, p := range paths {
		if err := load(ctx, d, p, hs[i], func(n int64) {
			if o.Progress != nil {
				o.Progress(i, n)
			}
		}); err != nil {
			return err
		}
	}
	last := hs[len(hs)-1]
	var got store.Counts
	if err := db.View(ctx, func(r store.Reader) (err error) { got, err = r.Recount(); return err }); err != nil {
		return err
	}
	if got.Wings != last.Counts.Wings || got.Rooms != last.Counts.Rooms || got.Drawers != last.Counts.Drawers {
		return fault.Newf(fault.BackupCorrupt, "restore from a full backup taken more recently (a chain of incrementals can miss a deletion the store compacted away meanwhile)",
			"the restored palace holds %d wings, %d rooms, %d drawers; the backup's header says %d, %d, %d",
			got.Wings, got.Rooms, got.Drawers, last.Counts.Wings, last.Counts.Rooms, last.Counts.Drawers)
	}
	return nil
}

// load loads one file's body, checking its digest as it goes.
func load(ctx context.Context, d store.Dumper, path string, h Header, progress func(int64)) error {
	f, err := os.Open(path)
	if err != nil {
		return naming(path, fault.Wrap(fault.BackupInvalid, err, "cannot open it: "+err.Error(), "give the path of a backup file"))
	}
	defer f.Close()
	if _, err := f.Seek(HeaderSize, io.SeekStart); err != nil {
		return err
	}
	sum := sha256.New()
	body := &progressReader{r: io.TeeReader(io.LimitReader(bufio.NewReaderSize(f, 1<<20), h.BodyBytes), sum), fn: progress}
	if err := d.Load(ctx, body); err != nil {
		var dc *store.DumpCorrupt
		if errors.As(err, &dc) {
			return naming(path, corrupt(HeaderSize+dc.Offset, dc.Reason+" (the file changed after it was verified?)"))
		}
		return err
	}
	if body.n != h.BodyBytes || digestOf(sum) != h.BodyDigest {
		return naming(path, corrupt(HeaderSize, fmt.Sprintf("the body changed after it was verified (%d bytes read, digest %s)", body.n, digestOf(sum))))
	}
	return nil
}

// progressReader counts what is read through it and reports it.
type progressReader struct {
	r    io.Reader
	n    int64
	last int64
	fn   func(int64)
}

func (p *progressReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	p.n += int64(n)
	if p.fn != nil && (p.n-p.last >= 4<<20 || err != nil) {
		p.last = p.n
		p.fn(p.n)
	}
	return n, err
}

// Restore checks the files (Check) and applies them (Apply) to db.
func Restore(ctx context.Context, db store.DB, paths []string, o RestoreOptions) ([]Header, error) {
	st, err := db.Migrator(store.Steps()).State(ctx)
	if err != nil {
		return nil, err
	}
	hs, err := Check(ctx, paths, st.Latest)
	if err != nil {
		return nil, err
	}
	return hs, Apply(ctx, db, paths, hs, o)
}
