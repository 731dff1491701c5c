package extract

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkHeuristicLoCoMo reads every turn of the LoCoMo public file
// (../shared/bench, never committed) with the heuristic extractor, as the
// extract job would, 32 turns to a call; it reports drawers (turns) per
// second. Skipped when the file is absent.
func BenchmarkHeuristicLoCoMo(b *testing.B) {
	path := ""
	dir, _ := os.Getwd()
	for range 6 {
		p := filepath.Join(dir, "..", "shared", "bench", "locomo", "locomo-public.json")
		if _, err := os.Stat(p); err == nil {
			path = p
			break
		}
		dir = filepath.Dir(dir)
	}
	if path == "" {
		b.Skip("../shared/bench/locomo/locomo-public.json is not here")
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	var convs []struct {
		Conversation map[string]json.RawMessage `json:"conversation"`
	}
	if err := json.Unmarshal(raw, &convs); err != nil {
		b.Fatal(err)
	}
	var turns []string
	for _, c := range convs {
		for k, v := range c.Conversation {
			if !strings.HasPrefix(k, "session_") || strings.HasSuffix(k, "date_time") {
				continue
			}
			var ts []struct {
				Speaker, Text string
			}
			if json.Unmarshal(v, &ts) == nil {
				for _, t := range ts {
					turns = append(turns, t.Speaker+": "+t.Text)
				}
			}
		}
	}
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
