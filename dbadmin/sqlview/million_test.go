package sqlview_test

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/loci-dev/loci/dbadmin/sqlview"
	"github.com/loci-dev/loci/fault"
)

// heapPeak runs fn and reports the most the Go heap grew meanwhile over
// what it held before (runtime.ReadMemStats, sampled every 10ms).
func heapPeak(fn func()) uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base, peak := ms.HeapAlloc, ms.HeapAlloc
	var mu sync.Mutex
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				var s runtime.MemStats
				runtime.ReadMemStats(&s)
				mu.Lock()
				peak = max(peak, s.HeapAlloc)
				mu.Unlock()
			}
		}
	}()
	fn()
	close(stop)
	<-done
	runtime.ReadMemStats(&ms)
	mu.Lock()
	defer mu.Unlock()
	peak = max(peak, ms.HeapAlloc)
	if peak < base {
		return 0
	}
	return peak - base
}

// A query over a million rows (1,000 drawers joined with themselves) is
// bounded: sorting them by content and counting them each finish or fail
// with too_large or timeout within the limits, and the heap grows by no
// more than the memory budget and a margin for the engine's own garbage.
func TestMillionRowsBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("fills 1,000 drawers and runs a million-row join")
	}
	db := openDB(t)
	fillPalace(t, db, 1000, 4, 0, 0)
	const budget = 32 << 20
	const bound = 160 << 20
	e := sqlview.New(db, sqlview.Limits{ScanRows: 2_000_000, ResultRows: 10_000, Timeout: 20 * time.Second, MemoryBytes: budget})
	for _, c := range []struct {
		sql  string
		rows int64 // when it finishes
	}{
		{"SELECT a.id, b.id, a.content FROM drawers a CROSS JOIN drawers b ORDER BY a.content, b.content", 0},
		{"SELECT count(*) FROM drawers a CROSS JOIN drawers b", 1_000_000},
		{"SELECT DISTINCT a.content, b.content FROM drawers a CROSS JOIN drawers b", 0},
		{"SELECT a.content, count(*) FROM drawers a CROSS JOIN drawers b GROUP BY a.content, b.id", 0},
	} {
		var res []sqlview.Result
		var err error
		grew := heapPeak(func() { res, err = e.Query(context.Background(), c.sql, nil) })
		if err != nil || len(res) != 1 {
			t.Fatalf("%s: %v %v", c.sql, res, err)
		}
		r := res[0]
		switch {
		case r.Err == nil:
			if c.rows > 0 && r.Rows[0][0] != c.rows {
				t.Errorf("%s: %v", c.sql, r.Rows)
			}
			if c.rows == 0 && (!r.Truncated || len(r.Rows) != 10_000) {
				t.Errorf("%s: %d rows, truncated %v", c.sql, len(r.Rows), r.Truncated)
			}
		case r.Err.Code == fault.DBTooLarge || r.Err.Code == fault.DBTimeout:
		default:
			t.Errorf("%s: %+v", c.sql, r.Err)
		}
		t.Logf("%s: err %v, %d rows, read %d, heap grew %d MiB in %v", c.sql, r.Err, len(r.Rows), r.RowsRead, grew>>20, r.Duration)
		if grew > bound {
			t.Errorf("%s: the heap grew %d MiB (bound %d MiB)", c.sql, grew>>20, bound>>20)
		}
	}
}
