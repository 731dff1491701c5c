package sqlview_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/loci-dev/loci/dbadmin/sqlview"
	"github.com/loci-dev/loci/store"
	"github.com/loci-dev/loci/store/badgerdb"
	"github.com/loci-dev/loci/store/graph"
)

// The benchmark palace: 100,000 drawers in 20 rooms, every 10th drawer
// mentioning one of 200 people (10,000 mentions), filled once per test
// binary through the store's own writers.
const (
	benchDrawers  = 100_000
	benchRooms    = 20
	benchEvery    = 10
	benchEntities = 200
)

var bench struct {
	once sync.Once
	dir  string
	db   store.DB
	ids  []string
	err  error
}

// The entities palace: benchEntityCount entities and nothing else, filled
// once per test binary with the store's PutEntity (the graph's resolution
// skipped: the names are known to be new).
const benchEntityCount = 100_000

var benchEnt struct {
	once sync.Once
	dir  string
	db   store.DB
	err  error
	// first is the 10 smallest entity ids.
	first []string
}

func TestMain(m *testing.M) {
	code := m.Run()
	if bench.db != nil {
		_ = bench.db.Close()
	}
	if bench.dir != "" {
		_ = os.RemoveAll(bench.dir)
	}
	if benchEnt.db != nil {
		_ = benchEnt.db.Close()
	}
	if benchEnt.dir != "" {
		_ = os.RemoveAll(benchEnt.dir)
	}
	os.Exit(code)
}

// benchPalace is the benchmark palace and a sample of its drawer ids.
func benchPalace(b *testing.B) (store.DB, []string) {
	b.Helper()
	if testing.Short() {
		b.Skip("fills 100,000 drawers")
	}
	bench.once.Do(func() {
		start := time.Now()
		if bench.dir, bench.err = os.MkdirTemp("", "sqlview-bench-"); bench.err != nil {
			return
		}
		db, err := badgerdb.Open(bench.dir, slog.New(slog.DiscardHandler))
		if err != nil {
			bench.err = err
			return
		}
		bench.db = db
		fillPalace(b, db, benchDrawers, benchRooms, benchEvery, benchEntities)
		bench.err = db.View(context.Background(), func(r store.Reader) error {
			ws, err := r.Wings()
			if err != nil {
				return err
			}
			rs, err := r.Rooms(ws[0].ID)
			if err != nil {
				return err
			}
			for _, room := range rs {
				ids, err := r.DrawerIDs(room.ID)
				if err != nil {
					return err
				}
				for i := 0; i < len(ids); i += 97 {
					bench.ids = append(bench.ids, ids[i])
				}
			}
			return nil
		})
		b.Logf("filled %d drawers in %v", benchDrawers, time.Since(start))
	})
	if bench.err != nil {
		b.Fatal(bench.err)
	}
	return bench.db, bench.ids
}

// entityPalace is the entities palace.
func entityPalace(b *testing.B) store.DB {
	b.Helper()
	if testing.Short() {
		b.Skip("fills 100,000 entities")
	}
	benchEnt.once.Do(func() {
		start := time.Now()
		if benchEnt.dir, benchEnt.err = os.MkdirTemp("", "sqlview-bench-entities-"); benchEnt.err != nil {
			return
		}
		db, err := badgerdb.Open(benchEnt.dir, slog.New(slog.DiscardHandler))
		if err != nil {
			benchEnt.err = err
			return
		}
		benchEnt.db = db
		at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
		const batch = 500
		var ids []string
		for first := 0; first < benchEntityCount && benchEnt.err == nil; first += batch {
			benchEnt.err = db.Update(context.Background(), func(tx store.Tx) error {
				for i := first; i < min(benchEntityCount, first+batch); i++ {
					name := fmt.Sprintf("Entity %06d", i)
					e := &store.Entity{ID: store.NewID(), Name: name, Kind: "thing", Key: graph.Key(name), CreatedAt: at}
					ids = append(ids, e.ID)
					if err := tx.PutEntity(e, nil); err != nil {
						return err
					}
				}
				return nil
			})
		}
		b.Logf("filled %d entities in %v", benchEntityCount, time.Since(start))
		sort.Strings(ids)
		benchEnt.first = ids[:10]
	})
	if benchEnt.err != nil {
		b.Fatal(benchEnt.err)
	}
	return benchEnt.db
}

// runBench runs q b.N times (vars from vars(i)) over the benchmark palace
// and reports the median time of one query as p50-ms.
func runBench(b *testing.B, q string, vars func(i int) map[string]any, check func(sqlview.Result)) {
	db, _ := benchPalace(b)
	runBenchOn(b, db, q, vars, check)
}

// runBenchOn is runBench over db.
func runBenchOn(b *testing.B, db store.DB, q string, vars func(i int) map[string]any, check func(sqlview.Result)) {
	e := sqlview.New(db, sqlview.Limits{ScanRows: 2_000_000, ResultRows: 10_000, Timeout: 5 * time.Minute})
	times := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		res, err := e.Query(context.Background(), q, vars(i))
		times = append(times, time.Since(start))
		if err != nil || len(res) != 1 || res[0].Err != nil {
			b.Fatalf("%s: %+v %v", q, res, err)
		}
		check(res[0])
	}
	b.StopTimer()
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "p50-ms")
}

func noVars(int) map[string]any { return nil }

// BenchmarkSQL100kCountByRoom: count(*) per room over 100,000 drawers.
func BenchmarkSQL100kCountByRoom(b *testing.B) {
	runBench(b, "SELECT room, count(*) FROM drawers GROUP BY room", noVars, func(r sqlview.Result) {
		if len(r.Rows) != benchRooms || r.Rows[0][1] != int64(benchDrawers/benchRooms) {
			b.Fatalf("rows %v", r.Rows)
		}
	})
}

// BenchmarkSQL100kMentionsJoin: the 20 most mentioned entities, a lookup
// join of 10,000 mentions to their entities.
func BenchmarkSQL100kMentionsJoin(b *testing.B) {
	runBench(b, "SELECT e.name, count(*) AS n FROM mentions m JOIN entities e ON e.id = m.entity_id GROUP BY e.name ORDER BY n DESC, e.name LIMIT 20", noVars,
		func(r sqlview.Result) {
			if len(r.Rows) != 20 || r.Rows[0][1] != int64(benchDrawers/benchEvery/benchEntities) {
				b.Fatalf("rows %v", r.Rows)
			}
		})
}

// BenchmarkSQL100kPointLookup: one drawer by id (target: under 5 ms).
func BenchmarkSQL100kPointLookup(b *testing.B) {
	_, ids := benchPalace(b)
	runBench(b, "SELECT * FROM drawers WHERE id = @id", func(i int) map[string]any { return map[string]any{"id": ids[i%len(ids)]} },
		func(r sqlview.Result) {
			if len(r.Rows) != 1 || r.RowsRead != 1 {
				b.Fatalf("rows %d, read %d", len(r.Rows), r.RowsRead)
			}
		})
}

// BenchmarkSQL100kEntitiesCount: count(*) over 100,000 entities, a store
// visitor without a resume point read whole.
func BenchmarkSQL100kEntitiesCount(b *testing.B) {
	runBenchOn(b, entityPalace(b), "SELECT count(*) FROM entities", noVars, func(r sqlview.Result) {
		if len(r.Rows) != 1 || r.Rows[0][0] != int64(benchEntityCount) || r.RowsRead != benchEntityCount {
			b.Fatalf("rows %v, read %d", r.Rows, r.RowsRead)
		}
	})
}

// BenchmarkSQL100kEntitiesTop10: the first 10 of 100,000 entities by id
// (every entity read, 10 kept).
func BenchmarkSQL100kEntitiesTop10(b *testing.B) {
	runBenchOn(b, entityPalace(b), "SELECT * FROM entities ORDER BY id LIMIT 10", noVars, func(r sqlview.Result) {
		if len(r.Rows) != 10 || r.Rows[0][0] != benchEnt.first[0] || r.Rows[9][0] != benchEnt.first[9] || r.RowsRead != benchEntityCount {
			b.Fatalf("rows %v, read %d", r.Rows, r.RowsRead)
		}
	})
}
