package badgerdb

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/store"
)

// A store opened for a full disk (read-only, or cut-only after a kill)
// serves reads and refuses every write with disk_full, changing nothing;
// Reopen makes it writable in place, with everything written before.
func TestFullDiskOpenServesReadsThenReopens(t *testing.T) {
	for _, mode := range []openMode{readOnly, cutOnly} {
		dir := t.TempDir()
		log := slog.New(slog.DiscardHandler)
		db, err := Open(dir, log)
		if err != nil {
			t.Fatal(err)
		}
		file := func(db *DB, content string) error {
			return db.Update(context.Background(), func(tx store.Tx) error {
				_, err := store.CreateDrawer(tx, store.NewDrawer{Wing: "w", Room: "r", Content: content,
					Source: store.Source{Kind: store.KindManual}, Provenance: store.Provenance{RequestedBy: store.ByCLI}}, store.Dedup{})
				return err
			})
		}
		if err := file(db, "written before the disk filled"); err != nil {
			t.Fatal(err)
		}
		db.Close()

		db, err = open(dir, log, mode)
		if err != nil {
			t.Fatalf("mode %d: %v", mode, err)
		}
		drawers := func() int {
			var c store.Counts
			if err := db.View(context.Background(), func(r store.Reader) (err error) { c, err = r.Counts(); return err }); err != nil {
				t.Fatal(err)
			}
			return c.Drawers
		}
		if !db.ReadOnly() || drawers() != 1 {
			t.Fatalf("mode %d: read-only %v, %d drawers", mode, db.ReadOnly(), drawers())
		}
		for _, err := range []error{file(db, "refused"), db.PutMeta(context.Background(), "k", "v"), db.SyncSchema(context.Background()), db.CheckWritable()} {
			if fe := fault.As(err); err == nil || fe.Code != fault.StoreDiskFull || fe.HTTPStatus() != 507 {
				t.Fatalf("mode %d: a write on a read-only store: %v", mode, err)
			}
		}
		if drawers() != 1 {
			t.Fatal("a refused write changed the store")
		}
		if err := db.Reopen(); err != nil || db.ReadOnly() || db.CheckWritable() != nil {
			t.Fatalf("mode %d: reopen: %v, read-only %v", mode, err, db.ReadOnly())
		}
		if err := file(db, "written once space was back"); err != nil || drawers() != 2 {
			t.Fatalf("mode %d: a write after the reopen: %v, %d drawers", mode, err, drawers())
		}
		db.Close()
	}
}

// Badger's memory-mapped files are allocated when they are created
// (third_party/ristretto: fallocate), not sparse: a store into them cannot
// fault on a full disk. Checked where the filesystem allocates ahead.
func TestMappedFilesAreAllocated(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("files are allocated ahead on Linux only")
	}
	dir := t.TempDir()
	db, err := Open(dir, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	seen := 0
	for _, pattern := range []string{"*.mem", "*.vlog"} {
		files, _ := filepath.Glob(filepath.Join(dir, pattern))
		for _, f := range files {
			var st syscall.Stat_t
			if err := syscall.Stat(f, &st); err != nil {
				t.Fatal(err)
			}
			if st.Blocks*512 < st.Size {
				t.Errorf("%s: %d bytes long, %d allocated: sparse", filepath.Base(f), st.Size, st.Blocks*512)
			}
			seen++
		}
	}
	if seen < 2 {
		t.Fatalf("%d memtable and value log files", seen)
	}
}

// A kill with megabytes in the memtable log, then a start on a full disk:
// the log must be replayed into a memtable as large as the one it was
// written for (a smaller arena is a fatal error in Badger: the daemon
// exited at every start), and what it held is served.
func TestFullDiskOpenAfterAKillWithMegabytesInTheLog(t *testing.T) {
	dir := t.TempDir()
	log := slog.New(slog.DiscardHandler)
	db, err := Open(dir, log)
	if err != nil {
		t.Fatal(err)
	}
	const n = 400 // about 4 MB of drawers, all in the memtable log
	for i := range n {
		if err := db.Update(context.Background(), func(tx store.Tx) error {
			_, err := store.CreateDrawer(tx, store.NewDrawer{Wing: "w", Room: "r",
				Content: fmt.Sprintf("drawer %d: %s", i, strings.Repeat(fmt.Sprintf("word%d ", i), 1500)),
				Source:  store.Source{Kind: store.KindManual}, Provenance: store.Provenance{RequestedBy: store.ByCLI}}, store.Dedup{})
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	// The files as a kill -9 leaves them: copied while the store is open.
	killed := t.TempDir()
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(killed, e.Name()), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	if largestMemtableLog(killed) < 2*MemTableSize {
		t.Fatalf("no memtable log of %d bytes in the copy", 2*MemTableSize)
	}
	db, err = openFull(killed, log)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var c store.Counts
	if err := db.View(context.Background(), func(r store.Reader) (err error) { c, err = r.Counts(); return err }); err != nil {
		t.Fatal(err)
	}
	if !db.ReadOnly() || c.Drawers != n {
		t.Fatalf("read-only %v, %d drawers of %d", db.ReadOnly(), c.Drawers, n)
	}
}
