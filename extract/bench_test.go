package extract

import (
	"context"
	"testing"
)

// BenchmarkHeuristicLoCoMo reads every turn of the LoCoMo public file
// (../shared/bench, never committed) with the heuristic extractor, as the
// extract job would, 32 turns to a call; it reports drawers (turns) per
// second. Skipped when the file is absent.
func BenchmarkHeuristicLoCoMo(b *testing.B) {
	turns := locomoTurns(b, false)
	b.ResetTimer()
	n := 0
	for b.Loop() {
		for i := 0; i < len(turns); i += 32 {
			if _, err := (Heuristic{}).Extract(context.Background(), turns[i:min(i+32, len(turns))]); err != nil {
				b.Fatal(err)
			}
		}
		n += len(turns)
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "drawers/s")
}
