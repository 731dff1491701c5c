package sources

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// claudeBenchSession is a realistic Claude Code session of about 4 MB: the
// sessions the real CLI wrote (the fixture, every record as it wrote it,
// the attachments and request snapshots included) one after the other,
// again and again, each tool result (and the toolUseResult copy the CLI
// keeps of it) made 1 to 16 KB of numbered lines, as a file read shows.
func claudeBenchSession(tb testing.TB) []byte {
	tb.Helper()
	var lines [][]byte
	err := filepath.WalkDir("testdata/transcripts/claude-code/projects", func(p string, de os.DirEntry, err error) error {
		if err != nil || de.IsDir() || !strings.HasSuffix(p, ".jsonl") {
			return err
		}
		b, err := os.ReadFile(p)
		for _, l := range bytes.Split(b, []byte("\n")) {
			if len(bytes.TrimSpace(l)) > 0 {
				lines = append(lines, l)
			}
		}
		return err
	})
	if err != nil || len(lines) == 0 {
		tb.Fatalf("the fixture: %d lines, %v", len(lines), err)
	}
	set := func(doc []byte, path, s string) []byte {
		v := gjson.GetBytes(doc, path)
		if !v.Exists() || v.Index <= 0 {
			return doc
		}
		q, _ := json.Marshal(s)
		return slices.Concat(doc[:v.Index], q, doc[v.Index+len(v.Raw):])
	}
	var out bytes.Buffer
	for n := 0; out.Len() < 4<<20; n++ {
		for _, l := range lines {
			for k, b := range gjson.GetBytes(l, "message.content").Array() {
				if b.Get("type").String() != "tool_result" || b.Get("content").Type != gjson.String {
					continue
				}
				var text strings.Builder
				for i := 1; text.Len() < 1024*(1+(n+k)%16); i++ {
					fmt.Fprintf(&text, "%6d\tfunc handler%d(w http.ResponseWriter, r *http.Request) { // \"quoted\" line %d\n", i, n, i)
				}
				l = set(l, fmt.Sprintf("message.content.%d.content", k), text.String())
				l = set(l, "toolUseResult.stdout", text.String())
				l = set(l, "toolUseResult.file.content", text.String())
			}
			out.Write(l)
			out.WriteByte('\n')
		}
	}
	return out.Bytes()
}

// BenchmarkParseClaudeCode parses a realistic 4 MB Claude Code session
// (MB/s: the mine of issue 27's 200 MB of sessions reads every byte).
func BenchmarkParseClaudeCode(b *testing.B) {
	session := claudeBenchSession(b)
	b.SetBytes(int64(len(session)))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		s, err := ParseClaudeCode(context.Background(), bytes.NewReader(session))
		if err != nil || len(s.Turns) == 0 {
			b.Fatal(len(s.Turns), err)
		}
	}
}

// TestClaudeBenchSessionParses: the benchmark's session is one the parser
// reads whole (every record known, its turns, no tool output kept).
func TestClaudeBenchSessionParses(t *testing.T) {
	session := claudeBenchSession(t)
	s, err := ParseClaudeCode(context.Background(), bytes.NewReader(session))
	if err != nil {
		t.Fatal(err)
	}
	if len(session) < 4<<20 || len(s.Turns) < 40 || s.Skipped != 0 {
		t.Fatalf("%d bytes, %d turns, %d skipped", len(session), len(s.Turns), s.Skipped)
	}
	for _, tu := range s.Turns {
		if strings.Contains(tu.Text, "func handler") {
			t.Fatalf("tool output in a turn: %.200s", tu.Text)
		}
	}
}

// TestParseClaudeCodeAllocatesLittle: reading a session allocates far less
// than its size (the lines are read into one reused buffer, not one new
// slice each: a 200 MB mine made 200 MB of garbage for the collector).
func TestParseClaudeCodeAllocatesLittle(t *testing.T) {
	session := claudeBenchSession(t)
	ParseClaudeCode(context.Background(), bytes.NewReader(session)) // warm up
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	s, err := ParseClaudeCode(context.Background(), bytes.NewReader(session))
	runtime.ReadMemStats(&after)
	if err != nil || len(s.Turns) == 0 {
		t.Fatal(err)
	}
	if per := float64(after.TotalAlloc-before.TotalAlloc) / float64(len(session)); per > 0.5 {
		t.Fatalf("%.2f bytes allocated per byte of session (%d of %d)", per, after.TotalAlloc-before.TotalAlloc, len(session))
	}
}
