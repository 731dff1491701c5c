package kinds

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/loci-dev/loci/actors"
	"github.com/loci-dev/loci/export"
	"github.com/loci-dev/loci/internal/markov"
	"github.com/loci-dev/loci/store"
)

// syntheticExport writes an export file of n current drawers of realistic
// text (two Markov sentences each) in 10 wings of 10 rooms, as loci export
// writes one, without building the palace it would come from. With copies,
// every second drawer is an exact copy of an earlier drawer of its room
// (the palace's duplicate rules keep one).
func syntheticExport(tb testing.TB, path string, n int, copies bool) {
	tb.Helper()
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	bw := bufio.NewWriterSize(f, 1<<20)
	digest := sha256.New()
	records := int64(0)
	counts := map[string]int{}
	put := func(typ string, v any) {
		b, err := json.Marshal(v)
		if err != nil {
			tb.Fatal(err)
		}
		b = append(b, '\n')
		bw.Write(b)
		digest.Write(b)
		records++
		counts[typ]++
	}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	put(export.TypeHeader, export.Header{Type: export.TypeHeader, Format: export.Format, Version: export.Version, CreatedAt: at,
		PalaceID: "00000000-0000-4000-8000-00000000000f", Selection: export.Selection{Wings: []string{}}})
	id := func(kind, i int) string { return fmt.Sprintf("%08x-0000-4000-8000-%012x", kind, i) }
	for w := range 10 {
		put(export.TypeWing, export.Wing{Type: export.TypeWing, ID: id(1, w), Name: "wing" + strconv.Itoa(w), CreatedAt: at})
	}
	for r := range 100 {
		put(export.TypeRoom, export.Room{Type: export.TypeRoom, ID: id(2, r), WingID: id(1, r/10), Name: "room" + strconv.Itoa(r), CreatedAt: at})
	}
	text, rng := markov.NewText(), rand.New(rand.NewPCG(1, 2))
	var last [100]string
	for i := range n {
		r := i % 100
		t := at.Add(time.Duration(i) * time.Millisecond)
		content := text.Sentence(rng) + " " + text.Sentence(rng)
		if copies && (i/100)%2 == 1 {
			content = last[r]
		}
		last[r] = content
		put(export.TypeDrawer, export.Drawer{Type: export.TypeDrawer, ID: id(3, i), WingID: id(1, r/10), RoomID: id(2, r),
			Content: content, Tags: []string{},
			Source: export.Source{Kind: store.KindNote}, Provenance: export.Provenance{RequestedBy: store.ByHTTP},
			ValidFrom: t, CreatedAt: t})
	}
	end, _ := json.Marshal(export.End{Type: export.TypeEnd, Records: records, Digest: "sha256:" + hex.EncodeToString(digest.Sum(nil)), Counts: counts})
	bw.Write(append(end, '\n'))
	if err := bw.Flush(); err != nil {
		tb.Fatal(err)
	}
}

// BenchmarkImport imports an export of LOCI_BENCH_DRAWERS drawers
// (default 100,000; LOCI_BENCH_COPIES=1: half of them exact copies) into an empty palace with the palace's duplicate rules,
// through the import job and the writer, and reports drawers/s (the
// issue's goal: at least 50,000). One palace per iteration: run it with
// -benchtime=1x. At a million drawers:
//
//	LOCI_BENCH_DRAWERS=1000000 go test -run '^$' -bench BenchmarkImport -benchtime=1x -benchmem ./services/kinds
func BenchmarkImport(b *testing.B) {
	n := 100_000
	if v, err := strconv.Atoi(os.Getenv("LOCI_BENCH_DRAWERS")); err == nil && v > 0 {
		n = v
	}
	file := filepath.Join(b.TempDir(), "export.jsonl")
	syntheticExport(b, file, n, os.Getenv("LOCI_BENCH_COPIES") == "1")
	b.ResetTimer()
	var elapsed time.Duration
	var peak uint64
	for range b.N {
		b.StopTimer()
		j, dir := importRuntime(b)
		spool := ImportSpoolName()
		if err := os.Link(file, filepath.Join(dir, spool)); err != nil {
			if err := copyFile(file, filepath.Join(dir, spool)); err != nil {
				b.Fatal(err)
			}
		}
		runtime.GC()
		stopPeak := samplePeak(&peak)
		b.StartTimer()
		began := time.Now()
		job, err := j.Submit(context.Background(), actors.Submission{Type: KindImport, Typed: ImportParams{Spool: spool}})
		if err != nil {
			b.Fatal(err)
		}
		done := waitFinished(b, j, job.ID)
		elapsed += time.Since(began)
		stopPeak()
		if done.Status != store.JobCompleted {
			b.Fatalf("import %s: %s", done.Status, done.Error)
		}
	}
	b.ReportMetric(float64(n*b.N)/elapsed.Seconds(), "drawers/s")
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
}

// samplePeak records the largest Go heap in use (every 20 ms) until the
// function it returns is called.
func samplePeak(peak *uint64) func() {
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			*peak = max(*peak, ms.HeapInuse)
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	return func() { close(stop); <-done }
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o600)
}

// waitFinished waits for a job to complete or fail.
func waitFinished(tb testing.TB, j *actors.Jobs, id string) *store.Job {
	tb.Helper()
	for {
		job, err := j.Get(context.Background(), id)
		if err != nil {
			tb.Fatal(err)
		}
		if job.Status == store.JobCompleted || job.Status == store.JobFailed {
			return job
		}
		time.Sleep(5 * time.Millisecond)
	}
}
