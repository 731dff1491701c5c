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
// since the version the previous one reached. A broken chain's message
// says how it is broken, naming the files: a file given twice, files
// out of order, overlapping incrementals, a second full backup, or a
// real gap (all loci::backup::gap).
func Chain(paths []string, hs []Header) error {
	for i, h := range hs {
		if err := repeated(paths, hs, i); err != nil {
			return err
		}
		if i == 0 {
			if h.Since != 0 {
				msg := fmt.Sprintf("the first file is an incremental backup (since store version %d), not a full one", h.Since)
				for j := 1; j < len(hs); j++ {
					if hs[j].Since == 0 {
						msg += fmt.Sprintf("; %s is a full backup: give it first", paths[j])
						break
					}
				}
				return naming(paths[i], fault.New(fault.BackupGap, msg, "give the full backup first, then its incrementals in the order they were taken"))
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
			return naming(paths[i], fault.Newf(fault.BackupGap, "give one full backup, then only its incrementals (restore the other full backup on its own)",
				"it is a second full backup (%s is the first): a chain holds one", firstFull(paths, hs)))
		case h.Since == prev.StoreVersion:
			continue
		case h.Since > prev.StoreVersion:
			// Missing between them: given later (out of order), or not
			// given (a gap).
			for j := i + 1; j < len(hs); j++ {
				if hs[j].Since == prev.StoreVersion && hs[j].Since != 0 {
					return naming(paths[i], fault.Newf(fault.BackupGap, "give the full backup first, then its incrementals in the order they were taken (by their store versions: `loci backup verify FILE` shows them)",
						"it starts at store version %d, but %s reaches %d: %s (since store version %d) comes first; the files are out of order",
						h.Since, paths[i-1], prev.StoreVersion, paths[j], hs[j].Since))
				}
			}
			return naming(paths[i], fault.Newf(fault.BackupGap, "give every incremental backup between them, in the order they were taken, or restore up to "+paths[i-1]+" only",
				"it starts at store version %d, but %s reaches only %d: the incrementals from %d to %d are missing (the chain has a gap)",
				h.Since, paths[i-1], prev.StoreVersion, prev.StoreVersion, h.Since))
		case h.StoreVersion <= prev.StoreVersion:
			return naming(paths[i], fault.Newf(fault.BackupGap, "give the full backup first, then its incrementals in the order they were taken (by their store versions: `loci backup verify FILE` shows them)",
				"it reaches store version %d, which %s already passed (%d): it belongs before %s; the files are out of order, or it is of another chain",
				h.StoreVersion, paths[i-1], prev.StoreVersion, paths[i-1]))
		default:
			why := fmt.Sprintf("it starts at store version %d, before %s ends (%d): the two incrementals overlap", h.Since, paths[i-1], prev.StoreVersion)
			if h.Since == prev.Since {
				why += fmt.Sprintf(" (both since %d: two chains taken from the same backup)", h.Since)
			}
			return naming(paths[i], fault.New(fault.BackupGap, why, "give only one of them: each incremental must start where the one before it ends"))
		}
	}
	return nil
}

// repeated refuses the i-th file when an earlier one is the same path or
// the same backup (the same header digest) under another name.
func repeated(paths []string, hs []Header, i int) error {
	for k := 0; k < i; k++ {
		switch {
		case paths[k] == paths[i]:
			return naming(paths[i], fault.Newf(fault.BackupGap, "give each file once: the full backup, then its incrementals in order",
				"it is given twice (the %s and %s file)", ordinal(k+1), ordinal(i+1)))
		case hs[k].HeaderDigest != "" && hs[k].HeaderDigest == hs[i].HeaderDigest:
			return naming(paths[i], fault.Newf(fault.BackupGap, "give each backup once: the full backup, then its incrementals in order",
				"it is the same backup as %s (given twice)", paths[k]))
		}
	}
	return nil
}

// firstFull names the chain's full backup (its first file when none).
func firstFull(paths []string, hs []Header) string {
	for i, h := range hs {
		if h.Since == 0 {
			return paths[i]
		}
	}
	return paths[0]
}

// String reads the counts as "1 wing, 3 rooms, 12 drawers".
func (c Counts) String() string {
	return count(c.Wings, "wing") + ", " + count(c.Rooms, "room") + ", " + count(c.Drawers, "drawer")
}

// count is "1 drawer", "2 drawers".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// ordinal is "1st", "2nd", "3rd", "4th"….
func ordinal(n int) string {
	suffix := "th"
	switch {
	case n%100 >= 11 && n%100 <= 13:
	case n%10 == 1:
		suffix = "st"
	case n%10 == 2:
		suffix = "nd"
	case n%10 == 3:
		suffix = "rd"
	}
	return fmt.Sprintf("%d%s", n, suffix)
}

// Target is what a restore into db would replace: whether it holds data
// (store.Dumper's Holds) and its palace's identity ("" when it has none;
// nothing is written). A restore that replaces a palace of another
// identity reports the change (api.RestoreReport's PreviousPalaceID and
// PalaceID).
func Target(ctx context.Context, db store.DB) (holds bool, palaceID string, err error) {
	d, ok := db.(store.Dumper)
	if !ok {
		return false, "", fault.Newf(fault.BackupUnsupported, "restore into a palace on the embedded store", "the %s store cannot be restored into", db.Backend())
	}
	if holds, err = d.Holds(ctx); err != nil {
		return false, "", err
	}
	palaceID, _, err = store.KnownPalaceID(ctx, db)
	return holds, palaceID, err
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
			"the restored palace holds %s; the backup's header says %s",
			Counts{Wings: got.Wings, Rooms: got.Rooms, Drawers: got.Drawers}, last.Counts)
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
