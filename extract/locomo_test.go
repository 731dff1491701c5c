package extract

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// locomoTurns reads every turn of the LoCoMo public file (../shared/bench,
// never committed) as the extract job reads a transcript drawer,
// "Speaker: text", with a shared image's caption when captions is set. It
// skips the test or benchmark when the file is absent.
func locomoTurns(tb testing.TB, captions bool) []string {
	tb.Helper()
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
		tb.Skip("../shared/bench/locomo/locomo-public.json is not here")
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	var convs []struct {
		Conversation map[string]json.RawMessage `json:"conversation"`
	}
	if err := json.Unmarshal(raw, &convs); err != nil {
		tb.Fatal(err)
	}
	var texts []string
	for _, c := range convs {
		for k, v := range c.Conversation {
			if !strings.HasPrefix(k, "session_") || strings.HasSuffix(k, "date_time") {
				continue
			}
			var turns []struct {
				Speaker, Text string
				Caption       string `json:"blip_caption"`
			}
			if json.Unmarshal(v, &turns) == nil {
				for _, tu := range turns {
					s := tu.Speaker + ": " + tu.Text
					if captions && tu.Caption != "" {
						s += " [shares " + tu.Caption + "]"
					}
					texts = append(texts, s)
				}
			}
		}
	}
	return texts
}
