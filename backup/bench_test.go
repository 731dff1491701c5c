package backup_test

import (
	"context"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/loci-dev/loci/backup"
	"github.com/loci-dev/loci/internal/markov"
	"github.com/loci-dev/loci/store"
	"github.com/loci-dev/loci/store/badgerdb"
)

// benchDrawers is the palace size of the backup benchmarks:
// LOCI_BENCH_BACKUP_DRAWERS (default 2,000; BENCHMARKS.md's figures are
// at 1,000,000).
func benchDrawers() int {
	if n, err := strconv.Atoi(os.Getenv("LOCI_BENCH_BACKUP_DRAWERS")); err == nil && n > 0 {
		return n
	}
	return 2000
}

// benchPalace files n drawers of Markov text (dedup on, as the daemon
// files them), 1,000 to a transaction, into 10 wings of 10 rooms.
func benchPalace(b *testing.B, n int) *badgerdb.DB {
	b.Helper()
	db, err := badgerdb.Open(b.TempDir(), slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	text := markov.NewText()
	r := rand.New(rand.NewPCG(1, 37))
	dd := store.Dedup{Enabled: true, Threshold: 0.9}
	for i := 0; i < n; i += 1000 {
		err := db.Update(context.Background(), func(tx store.Tx) error {
			for j := i; j < min(i+1000, n); j++ {
				in := store.NewDrawer{Wing: "wing-" + strconv.Itoa(j%10), Room: "room-" + strconv.Itoa(j/10%10), Content: text.Sentence(r),
					Source: store.Source{Kind: store.KindManual}, Provenance: store.Provenance{RequestedBy: store.ByHTTP}}
				if _, err := store.CreateDrawer(tx, in, dd); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	return db
}

// BenchmarkBackup measures, on one palace, side by side: Badger's own
// DB.Backup (RawBadger), our dump of one snapshot (Dump), a whole backup
// file (WriteFile: one pass, header written last), the REST stream
// (Stream: two passes over the snapshot, digest first), the spool it
// avoids (Spool: a file written, then read back to the stream), and
// restore (Restore: check and load into an empty store). Each reports
// drawers/s and MB/s of the body.
//
//	LOCI_BENCH_BACKUP_DRAWERS=1000000 go test -run '^$' -bench BenchmarkBackup -benchtime 1x -timeout 2h ./backup
//
// LOCI_BENCH_BACKUP_PALACE=DIR measures a palace filled before (make
// bench-million's, the daemon stopped) instead of filling one.
func BenchmarkBackup(b *testing.B) {
	n, db := benchDrawers(), (*badgerdb.DB)(nil)
	if dir := os.Getenv("LOCI_BENCH_BACKUP_PALACE"); dir != "" {
		var err error
		if db, err = badgerdb.Open(dir, slog.New(slog.DiscardHandler)); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { db.Close() })
		var c store.Counts
		if err := db.View(context.Background(), func(r store.Reader) (err error) { c, err = r.Counts(); return err }); err != nil {
			b.Fatal(err)
		}
		n = c.Drawers
	} else {
		db = benchPalace(b, n)
	}
	dir := b.TempDir()
	full := filepath.Join(dir, "full.backup")
	h, err := backup.WriteFile(context.Background(), db, full, backup.Options{})
	if err != nil {
		b.Fatal(err)
	}
	report := func(b *testing.B) {
		b.SetBytes(h.BodyBytes)
		b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "drawers/s")
	}
	b.Run("RawBadger", func(b *testing.B) {
		for b.Loop() {
			if _, err := db.RawBackup(io.Discard); err != nil {
				b.Fatal(err)
			}
		}
		report(b)
	})
	b.Run("Dump", func(b *testing.B) {
		for b.Loop() {
			s, err := db.Snapshot(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			if _, err := s.Dump(context.Background(), 0, io.Discard, nil); err != nil {
				b.Fatal(err)
			}
			s.Close()
		}
		report(b)
	})
	b.Run("WriteFile", func(b *testing.B) {
		for b.Loop() {
			if _, err := backup.WriteFile(context.Background(), db, filepath.Join(dir, "bench.backup"), backup.Options{}); err != nil {
				b.Fatal(err)
			}
		}
		report(b)
	})
	b.Run("Stream", func(b *testing.B) {
		for b.Loop() {
			if _, err := backup.Write(context.Background(), db, io.Discard, backup.Options{}); err != nil {
				b.Fatal(err)
			}
		}
		report(b)
	})
	b.Run("Spool", func(b *testing.B) {
		for b.Loop() {
			p := filepath.Join(dir, "spool.backup")
			if _, err := backup.WriteFile(context.Background(), db, p, backup.Options{}); err != nil {
				b.Fatal(err)
			}
			f, err := os.Open(p)
			if err != nil {
				b.Fatal(err)
			}
			_, err = io.Copy(io.Discard, f)
			f.Close()
			if err != nil {
				b.Fatal(err)
			}
		}
		report(b)
	})
	b.Run("Verify", func(b *testing.B) {
		for b.Loop() {
			if _, err := backup.VerifyFile(context.Background(), full); err != nil {
				b.Fatal(err)
			}
		}
		report(b)
	})
	b.Run("Restore", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			target, err := store.Open(context.Background(), store.OpenOptions{Location: b.TempDir(), Log: slog.New(slog.DiscardHandler), Bulk: true})
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			if _, err := backup.Restore(context.Background(), target, []string{full}, backup.RestoreOptions{}); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			target.Close()
			b.StartTimer()
		}
		report(b)
	})
}
