package kinds

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/loci-dev/loci/actors"
	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/config"
	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/sources"
	"github.com/loci-dev/loci/sources/secret"
	"github.com/loci-dev/loci/store"
	"github.com/loci-dev/loci/store/badgerdb"
)

// keyed is a test source as an installed one would be: it needs a
// credential, lists docs documents "doc-1".."doc-N" of kind "chat" (not a
// kind of the spec's list), records the credential each call is given,
// and panics in the entry point named by panicIn ("discover", "suspects",
// "list", "cursor", "resolve", or "read" for doc-2 only); leak makes
// Discover fail quoting the credential; block holds Read of doc-1 until
// closed.
type keyed struct {
	name    string
	text    string
	docs    int
	panicIn *atomic.Value
	leak    bool
	echo    bool
	block   chan struct{}
	mu      *sync.Mutex
	seen    *[]string
}

func newKeyed(name, text string) keyed {
	p := &atomic.Value{}
	p.Store("")
	return keyed{name: name, text: text, docs: 3, panicIn: p, mu: &sync.Mutex{}, seen: &[]string{}}
}

func (k keyed) panics(at string) {
	if k.panicIn.Load().(string) == at {
		panic("the " + at + " entry point broke")
	}
}

func (k keyed) note(what string, c sources.Credential) {
	k.mu.Lock()
	defer k.mu.Unlock()
	*k.seen = append(*k.seen, what+"="+string(c.Secret()))
}

func (k keyed) Info() sources.Info {
	return sources.Info{Name: k.name, Options: []string{"prune"}, Capabilities: sources.Capabilities{Incremental: true, NeedsCredentials: true}}
}

func (k keyed) Resolve(loc string, _ map[string]string) (store.SourceIdentity, error) {
	k.panics("resolve")
	return store.SourceIdentity{Adapter: k.name, Locator: loc}, nil
}

func (k keyed) ParseCursor(json.RawMessage) error { k.panics("cursor"); return nil }

func (k keyed) refs(from int) []sources.Ref {
	var out []sources.Ref
	for i := from + 1; i <= k.docs; i++ {
		out = append(out, sources.Ref{ID: fmt.Sprintf("doc-%d", i), Cursor: json.RawMessage(fmt.Sprint(i)), Size: 10})
	}
	return out
}

func (k keyed) Discover(_ context.Context, run sources.Run, cursor json.RawMessage) ([]sources.Ref, error) {
	k.panics("discover")
	k.note("discover", run.Credential)
	if k.leak {
		return nil, fault.New(fault.SourceFailed, "the service refused the token "+string(run.Credential.Secret()), "check the token")
	}
	var from int
	_ = json.Unmarshal(cursor, &from)
	return k.refs(from), nil
}

func (k keyed) DiscoverSuspects(ctx context.Context, run sources.Run, cursor json.RawMessage) ([]sources.Ref, []sources.Ref, error) {
	k.panics("suspects")
	refs, err := k.Discover(ctx, run, cursor)
	return refs, nil, err
}

func (k keyed) List(_ context.Context, run sources.Run) ([]sources.Ref, bool, error) {
	k.panics("list")
	k.note("list", run.Credential)
	return k.refs(0), true, nil
}

func (k keyed) Read(_ context.Context, run sources.Run, ref sources.Ref) (*sources.Document, error) {
	if ref.ID == "doc-2" {
		k.panics("read")
	}
	if ref.ID == "doc-1" && k.block != nil {
		<-k.block
	}
	k.note("read", run.Credential)
	text, uri, origin := k.text+" of "+ref.ID, k.name+"://"+ref.ID, json.RawMessage(`{"at":"`+ref.ID+`"}`)
	if k.echo && ref.ID == "doc-3" {
		// A source putting its credential where the palace keeps it.
		secret := string(run.Credential.Secret())
		text += " with the key " + secret
		uri += "?key=" + secret
		origin = json.RawMessage(`{"key":"` + secret + `"}`)
	}
	return &sources.Document{ID: ref.ID, Name: ref.ID, Room: "chats", Kind: "chat", URI: uri, Origin: origin,
		Units: []string{text}, Bytes: int64(len(text))}, nil
}

// sourceRuntime is a runtime mining from reg, its logs (the store's, the
// actor system's and the jobs') written to log; it is stopped and its
// store closed at the end of the test, or by the stop it returns.
func sourceRuntime(t *testing.T, dir string, reg *sources.Registry, log *syncBuffer) (*actors.Jobs, func()) {
	t.Helper()
	logger := slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	db, err := badgerdb.Open(dir, logger)
	if err != nil {
		t.Fatal(err)
	}
	sys := actors.Start(db, logger, slog.LevelDebug)
	j := actors.NewJobs(db, sys, logger,
		actors.JobConfig{MaxConcurrency: 2, BackgroundConcurrency: 1, LeaseTTL: 30 * time.Second, DrainTimeout: 5 * time.Second})
	j.Register(All(j, Settings{Dedup: store.Dedup{Enabled: true, Threshold: 0.9}, Mining: Mining{Sources: reg, ChunkChars: 200, Secrets: secret.Redact, Log: logger}})...)
	if err := j.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			j.Stop(context.Background())
			_ = sys.Stop(context.Background())
			db.Close()
		})
	}
	t.Cleanup(stop)
	return j, stop
}

// syncBuffer is a buffer the loggers of several goroutines write to.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// everything is every key and value of a closed store, read with Badger
// itself, as one text to grep.
func everything(t *testing.T, dir string) string {
	t.Helper()
	bdb, err := badger.Open(badger.DefaultOptions(dir).WithMemTableSize(badgerdb.MemTableSize).WithLogger(nil))
	if err != nil {
		t.Fatal(err)
	}
	defer bdb.Close()
	var all strings.Builder
	err = bdb.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.DefaultIteratorOptions)
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			v, err := it.Item().ValueCopy(nil)
			if err != nil {
				return err
			}
			all.Write(it.Item().KeyCopy(nil))
			all.WriteByte(0)
			all.Write(v)
			all.WriteByte(0)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return all.String()
}

// A miner's run reads its credential when the job runs and hands it to
// the source's every call; the credential never reaches the job's stored
// input, its result, the events (the change log), the drawers (a source
// that puts it in a document's text, URI or origin has it replaced),
// anything else in the store, nor the logs, while the reference (the
// variable's name) is in the input. A source's error quoting the credential fails the job with
// the credential replaced.
func TestMineHandsTheSourceTheCredentialAndKeepsItNowhere(t *testing.T) {
	const secret = "s3cr3t-credential-value-42"
	t.Setenv("LOCI_TEST_SOURCE_KEY", secret)
	src := newKeyed("keyed", "the text")
	src.echo = true
	reg := sources.NewRegistry(sources.Directory{MaxFileBytes: 1 << 20})
	if _, err := reg.Put(sources.Entry{Adapter: src, State: sources.StateEnabled, Origin: sources.OriginLocal}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var log syncBuffer
	j, stop := sourceRuntime(t, dir, reg, &log)
	// What a miner's run submits (services.Miners.Run; its own test checks
	// that it passes the reference): the typed mine and the credential's
	// reference, never its value.
	run := func(full bool) (*store.Job, error) {
		sub := MineSubmission(MineParams{Source: "keyed", Locator: "inbox", Wing: "w", Full: full}, store.ByHTTP, store.ByHTTP)
		sub.Credential = &config.CredentialRef{Env: "LOCI_TEST_SOURCE_KEY"}
		return j.Submit(context.Background(), sub)
	}
	job, err := run(false)
	if err != nil {
		t.Fatal(err)
	}
	done := waitDone(t, j, job.ID)
	var res api.MineResult
	_ = json.Unmarshal(done.Result, &res)
	if done.Status != store.JobCompleted || res.Created != 3 {
		t.Fatalf("mine: %s %s %+v", done.Status, done.Error, res)
	}
	src.mu.Lock()
	seen := strings.Join(*src.seen, " ")
	src.mu.Unlock()
	if strings.Count(seen, "="+secret) != 4 || strings.Count(seen, "=") != 4 {
		t.Fatalf("the calls the source saw: %s", seen)
	}
	// The drawers are of kind other: "chat" is not a kind of the spec's;
	// the one the source put its credential in holds "[credential]".
	echoed := 0
	for _, d := range chats(t, j) {
		if d.Source.Kind != store.KindOther {
			t.Fatalf("drawer %s of kind %q", d.Name, d.Source.Kind)
		}
		if strings.Contains(d.Content, "with the key [credential]") && strings.Contains(d.Source.URI, "?key=[credential]") {
			echoed++
		}
	}
	if echoed != 1 {
		t.Fatalf("%d drawers with the credential replaced, want 1", echoed)
	}

	// A direct submission of a source that needs a credential, without
	// one, is refused; one naming none of the miner's is not possible.
	if _, err := submit(t, j, "mine", `{"source":"keyed","locator":"inbox"}`); !fault.Is(err, fault.InputInvalid) || !strings.Contains(err.Error(), "credential") {
		t.Fatalf("a mine of keyed without a credential: %v", err)
	}
	// A credential that cannot be read when the job runs fails it, naming
	// the kind of reference only.
	// (A miner whose credential is not set is refused before it submits:
	// services' TestMinerRunPassesTheCredentialsReference.)
	t.Setenv("LOCI_TEST_SOURCE_KEY", "")
	job, err = j.Submit(context.Background(), actors.Submission{Type: "mine", Channel: store.ByHTTP, Credential: &config.CredentialRef{Env: "LOCI_TEST_SOURCE_KEY"},
		Params: json.RawMessage(`{"source":"keyed","locator":"inbox","wing":"w","full":true}`)})
	if err != nil {
		t.Fatal(err)
	}
	if unset := waitDone(t, j, job.ID); unset.Status != store.JobFailed || !strings.Contains(unset.Error, "the keyed source's credential (env) cannot be read") || strings.Contains(unset.Error, "LOCI_TEST_SOURCE_KEY") {
		t.Fatalf("a credential unset at run time: %s %q", unset.Status, unset.Error)
	}
	t.Setenv("LOCI_TEST_SOURCE_KEY", secret)

	// A source's error quoting the credential: the job's error does not.
	leaky := newKeyed("keyed", "the text")
	leaky.leak = true
	if _, err := reg.Put(sources.Entry{Adapter: leaky, State: sources.StateEnabled, Origin: sources.OriginLocal}); err != nil {
		t.Fatal(err)
	}
	job, err = run(true)
	if err != nil {
		t.Fatal(err)
	}
	failed := waitDone(t, j, job.ID)
	if failed.Status != store.JobFailed || !strings.Contains(failed.Error, "refused the token [credential]") || strings.Contains(failed.Error, secret) {
		t.Fatalf("a failure quoting the credential: %s %q", failed.Status, failed.Error)
	}

	stop()
	all := everything(t, dir)
	if !strings.Contains(all, "LOCI_TEST_SOURCE_KEY") || !strings.Contains(all, "the text of doc-3") {
		t.Fatal("the store's dump holds neither the job's input nor the drawers: the check below would prove nothing")
	}
	if strings.Contains(all, secret) {
		i := strings.Index(all, secret)
		t.Fatalf("the credential is in the store: …%q…", all[max(0, i-200):i])
	}
	if logs := log.String(); strings.Contains(logs, secret) || !strings.Contains(logs, "actor system started") {
		t.Fatalf("the logs hold the credential (or nothing): %s", logs)
	}
}

// A source that panics in any entry point fails its job (or, in Read,
// its document) with an error naming the source, and the runtime goes on:
// the next mine of a sound source completes.
func TestMineSurvivesASourceThatPanics(t *testing.T) {
	cases := []struct {
		at      string
		opts    string
		earlier bool // a first mine before (the cursor suspects need)
		refused bool // at submission, not in the job
		docFail bool // the document fails, not the job
	}{
		{at: "resolve", refused: true},
		{at: "cursor"},
		{at: "discover"},
		{at: "suspects", earlier: true},
		{at: "list", opts: `,"options":{"prune":"true"}`},
		{at: "read", docFail: true},
	}
	for _, tc := range cases {
		t.Run(tc.at, func(t *testing.T) {
			src := newKeyed("fragile", "fragile text")
			reg := sources.NewRegistry(sources.Directory{MaxFileBytes: 1 << 20})
			if _, err := reg.Put(sources.Entry{Adapter: src, State: sources.StateEnabled, Origin: sources.OriginLocal}); err != nil {
				t.Fatal(err)
			}
			var log syncBuffer
			j, _ := sourceRuntime(t, t.TempDir(), reg, &log)
			cred := &config.CredentialRef{Env: "LOCI_TEST_FRAGILE_KEY"}
			t.Setenv("LOCI_TEST_FRAGILE_KEY", "fragile-key-value")
			mine := func(extra string) (*store.Job, error) {
				return j.Submit(context.Background(), actors.Submission{Type: "mine", Channel: store.ByHTTP, Credential: cred,
					Params: json.RawMessage(`{"source":"fragile","locator":"inbox","wing":"w"` + extra + `}`)})
			}
			if tc.earlier {
				src.docs = 2
				job, err := mine("")
				if err != nil || waitDone(t, j, job.ID).Status != store.JobCompleted {
					t.Fatalf("the first mine: %v", err)
				}
				src.docs = 3
			}
			src.panicIn.Store(tc.at)
			job, err := mine(tc.opts)
			switch {
			case tc.refused:
				if !fault.Is(err, fault.SourceFailed) || !strings.Contains(err.Error(), "the fragile source panicked: the resolve entry point broke") {
					t.Fatalf("submission: %v", err)
				}
			case err != nil:
				t.Fatal(err)
			case tc.docFail:
				done := waitDone(t, j, job.ID)
				var res api.MineResult
				_ = json.Unmarshal(done.Result, &res)
				if done.Status != store.JobCompleted || res.Created != 2 || res.Skipped != 1 ||
					!strings.Contains(res.Note, "1 documents could not be read, the source failing on them (the first, doc-2: the fragile source panicked: the read entry point broke)") {
					t.Fatalf("mine: %s %s %+v", done.Status, done.Error, res)
				}
			default:
				done := waitDone(t, j, job.ID)
				if done.Status != store.JobFailed || !strings.Contains(done.Error, "the fragile source panicked: the "+tc.at+" entry point broke") {
					t.Fatalf("mine: %s %q", done.Status, done.Error)
				}
			}
			// The daemon's log has the panic, with its stack.
			if logs := log.String(); !tc.refused && (!strings.Contains(logs, `msg="a source panicked"`) || !strings.Contains(logs, "source=fragile") ||
				!strings.Contains(logs, "mine_source_test.go")) {
				t.Fatalf("the log: %s", logs)
			}
			// The runtime goes on: the source mended, a mine completes.
			src.panicIn.Store("")
			job, err = mine(`,"full":true`)
			if err != nil {
				t.Fatal(err)
			}
			if done := waitDone(t, j, job.ID); done.Status != store.JobCompleted {
				t.Fatalf("the next mine: %s %s", done.Status, done.Error)
			}
		})
	}
}

// A mine keeps the adapter it started with when the registry replaces it
// (or removes it) meanwhile; the next mine reads with the new one.
func TestRunningMineKeepsItsAdapter(t *testing.T) {
	old := newKeyed("swapped", "old text")
	old.block = make(chan struct{})
	reg := sources.NewRegistry()
	if _, err := reg.Put(sources.Entry{Adapter: old, State: sources.StateEnabled, Origin: sources.OriginLocal}); err != nil {
		t.Fatal(err)
	}
	var log syncBuffer
	j, _ := sourceRuntime(t, t.TempDir(), reg, &log)
	t.Setenv("LOCI_TEST_SWAP_KEY", "swap-key-value")
	mine := func(extra string) *store.Job {
		job, err := j.Submit(context.Background(), actors.Submission{Type: "mine", Channel: store.ByHTTP, Credential: &config.CredentialRef{Env: "LOCI_TEST_SWAP_KEY"},
			Params: json.RawMessage(`{"source":"swapped","locator":"inbox","wing":"w"` + extra + `}`)})
		if err != nil {
			t.Fatal(err)
		}
		return job
	}
	first := mine("")
	// Wait until the job reads (doc-1 blocks), then replace the adapter.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		old.mu.Lock()
		n := len(*old.seen)
		old.mu.Unlock()
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the mine never discovered")
		}
	}
	if replaced, err := reg.Put(sources.Entry{Adapter: newKeyed("swapped", "new text"), State: sources.StateEnabled, Origin: sources.OriginLocal}); err != nil || !replaced {
		t.Fatalf("replace: %v %v", replaced, err)
	}
	close(old.block)
	if done := waitDone(t, j, first.ID); done.Status != store.JobCompleted {
		t.Fatalf("the running mine: %s %s", done.Status, done.Error)
	}
	texts := func() []string {
		var out []string
		for _, d := range chats(t, j) {
			if d.Current() {
				out = append(out, d.Content)
			}
		}
		return out
	}
	if got := strings.Join(texts(), "|"); strings.Count(got, "old text") != 3 || strings.Contains(got, "new text") {
		t.Fatalf("the running mine read with: %s", got)
	}
	if done := waitDone(t, j, mine(`,"full":true`).ID); done.Status != store.JobCompleted {
		t.Fatalf("the next mine: %s %s", done.Status, done.Error)
	}
	if got := strings.Join(texts(), "|"); strings.Count(got, "new text") != 3 || strings.Contains(got, "old text") {
		t.Fatalf("the next mine read with: %s", got)
	}
}

// chats is every drawer of room chats in wing w, current or not.
func chats(t *testing.T, j *actors.Jobs) []store.Drawer {
	t.Helper()
	var out []store.Drawer
	err := j.DB.View(context.Background(), func(r store.Reader) error {
		w, err := store.FindWing(r, "w")
		if err != nil {
			return err
		}
		rm, err := store.FindRoom(r, w, "chats")
		if err != nil {
			return err
		}
		return r.Drawers(rm.ID, false, func(d *store.Drawer) bool { out = append(out, *d); return true })
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
