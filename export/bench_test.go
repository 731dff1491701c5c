package export_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loci-dev/loci/export"
	"github.com/loci-dev/loci/store"
	"github.com/loci-dev/loci/store/badgerdb"
)

// benchDrawers is the palace size of the benchmarks: 100,000 drawers by
// default, LOCI_BENCH_DRAWERS=1000000 for the million.
func benchDrawers() int {
	if n, err := strconv.Atoi(os.Getenv("LOCI_BENCH_DRAWERS")); err == nil && n > 0 {
		return n
	}
	return 100_000
}

var (
	benchOnce sync.Once
	benchDB   store.DB
	benchErr  error
	benchDir  string
)

// benchPalace files n drawers of about 400 bytes in 10 wings of 10 rooms
// (a tenth of them superseded once), once for every benchmark of the run.
func benchPalace(b *testing.B, n int) store.DB {
	b.Helper()
	benchOnce.Do(func() {
		dir, err := os.MkdirTemp("", "loci-export-bench-")
		if err != nil {
			benchErr = err
			return
		}
		benchDir = dir
		db, err := badgerdb.Open(dir, slog.New(slog.DiscardHandler))
		if err != nil {
			benchErr = err
			return
		}
		benchDB = db
		words := []string{"release", "deploy", "palace", "memory", "agent", "vector", "search", "room", "wing", "drawer", "fact", "entity", "export", "import", "backup", "friday"}
		const batch = 500
		for i := 0; i < n && benchErr == nil; i += batch {
			benchErr = db.Update(context.Background(), func(tx store.Tx) error {
				for j := i; j < min(i+batch, n); j++ {
					text := fmt.Sprintf("drawer %d:", j)
					for k := 0; len(text) < 400; k++ {
						text += " " + words[(j*7+k*13+k*k)%len(words)]
					}
					res, err := store.CreateDrawer(tx, store.NewDrawer{Wing: fmt.Sprintf("wing-%d", j%10), Room: fmt.Sprintf("room-%d", (j/10)%10),
						Content: text, Tags: []string{"bench"}, Source: store.Source{Kind: store.KindManual}}, store.Dedup{})
					if err != nil {
						return err
					}
					if j%10 == 0 {
						repl := text + " (corrected)"
						if _, err := store.Supersede(tx, store.Supersession{DrawerID: res.Drawer.ID, Content: &repl}, store.Dedup{}); err != nil {
							return err
						}
					}
				}
				return nil
			})
		}
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return benchDB
}

// TestMain removes the benchmarks' palace after the run.
func TestMain(m *testing.M) {
	code := m.Run()
	if benchDB != nil {
		_ = benchDB.Close()
		_ = os.RemoveAll(benchDir)
	}
	os.Exit(code)
}

// peakHeap samples the heap in use while fn runs and answers its peak
// above the heap in use before.
func peakHeap(fn func()) uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	var peak atomic.Uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				var m runtime.MemStats
				runtime.ReadMemStats(&m)
				if m.HeapInuse > base && m.HeapInuse-base > peak.Load() {
					peak.Store(m.HeapInuse - base)
				}
			}
		}
	}()
	fn()
	close(stop)
	wg.Wait()
	return peak.Load()
}

// BenchmarkExport writes the whole palace (goal: at least 50,000
// drawers/s) and reports the peak heap above the palace's own, which
// must not grow with the palace (streaming).
func BenchmarkExport(b *testing.B) {
	n := benchDrawers()
	db := benchPalace(b, n)
	b.ResetTimer()
	var peak uint64
	var drawers int
	var el time.Duration
	for b.Loop() {
		p := peakHeap(func() {
			start := time.Now()
			sum, err := export.Write(b.Context(), db, io.Discard, export.Options{})
			if err != nil {
				b.Fatal(err)
			}
			el += time.Since(start)
			drawers = sum.Counts[export.TypeDrawer]
		})
		peak = max(peak, p)
		if os.Getenv("LOCI_BENCH_VERBOSE") != "" {
			b.Logf("peak heap %.1f MiB", float64(p)/(1<<20))
		}
	}
	b.ReportMetric(float64(drawers)*float64(b.N)/el.Seconds(), "drawers/s")
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
}

// BenchmarkRead reads back and checks an export of the palace: what an
// import pays before it writes.
func BenchmarkRead(b *testing.B) {
	n := benchDrawers()
	db := benchPalace(b, n)
	f, err := os.CreateTemp("", "loci-export-bench-*.jsonl")
	if err != nil {
		b.Fatal(err)
	}
	defer os.Remove(f.Name())
	sum, err := export.Write(b.Context(), db, f, export.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	var el time.Duration
	var peak uint64
	for b.Loop() {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			b.Fatal(err)
		}
		peak = max(peak, peakHeap(func() {
			start := time.Now()
			defer func() { el += time.Since(start) }()
			rd := export.NewReader(f, export.ReaderOptions{})
			for {
				if _, err := rd.Next(); err == io.EOF {
					break
				} else if err != nil {
					b.Fatal(err)
				}
			}
		}))
	}
	b.ReportMetric(float64(sum.Counts[export.TypeDrawer])*float64(b.N)/el.Seconds(), "drawers/s")
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
	b.SetBytes(sum.Bytes)
}
