package sources

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/sources/exportgen"
	"github.com/loci-dev/loci/store"
)

// exportSentinels are strings of the fixtures that only reasoning, tool
// output, hidden context, attachments' text, abandoned branches and
// unknown records hold: none may reach a document.
var exportSentinels = []string{"REASONING-SENTINEL", "RECAP-SENTINEL", "TOOL-OUTPUT-SENTINEL", "BROWSE-OUTPUT-SENTINEL",
	"ABANDONED-BRANCH-SENTINEL", "CUSTOM-INSTRUCTIONS-SENTINEL", "HIDDEN-SYSTEM-SENTINEL", "UNKNOWN-TYPE-SENTINEL",
	"ATTACHMENT-CONTENT-SENTINEL", "UNKNOWN-SENDER-SENTINEL"}

// readExport resolves a locator and reads every discovered conversation,
// by id.
func readExport(t *testing.T, src ExportFile, locator string) (store.SourceIdentity, []Ref, map[string]*Document) {
	t.Helper()
	id, err := src.Resolve(locator, nil)
	if err != nil {
		t.Fatal(err)
	}
	refs, err := src.Discover(context.Background(), Run{ID: id}, nil)
	if err != nil {
		t.Fatal(err)
	}
	docs := map[string]*Document{}
	for _, ref := range refs {
		doc, err := src.Read(context.Background(), Run{ID: id}, ref)
		if err != nil {
			t.Fatalf("%s: %v", ref.ID, err)
		}
		docs[ref.ID] = doc
		for _, s := range exportSentinels {
			if strings.Contains(doc.Text(), s) {
				t.Errorf("%s holds %s:\n%s", ref.ID, s, doc.Text())
			}
		}
	}
	return id, refs, docs
}

func TestChatGPTExportFollowsTheCurrentBranch(t *testing.T) {
	dir := "testdata/transcripts/chatgpt-export"
	abs, _ := filepath.Abs(dir)
	id, refs, docs := readExport(t, ChatGPTExport(), abs)
	if id.Locator != filepath.Join(abs, "conversations.json") || id.Adapter != "chatgpt-export" {
		t.Fatalf("identity %+v", id)
	}
	// Oldest update first.
	want := []string{"6743c3d4-2e3f-4071-8cbd-23456789abcd", "6744b2c3-1d2e-4f60-9bac-123456789abc", "6745a1b2-0c1d-4e5f-8a9b-0123456789ab"}
	if len(refs) != 3 || refs[0].ID != want[0] || refs[1].ID != want[1] || refs[2].ID != want[2] {
		t.Fatalf("refs %+v", refs)
	}
	deploy := docs[want[2]]
	wantUnits := []string{
		"[user · 2025-11-25 10:00:01 UTC]\nMy deploy fails with the key AKIAIOSFODNN7EXAMPLF, can you check deploy.log?\n\n",
		"[assistant · 2025-11-25 10:00:12 UTC]\n[tool python: import os os.environ['GITHUB_TOKEN'] = 'ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789' print(open('deploy.log').read())]\n" +
			"[tool result: 1.6 KB]\nThe staging host refused the SSH connection; check its firewall, and rotate that key since you pasted it here.\n\n",
		"[user · 2025-11-25 10:01:00 UTC]\n[image]\nHere is the firewall dashboard.\n\n",
		"[assistant · 2025-11-25 10:01:11 UTC]\nPort 22 is closed in the dashboard: open it for your deploy runner's address.\n\n",
	}
	if len(deploy.Units) != len(wantUnits) {
		t.Fatalf("units %q", deploy.Units)
	}
	for i := range wantUnits {
		if deploy.Units[i] != wantUnits[i] {
			t.Errorf("unit %d:\n got %q\nwant %q", i, deploy.Units[i], wantUnits[i])
		}
	}
	if deploy.Skipped != 1 || deploy.Name != "Deploy fails on the staging host" || deploy.Room != "chatgpt" || deploy.Kind != "transcript" ||
		deploy.URI != "https://chatgpt.com/c/"+want[2] {
		t.Fatalf("document %+v", deploy)
	}
	var origin map[string]any
	json.Unmarshal(deploy.Origin, &origin)
	if origin["session_id"] != want[2] || origin["format"] != "chatgpt-export/conversations-2025" || origin["agent"] != "chatgpt" ||
		origin["first"] != "2025-11-25T10:00:01Z" || origin["last"] != "2025-11-25T10:01:11Z" || origin["path"] != id.Locator {
		t.Fatalf("origin %s", deploy.Origin)
	}
	if got := docs[want[1]].Text(); !strings.Contains(got, `[tool browser: search("sourdough hydration beginner")]`) ||
		!strings.Contains(got, "[tool result: ") || !strings.Contains(got, "70% hydration") {
		t.Fatalf("sourdough: %q", got)
	}
	// current_node null: the latest answer's branch.
	if got := docs[want[0]].Text(); !strings.Contains(got, "check the ranges in code") {
		t.Fatalf("regex: %q", got)
	}
}

func TestClaudeExportMessagesAndMarkers(t *testing.T) {
	abs, _ := filepath.Abs("testdata/transcripts/claude-export/conversations.json")
	id, refs, docs := readExport(t, ClaudeExport(), abs)
	if id.Locator != abs || len(refs) != 2 || refs[0].ID != "1a2b3c4d-0000-4000-8000-000000000002" {
		t.Fatalf("%+v %+v", id, refs)
	}
	borrow := docs["1a2b3c4d-0000-4000-8000-000000000001"]
	wantUnits := []string{
		"[user · 2025-11-25 09:00:00 UTC]\nWhy does the borrow checker reject this? (my token is ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789)\n[attachment main.rs: 2.0 KB]\n\n",
		"[assistant · 2025-11-25 09:00:20 UTC]\nLet me check the reference first.\n[tool web_search: rust borrowed value does not live long enough AKIAIOSFODNN7EXAMPLF]\n" +
			"[tool result: 48 B]\nx is dropped at the end of its block while r still borrows it (E0597): move x out of the block.\n\n",
		"[user · 2025-11-25 09:04:00 UTC]\nThanks! Here is the diagram I drew.\n[image]\n\n",
		"[assistant · 2025-11-25 09:05:00 UTC]\nThe diagram matches: r's lifetime is longer than x's.\n\n",
	}
	if len(borrow.Units) != len(wantUnits) {
		t.Fatalf("units %q", borrow.Units)
	}
	for i := range wantUnits {
		if borrow.Units[i] != wantUnits[i] {
			t.Errorf("unit %d:\n got %q\nwant %q", i, borrow.Units[i], wantUnits[i])
		}
	}
	if borrow.Skipped != 1 || borrow.Name != "Borrow checker complaint" || borrow.Room != "claude" || borrow.URI != "https://claude.ai/chat/1a2b3c4d-0000-4000-8000-000000000001" {
		t.Fatalf("document %+v", borrow)
	}
	packing := docs["1a2b3c4d-0000-4000-8000-000000000002"]
	if packing.Skipped != 1 || len(packing.Units) != 3 || !strings.Contains(packing.Units[1], "Layers, a rain shell") || !strings.Contains(packing.Units[2], "Great, thanks.") {
		t.Fatalf("packing: %q skipped %d", packing.Units, packing.Skipped)
	}
}

// writeExport writes conversations as an export file in a new directory.
func writeExport(t *testing.T, convs ...string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "conversations.json"), []byte("[\n"+strings.Join(convs, ",\n")+"\n]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

func gptConv(id string, updated int, text string) string {
	b, _ := json.Marshal(map[string]any{"id": id, "conversation_id": id, "title": "t " + id, "update_time": float64(1.7e9 + updated),
		"current_node": "u", "mapping": map[string]any{"u": map[string]any{"id": "u", "parent": nil, "children": []string{},
			"message": map[string]any{"author": map[string]any{"role": "user"}, "create_time": 1.7e9, "content": map[string]any{"content_type": "text", "parts": []string{text}}}}}})
	return string(b)
}

// A new export (the file replaced) lists only the conversations updated
// since the cursor.
func TestExportCursorListsOnlyUpdatedConversations(t *testing.T) {
	src := ChatGPTExport()
	dir := writeExport(t, gptConv("a", 10, "alpha"), gptConv("b", 20, "bravo"), gptConv("c", 30, "charlie"))
	id, err := src.Resolve(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	refs, err := src.Discover(context.Background(), Run{ID: id}, nil)
	if err != nil || len(refs) != 3 {
		t.Fatalf("%+v %v", refs, err)
	}
	cursor := refs[2].Cursor
	if err := src.ParseCursor(cursor); err != nil {
		t.Fatal(err)
	}
	if again, _ := src.Discover(context.Background(), Run{ID: id}, cursor); len(again) != 0 {
		t.Fatalf("an unchanged export: %+v", again)
	}
	// The next export: b continued, d new, a and c as they were, in
	// another order.
	os.WriteFile(filepath.Join(dir, "conversations.json"), []byte("["+strings.Join([]string{gptConv("d", 40, "delta"), gptConv("c", 30, "charlie"),
		gptConv("b", 35, "bravo and more"), gptConv("a", 10, "alpha")}, ",")+"]"), 0o600)
	refs, err = src.Discover(context.Background(), Run{ID: id}, cursor)
	if err != nil || len(refs) != 2 || refs[0].ID != "b" || refs[1].ID != "d" {
		t.Fatalf("after a new export: %+v %v", refs, err)
	}
	doc, err := src.Read(context.Background(), Run{ID: id}, refs[0])
	if err != nil || !strings.Contains(doc.Text(), "bravo and more") {
		t.Fatalf("%v %+v", err, doc)
	}
	// A span that no longer holds the conversation (the file replaced
	// after discovery), or none at all: found again by its id.
	stale := Ref{ID: "a", Offset: refs[0].Offset, Size: refs[0].Size}
	if doc, err := src.Read(context.Background(), Run{ID: id}, stale); err != nil || !strings.Contains(doc.Text(), "alpha") {
		t.Fatalf("a stale span: %v %+v", err, doc)
	}
	if doc, err := src.Read(context.Background(), Run{ID: id}, Ref{ID: "c"}); err != nil || !strings.Contains(doc.Text(), "charlie") {
		t.Fatalf("no span: %v %+v", err, doc)
	}
	if src.spans.scans != 1 {
		t.Fatalf("%d scans to find two conversations of one file again", src.spans.scans)
	}
	if _, err := src.Read(context.Background(), Run{ID: id}, Ref{ID: "gone"}); err == nil {
		t.Fatal("a conversation gone from the file was read")
	} else if r, _ := IsFiltered(err); r != "vanished" {
		t.Fatal(err)
	}
	// since keeps the conversations updated since then (the listing keeps
	// every one); a bad since is refused.
	sinceOpt := map[string]string{"since": time.Unix(1.7e9+30, 0).UTC().Format(time.RFC3339)}
	if recent, err := src.Discover(context.Background(), Run{ID: id, Options: sinceOpt}, nil); err != nil || len(recent) != 3 || recent[0].ID != "c" {
		t.Fatalf("since: %+v %v", recent, err)
	}
	if _, err := src.Resolve(dir, map[string]string{"since": "last week"}); err == nil || fault.As(err).Code != fault.InputInvalid {
		t.Fatalf("a bad since: %v", err)
	}
	list, complete, err := src.List(context.Background(), Run{ID: id, Options: sinceOpt})
	if err != nil || !complete || len(list) != 4 {
		t.Fatalf("list %+v %v %v", list, complete, err)
	}
	for _, bad := range []string{`{"time_ns":1}`, `{"id":"a","x":1}`, `[]`} {
		if err := src.ParseCursor(json.RawMessage(bad)); err == nil || fault.As(err).Code != fault.SourceCursorInvalid {
			t.Errorf("cursor %s: %v", bad, err)
		}
	}
}

func TestExportOversizeConversationIsFiltered(t *testing.T) {
	src := ChatGPTExport()
	big := gptConv("big", 20, strings.Repeat("word ", MaxConversationBytes/5+1000))
	dir := writeExport(t, gptConv("small", 10, "small talk"), big, gptConv("after", 30, "after the big one"))
	id, err := src.Resolve(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	refs, err := src.Discover(context.Background(), Run{ID: id}, nil)
	if err != nil || len(refs) != 3 {
		t.Fatalf("%+v %v", refs, err)
	}
	if refs[1].ID != "big" || refs[1].Filtered != "too_large" || refs[0].Filtered != "" || refs[2].Filtered != "" {
		t.Fatalf("%+v", refs)
	}
	if _, err := src.Read(context.Background(), Run{ID: id}, Ref{ID: "big"}); err == nil {
		t.Fatal("an over-size conversation was read")
	} else if r, _ := IsFiltered(err); r != "too_large" {
		t.Fatal(err)
	}
	if doc, err := src.Read(context.Background(), Run{ID: id}, refs[2]); err != nil || !strings.Contains(doc.Text(), "after the big one") {
		t.Fatalf("%v %+v", err, doc)
	}
}

func TestExportRefusesBadFiles(t *testing.T) {
	src := ChatGPTExport()
	dir := t.TempDir()
	huge := filepath.Join(dir, "huge.json")
	f, _ := os.Create(huge)
	f.WriteString("[")
	f.Truncate(MaxExportBytes + 1) // sparse: nothing written
	f.Close()
	_, err := src.Resolve(huge, nil)
	if e := fault.As(err); e == nil || e.Code != fault.InputInvalid || !strings.Contains(e.Msg, "at most 128 MiB") || e.Help == "" {
		t.Fatalf("a file over 128 MiB: %v", err)
	}
	notArray := filepath.Join(dir, "object.json")
	os.WriteFile(notArray, []byte(`{"conversations":[]}`), 0o600)
	for loc, want := range map[string]string{
		"":                               "is required",
		"rel/conversations.json":         "is relative",
		filepath.Join(dir, "x.zip"):      "unzip it",
		filepath.Join(dir, "missing"):    "cannot be read",
		dir:                              "holds no conversations.json",
		notArray:                         "does not hold a JSON array",
		"/proc/self/status-not-there-42": "cannot be read",
	} {
		if _, err := src.Resolve(loc, nil); err == nil || fault.As(err).Code != fault.InputInvalid || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v", loc, err)
		}
	}
	// A damaged file (cut short) fails discovery, saying so.
	cut := writeExport(t, gptConv("a", 1, "alpha"))
	p := filepath.Join(cut, "conversations.json")
	b, _ := os.ReadFile(p)
	os.WriteFile(p, b[:len(b)/2], 0o600)
	id, err := src.Resolve(cut, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := src.Discover(context.Background(), Run{ID: id}, nil); err == nil || fault.As(err).Code != fault.SourceFailed || !strings.Contains(err.Error(), "truncated or damaged") {
		t.Fatalf("a damaged export: %v", err)
	}
}

// heapPeak samples the live heap until stop is called, and returns the
// highest sample.
func heapPeak() (stop func() uint64) {
	var peak atomic.Uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
			select {
			case <-done:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	})
	return func() uint64 { close(done); wg.Wait(); return peak.Load() }
}

// A generated export discovered and read whole in bounded memory: the
// live heap stays far below the file's size. make test reads 16 MiB; the
// full 128 MiB runs when not -short and LOCI_EXPORT_128 is set (make
// soak sets it), as it takes a while under the race detector.
func TestExportBoundedMemory(t *testing.T) {
	size := int64(16 << 20)
	if os.Getenv("LOCI_EXPORT_128") != "" && !testing.Short() {
		size = MaxExportBytes - 1<<20
	}
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, "conversations.json"))
	if err != nil {
		t.Fatal(err)
	}
	n, err := exportgen.ChatGPT(f, size, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	src := ChatGPTExport()
	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	stop := heapPeak()
	id, err := src.Resolve(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	refs, err := src.Discover(context.Background(), Run{ID: id}, nil)
	if err != nil || len(refs) != n {
		t.Fatalf("%d refs of %d: %v", len(refs), n, err)
	}
	var bytes int64
	for _, ref := range refs {
		doc, err := src.Read(context.Background(), Run{ID: id}, ref)
		if err != nil {
			t.Fatal(err)
		}
		bytes += doc.Bytes
		if text := doc.Text(); strings.Contains(text, exportgen.ReasoningSentinel) || strings.Contains(text, exportgen.ToolOutputSentinel) {
			t.Fatalf("%s holds reasoning or tool output", ref.ID)
		}
	}
	peak := stop()
	grew := int64(peak) - int64(base.HeapInuse)
	t.Logf("%d conversations, %.1f MiB read; live heap peak %.1f MiB above the start", n, float64(bytes)/(1<<20), float64(grew)/(1<<20))
	if bytes < size*9/10 {
		t.Fatalf("read %d of %d bytes", bytes, size)
	}
	if grew > MaxConversationBytes {
		t.Fatalf("the live heap grew by %.1f MiB reading a %d MiB export: not bounded", float64(grew)/(1<<20), size>>20)
	}
}

// FuzzExportParse feeds arbitrary bytes to both formats' parsers and to the
// scan of a file: an export is input from elsewhere, and nothing in it may
// panic the daemon or make discovery and reading disagree.
func FuzzExportParse(f *testing.F) {
	for _, p := range []string{"testdata/transcripts/chatgpt-export/conversations.json", "testdata/transcripts/claude-export/conversations.json"} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`[{"id":"a","current_node":"x","mapping":{"x":{"parent":"y"},"y":{"parent":"x"}}}]`))
	f.Add([]byte(`[{"uuid":"a","current_leaf_message_uuid":"m","chat_messages":[{"uuid":"m","parent_message_uuid":"m","sender":"human"}]}]`))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		parseChatGPTConversation(b)
		parseClaudeConversation(b)
		p := filepath.Join(dir, "conversations.json")
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		for _, src := range []ExportFile{ChatGPTExport(), ClaudeExport()} {
			id := store.SourceIdentity{Adapter: src.Format.Name, Locator: p}
			refs, err := src.Discover(context.Background(), Run{ID: id}, nil)
			if err != nil {
				continue
			}
			for _, ref := range refs {
				if _, err := src.Read(context.Background(), Run{ID: id}, ref); err != nil {
					if _, ok := IsFiltered(err); !ok {
						t.Fatalf("%s: a discovered conversation failed to read: %v", ref.ID, err)
					}
				}
			}
		}
	})
}
