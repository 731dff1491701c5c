package kinds

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loci-dev/loci/actors"
	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/sources"
	"github.com/loci-dev/loci/sources/contract"
	"github.com/loci-dev/loci/sources/installed"
	"github.com/loci-dev/loci/sources/pack"
	"github.com/loci-dev/loci/store"
)

// batchy is a source as an installed one is: a sources.BatchReader whose
// discovery carries the odd documents whole (Ref.Doc) and lists the even
// ones to read; doc-<filtered> is filtered at discovery. Its batch read
// answers doc-10 filtered, doc-12 a timeout, doc-14 gone, and panics on
// a chunk holding panicOn. It records every Read (none is expected) and
// every chunk ReadBatch is handed.
type batchy struct {
	docs     int
	filtered int
	panicOn  string
	mu       sync.Mutex
	reads    []string
	chunks   [][]string
}

func (b *batchy) Info() sources.Info { return sources.Info{Name: "batchy"} }

func (b *batchy) Resolve(loc string, _ map[string]string) (store.SourceIdentity, error) {
	return store.SourceIdentity{Adapter: "batchy", Locator: loc}, nil
}

func (b *batchy) ParseCursor(json.RawMessage) error { return nil }

func (b *batchy) doc(id string) *sources.Document {
	text := "the text of " + id
	return &sources.Document{ID: id, Name: id, Room: "chats", Kind: store.KindNote, URI: "batchy://" + id,
		Origin: json.RawMessage(`{"at":"` + id + `"}`), Units: []string{text}, Bytes: int64(len(text))}
}

func (b *batchy) Discover(_ context.Context, _ sources.Run, cursor json.RawMessage) ([]sources.Ref, error) {
	var refs []sources.Ref
	for i := 1; i <= b.docs; i++ {
		id := fmt.Sprintf("doc-%d", i)
		ref := sources.Ref{ID: id, Cursor: json.RawMessage(fmt.Sprint(i)), Size: 20}
		switch {
		case i == b.filtered:
			ref.Filtered = "empty"
		case i%2 == 1:
			ref.Doc = b.doc(id)
		}
		refs = append(refs, ref)
	}
	return refs, nil
}

func (b *batchy) Read(_ context.Context, _ sources.Run, ref sources.Ref) (*sources.Document, error) {
	b.mu.Lock()
	b.reads = append(b.reads, ref.ID)
	b.mu.Unlock()
	return b.doc(ref.ID), nil
}

func (b *batchy) ReadBatch(_ context.Context, _ sources.Run, refs []sources.Ref) []sources.ReadResult {
	ids := make([]string, len(refs))
	for i, r := range refs {
		ids[i] = r.ID
	}
	b.mu.Lock()
	b.chunks = append(b.chunks, ids)
	panicOn := b.panicOn
	b.mu.Unlock()
	if panicOn != "" && slices.Contains(ids, panicOn) {
		panic("the batch holding " + panicOn + " broke")
	}
	out := make([]sources.ReadResult, len(refs))
	for i, r := range refs {
		switch r.ID {
		case "doc-10":
			out[i].Err = &sources.Filtered{Reason: "binary"}
		case "doc-12":
			out[i].Err = fault.New(fault.SourceTimeout, "the source batchy: its read call ran past its time limit of 1m0s and was stopped", "h")
		case "doc-14":
			out[i].Err = fmt.Errorf("the source batchy: doc-14 is gone: %w", fs.ErrNotExist)
		default:
			out[i].Doc = b.doc(r.ID)
		}
	}
	return out
}

// mineOf registers src (named batchy) enabled in a fresh runtime and
// submits a mine of it into wing w.
func mineOf(t *testing.T, src sources.Adapter) (*actors.Jobs, *store.Job) {
	var log syncBuffer
	return mineLogged(t, src, &log)
}

// mineLogged is mineOf with the runtime's log written to log.
func mineLogged(t *testing.T, src sources.Adapter, log *syncBuffer) (*actors.Jobs, *store.Job) {
	t.Helper()
	reg := sources.NewRegistry()
	if _, err := reg.Put(sources.Entry{Adapter: src, State: sources.StateEnabled, Origin: sources.OriginLocal}); err != nil {
		t.Fatal(err)
	}
	j, _ := sourceRuntime(t, t.TempDir(), reg, log)
	job, err := submit(t, j, "mine", `{"source":"batchy","locator":"inbox","wing":"w"}`)
	if err != nil {
		t.Fatal(err)
	}
	return j, job
}

// A mine of a BatchReader files the documents discovery carried without
// reading them, reads the others in chunks spread over the cores with
// ReadBatch (never Read), and counts each result as a Read's: filtered,
// failed (named in the note), gone (skipped).
func TestMineReadsBatchesAndFilesCarriedDocuments(t *testing.T) {
	src := &batchy{docs: 30, filtered: 30}
	j, job := mineOf(t, src)
	done := waitDone(t, j, job.ID)
	var res api.MineResult
	_ = json.Unmarshal(done.Result, &res)
	// 15 carried, 14 to read of which 3 are not filed (filtered, timed
	// out, gone), doc-30 filtered at discovery.
	if done.Status != store.JobCompleted || res.Discovered != 30 || res.Created != 26 || res.Filtered != 2 || res.Skipped != 2 ||
		!strings.Contains(res.Note, "1 documents could not be read, the source failing on them (the first, doc-12: the source batchy: its read call ran past its time limit") {
		t.Fatalf("mine: %s %s %+v", done.Status, done.Error, res)
	}
	var filed []string
	for _, d := range chats(t, j) {
		if d.Current() {
			filed = append(filed, d.Name)
			if d.Content != "the text of "+d.Name || d.Source.URI != "batchy://"+d.Name || d.Source.Kind != store.KindNote {
				t.Fatalf("drawer %+v", d)
			}
		}
	}
	if len(filed) != 26 || slices.Contains(filed, "doc-10") || slices.Contains(filed, "doc-12") || !slices.Contains(filed, "doc-1") || !slices.Contains(filed, "doc-2") {
		t.Fatalf("filed %v", filed)
	}
	src.mu.Lock()
	defer src.mu.Unlock()
	if len(src.reads) != 0 {
		t.Fatalf("Read was called for %v", src.reads)
	}
	// The 14 to read, in chunks of ⌈14 / cores⌉, none carried.
	procs := runtime.GOMAXPROCS(0)
	size := min(256, (14+procs-1)/procs)
	var asked []string
	for _, c := range src.chunks {
		if len(c) > size {
			t.Fatalf("a chunk of %d, want at most %d", len(c), size)
		}
		asked = append(asked, c...)
	}
	slices.Sort(asked)
	var want []string
	for i := 2; i < 30; i += 2 {
		want = append(want, fmt.Sprintf("doc-%d", i))
	}
	slices.Sort(want)
	if fmt.Sprint(asked) != fmt.Sprint(want) || len(src.chunks) != (14+size-1)/size {
		t.Fatalf("ReadBatch was handed %v", src.chunks)
	}
}

// A panic in ReadBatch fails that chunk's documents (counted skipped,
// the first named), never the job or the daemon.
func TestMineSurvivesABatchReaderThatPanics(t *testing.T) {
	src := &batchy{docs: 30, filtered: 30, panicOn: "doc-2"}
	var log syncBuffer
	j, job := mineLogged(t, src, &log)
	done := waitDone(t, j, job.ID)
	var res api.MineResult
	_ = json.Unmarshal(done.Result, &res)
	src.mu.Lock()
	var broken []string
	for _, c := range src.chunks {
		if slices.Contains(c, "doc-2") {
			broken = c
		}
	}
	src.mu.Unlock()
	// Filed: the 15 carried, and the read ones outside the broken chunk
	// but doc-10 (filtered), doc-12 (timed out) and doc-14 (gone).
	wantCreated := 15
	for i := 2; i < 30; i += 2 {
		if id := fmt.Sprintf("doc-%d", i); !slices.Contains(broken, id) && i != 10 && i != 12 && i != 14 {
			wantCreated++
		}
	}
	if done.Status != store.JobCompleted || res.Created != wantCreated ||
		!strings.Contains(res.Note, "could not be read, the source failing on them (the first, doc-2: the batchy source panicked: the batch holding doc-2 broke)") {
		t.Fatalf("mine (chunk %v): %s %s %+v", broken, done.Status, done.Error, res)
	}
	if logs := log.String(); !strings.Contains(logs, `msg="a source panicked"`) || !strings.Contains(logs, "mine_batch_test.go") {
		t.Fatalf("the log: %s", logs)
	}
	// The runtime goes on.
	src.mu.Lock()
	src.panicOn = ""
	src.mu.Unlock()
	job, err := submit(t, j, "mine", `{"source":"batchy","locator":"inbox","wing":"w","full":true}`)
	if err != nil {
		t.Fatal(err)
	}
	if done := waitDone(t, j, job.ID); done.Status != store.JobCompleted {
		t.Fatalf("the next mine: %s %s", done.Status, done.Error)
	}
}

// notesGuest is a source package's Go guest (run in-process): the files
// directly under its locator by name past an {"after": name} cursor; a
// ".log" file is carried whole by discovery, the others are read.
type notesGuest struct{}

func (notesGuest) Resolve(req *contract.Request) (*contract.Answer, error) {
	return &contract.Answer{Identity: &contract.Identity{Locator: req.Locator}}, nil
}

func (notesGuest) Discover(req *contract.Request) (*contract.Answer, error) {
	var c struct {
		After string `json:"after"`
	}
	if len(req.Cursor) > 0 {
		if err := json.Unmarshal(req.Cursor, &c); err != nil || c.After == "" {
			return nil, contract.Errorf(contract.ErrCursor, "not my cursor")
		}
	}
	entries, err := os.ReadDir(req.Locator)
	if err != nil {
		return nil, err
	}
	a := &contract.Answer{}
	for _, e := range entries { // sorted by name
		if e.Name() <= c.After {
			continue
		}
		if len(a.Items) == req.Limit {
			a.More = true
			break
		}
		cur, _ := json.Marshal(map[string]string{"after": e.Name()})
		it := contract.Item{ID: e.Name(), Cursor: cur}
		if strings.HasSuffix(e.Name(), ".log") {
			b, _ := os.ReadFile(filepath.Join(req.Locator, e.Name()))
			it.Document = &contract.Document{Name: e.Name(), Kind: "note", Units: []string{string(b)}}
		}
		a.Items = append(a.Items, it)
	}
	return a, nil
}

func (notesGuest) Read(req *contract.Request) (*contract.Answer, error) {
	a := &contract.Answer{}
	for _, it := range req.Items {
		if strings.HasSuffix(it.ID, ".log") {
			return nil, contract.Errorf(contract.ErrFailed, "a log was read: discovery carried it")
		}
		b, err := os.ReadFile(filepath.Join(req.Locator, it.ID))
		r := contract.ReadResult{ID: it.ID, Document: &contract.Document{Name: it.ID, Kind: "file", Units: []string{string(b)}}}
		if err != nil {
			r = contract.ReadResult{ID: it.ID, Error: contract.Errorf(contract.ErrNotFound, "gone")}
		}
		a.Documents = append(a.Documents, r)
	}
	return a, nil
}

// An installed source (its guest run in-process) mines through the job:
// carried documents filed, the others read in batches, into the room of
// the source's name, and a second mine goes on from the stored cursor.
func TestMineAnInstalledSource(t *testing.T) {
	m, err := pack.ParseManifest([]byte("contract = 1\nname = \"notes\"\nversion = \"1.0.0\"\nmodule = \"notes.wasm\"\n[source]\nincremental = true\n[permissions]\nread = [\"locator\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	a, err := installed.New(&pack.Package{Manifest: m}, installed.Native(notesGuest{}), installed.Options{Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	reg := sources.NewRegistry()
	if _, err := reg.Put(sources.Entry{Adapter: a, State: sources.StateEnabled, Origin: sources.OriginLocal}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for i := range 10 {
		name := fmt.Sprintf("note-%02d.md", i)
		if i%3 == 0 {
			name = fmt.Sprintf("day-%02d.log", i)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte("what happened in "+name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var log syncBuffer
	j, _ := sourceRuntime(t, t.TempDir(), reg, &log)
	mine := func() api.MineResult {
		t.Helper()
		job, err := submit(t, j, "mine", `{"source":"notes","locator":"`+dir+`/","wing":"w"}`)
		if err != nil {
			t.Fatal(err)
		}
		done := waitDone(t, j, job.ID)
		var res api.MineResult
		_ = json.Unmarshal(done.Result, &res)
		if done.Status != store.JobCompleted {
			t.Fatalf("mine: %s %s", done.Status, done.Error)
		}
		return res
	}
	if res := mine(); res.Discovered != 10 || res.Created != 10 || res.Skipped != 0 {
		t.Fatalf("the first mine: %+v", res)
	}
	var names []string
	err = j.DB.View(context.Background(), func(r store.Reader) error {
		w, err := store.FindWing(r, "w")
		if err != nil {
			return err
		}
		rm, err := store.FindRoom(r, w, "notes")
		if err != nil {
			return err
		}
		return r.Drawers(rm.ID, false, func(d *store.Drawer) bool {
			if d.Content != "what happened in "+d.Name {
				t.Errorf("drawer %s: %q", d.Name, d.Content)
			}
			names = append(names, d.Name)
			return true
		})
	})
	if err != nil || len(names) != 10 {
		t.Fatalf("room notes: %v %v", names, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "note-99.md"), []byte("what happened last"), 0o644); err != nil {
		t.Fatal(err)
	}
	if res := mine(); res.Mode != api.MineIncremental || res.Discovered != 1 || res.Created != 1 {
		t.Fatalf("the second mine: %+v", res)
	}
}

// A BatchReader is handed full chunks: the mine's batches hold up to
// mineBatchCalls documents for it (not mineBatch), so 1,000 small
// documents to read take a handful of calls, not one per 64 / cores.
func TestMineHandsABatchReaderFullChunks(t *testing.T) {
	src := &batchy{docs: 2000}
	j, job := mineOf(t, src)
	if done := waitDone(t, j, job.ID); done.Status != store.JobCompleted {
		t.Fatalf("mine: %s %s", done.Status, done.Error)
	}
	src.mu.Lock()
	defer src.mu.Unlock()
	largest, read := 0, 0
	for _, c := range src.chunks {
		largest, read = max(largest, len(c)), read+len(c)
	}
	procs := runtime.GOMAXPROCS(0)
	// 1,000 of the 2,000 are carried; the 1,000 to read come in batches of
	// 512 documents (256 to read), each split over the cores.
	if want := min(256, (256+procs-1)/procs); read != 1000 || largest < want {
		t.Fatalf("%d read in %d chunks, the largest %d, want one of at least %d", read, len(src.chunks), largest, want)
	}
}

// An up-to-date mine explains change times for the directory source only:
// another source's cursor is its own (a commit, a session's offset).
func TestUpToDateNoteSaysChangeTimesForDirectoriesOnly(t *testing.T) {
	s := api.MineResult{Outcome: api.MineUpToDate, Wing: "w", Tracked: 3}
	if n := mineNote(s, true, ""); !strings.Contains(n, "Up to date") || !strings.Contains(n, "change time") {
		t.Fatalf("directory: %s", n)
	}
	if n := mineNote(s, false, ""); !strings.Contains(n, "Up to date") || strings.Contains(n, "change time") || strings.Contains(n, "Files") {
		t.Fatalf("another source: %s", n)
	}
}

// endless is a source whose discovery never ends on its own (an
// installed source answering "more" forever): it lists until its context
// ends.
type endless struct{ batchy }

func (e *endless) Discover(ctx context.Context, _ sources.Run, _ json.RawMessage) ([]sources.Ref, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// A cancel reaches a discovery in progress: the job ends cancelled at
// once, not after the source gives up (nothing was filed from it).
func TestCancelStopsADiscoveryInProgress(t *testing.T) {
	src := &endless{}
	j, job := mineOf(t, src)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		got, err := j.Get(t.Context(), job.ID)
		if err == nil && got.Status == store.JobRunning {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the mine never ran: %+v %v", got, err)
		}
	}
	t0 := time.Now()
	if _, err := j.Cancel(t.Context(), job.ID); err != nil {
		t.Fatal(err)
	}
	for {
		got, err := j.Get(t.Context(), job.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status == store.JobCancelled {
			return
		}
		if time.Since(t0) > 10*time.Second {
			t.Fatalf("10 s after a cancel: %s %s", got.Status, got.Error)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
