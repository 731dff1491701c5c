package installed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/sources"
	"github.com/loci-dev/loci/sources/contract"
	"github.com/loci-dev/loci/sources/pack"
	"github.com/loci-dev/loci/sources/sandbox"
	"github.com/loci-dev/loci/store"
)

// manifest is a package's manifest parsed from its TOML, with extra
// lines (permissions, source fields) appended.
func manifest(t *testing.T, extra string) *pack.Package {
	t.Helper()
	m, err := pack.ParseManifest([]byte(`contract = 1
name = "notes"
version = "1.0.0"
module = "notes.wasm"
` + extra))
	if err != nil {
		t.Fatal(err)
	}
	return &pack.Package{Manifest: m}
}

// fake is a programmable guest: the numbered items "item-001".. past an
// {"after": n} cursor, read as documents unless a hook says otherwise.
type fake struct {
	items    int
	resolve  func(req *contract.Request) (*contract.Answer, error)
	discover func(req *contract.Request) (*contract.Answer, error)
	read     func(req *contract.Request) (*contract.Answer, error)
}

func itemID(n int) string { return fmt.Sprintf("item-%03d", n) }

func cursorOf(n int) json.RawMessage { return json.RawMessage(fmt.Sprintf(`{"after":%d}`, n)) }

func after(req *contract.Request) (int, error) {
	if len(req.Cursor) == 0 {
		return 0, nil
	}
	var c struct {
		After *int `json:"after"`
	}
	d := json.NewDecoder(strings.NewReader(string(req.Cursor)))
	d.DisallowUnknownFields()
	if err := d.Decode(&c); err != nil || c.After == nil {
		return 0, contract.Errorf(contract.ErrCursor, "not my cursor")
	}
	return *c.After, nil
}

func (f *fake) Resolve(req *contract.Request) (*contract.Answer, error) {
	if f.resolve != nil {
		return f.resolve(req)
	}
	return &contract.Answer{Identity: &contract.Identity{Locator: req.Locator}}, nil
}

func (f *fake) Discover(req *contract.Request) (*contract.Answer, error) {
	if f.discover != nil {
		return f.discover(req)
	}
	from, err := after(req)
	if err != nil {
		return nil, err
	}
	a := &contract.Answer{}
	for n := from + 1; n <= f.items; n++ {
		if len(a.Items) == req.Limit {
			a.More = true
			break
		}
		a.Items = append(a.Items, contract.Item{ID: itemID(n), Cursor: cursorOf(n), Size: 10})
	}
	return a, nil
}

func (f *fake) Read(req *contract.Request) (*contract.Answer, error) {
	if f.read != nil {
		return f.read(req)
	}
	a := &contract.Answer{}
	for _, it := range req.Items {
		a.Documents = append(a.Documents, contract.ReadResult{ID: it.ID, Document: &contract.Document{Name: it.ID, Units: []string{"text of " + it.ID}}})
	}
	return a, nil
}

// recorder is a Caller over a handler that keeps every call's grants and
// request.
type recorder struct {
	mu     sync.Mutex
	grants []sandbox.Grants
	reqs   []contract.Request
	next   Caller
}

func record(h contract.Handler) *recorder { return &recorder{next: Native(h)} }

func (r *recorder) call(ctx context.Context, g sandbox.Grants, req *contract.Request) (*contract.Answer, error) {
	r.mu.Lock()
	r.grants = append(r.grants, g)
	r.reqs = append(r.reqs, *req)
	r.mu.Unlock()
	return r.next(ctx, g, req)
}

func (r *recorder) calls(call string) []contract.Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []contract.Request
	for _, q := range r.reqs {
		if q.Call == call {
			out = append(out, q)
		}
	}
	return out
}

func newAdapter(t *testing.T, p *pack.Package, call Caller, o Options) *adapter {
	t.Helper()
	a, err := New(p, call, o)
	if err != nil {
		t.Fatal(err)
	}
	return a.(*adapter)
}

// mustFail checks err is code with a message naming the source notes and
// holding want.
func mustFail(t *testing.T, err error, code fault.Code, want string) {
	t.Helper()
	if !fault.Is(err, code) || !strings.Contains(err.Error(), "the source notes") || !strings.Contains(err.Error(), want) {
		t.Fatalf("want %s naming the source and %q, got %v", code, want, err)
	}
}

func TestInfoIsTheManifests(t *testing.T) {
	p := manifest(t, `[source]
options = ["since", "project"]
incremental = true
triggers = ["watch"]
default_locator = "~/notes"
format = "notes/v2"
`)
	a, err := New(p, Native(&fake{}), Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := a.Info()
	want := sources.Info{Name: "notes", Options: []string{"since", "project"}, Format: "notes/v2", DefaultLocator: "~/notes",
		Capabilities: sources.Capabilities{Incremental: true, Triggers: []string{"watch"}}}
	if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", want) {
		t.Fatalf("info %+v, want %+v", got, want)
	}
	if _, ok := a.(sources.BatchReader); !ok {
		t.Fatal("an installed adapter is no BatchReader")
	}
	// A package of another contract is never loaded.
	p.Manifest.Contract = 2
	if _, err := New(p, Native(&fake{}), Options{}); !fault.Is(err, fault.SourceIncompatible) || !strings.Contains(err.Error(), "the source notes was built for source contract 2") {
		t.Fatalf("contract 2: %v", err)
	}
}

// Every call is given the consented permissions resolved for the run:
// "locator" is the run's directory, absolute paths as they are, the
// programs, network and memory as consented, and of the variables only
// those listed that are set.
func TestGrantsAreThePermissionsResolvedForTheRun(t *testing.T) {
	p := manifest(t, `[permissions]
read = ["locator", "/opt/shared/../data"]
programs = ["git"]
env = ["NOTES_TOKEN", "NOTES_EMPTY", "NOTES_UNSET"]
network = true
memory_mib = 128
`)
	env := map[string]string{"NOTES_TOKEN": "tok-123456", "NOTES_EMPTY": "", "NOTES_OTHER": "not listed"}
	getenv := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	rec := record(&fake{items: 3})
	a := newAdapter(t, p, rec.call, Options{Getenv: getenv})
	dir := t.TempDir()
	id, err := a.Resolve(dir+"/./", nil)
	if err != nil {
		t.Fatal(err)
	}
	if id != (store.SourceIdentity{Adapter: "notes", Locator: dir}) {
		t.Fatalf("identity %+v", id)
	}
	run := sources.Run{ID: id}
	refs, err := a.Discover(t.Context(), run, nil)
	if err != nil || len(refs) != 3 {
		t.Fatalf("discover: %d %v", len(refs), err)
	}
	if _, err := a.Read(t.Context(), run, refs[0]); err != nil {
		t.Fatal(err)
	}
	want := sandbox.Grants{Dirs: []string{dir, "/opt/data"}, Programs: []string{"git"}, Network: true, MemoryMiB: 128,
		Env: map[string]string{"NOTES_TOKEN": "tok-123456", "NOTES_EMPTY": ""}}
	slices.Sort(want.Dirs)
	if len(rec.grants) != 3 {
		t.Fatalf("%d calls", len(rec.grants))
	}
	for i, g := range rec.grants {
		if fmt.Sprint(g) != fmt.Sprint(want) {
			t.Fatalf("call %d (%s) grants %+v, want %+v", i, rec.reqs[i].Call, g, want)
		}
		q := rec.reqs[i]
		if q.Contract != contract.Version || q.Locator != dir {
			t.Fatalf("call %d: %+v", i, q)
		}
		if at, err := time.Parse(time.RFC3339, q.Now); err != nil || time.Since(at) > time.Minute {
			t.Fatalf("call %d now %q", i, q.Now)
		}
	}

	// An empty locator is the default one; a relative one, a file and a
	// missing directory are the user's input.
	home := t.TempDir()
	t.Setenv("HOME", home)
	if err := os.Mkdir(filepath.Join(home, "notes"), 0o755); err != nil {
		t.Fatal(err)
	}
	p.Manifest.Source.DefaultLocator = "~/notes"
	a = newAdapter(t, p, rec.call, Options{Getenv: getenv})
	if id, err := a.Resolve("", nil); err != nil || id.Locator != filepath.Join(home, "notes") {
		t.Fatalf("the default locator: %+v %v", id, err)
	}
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, loc := range []string{"notes", file, filepath.Join(dir, "missing")} {
		if _, err := a.Resolve(loc, nil); !fault.Is(err, fault.InputInvalid) {
			t.Fatalf("locator %q: %v", loc, err)
		}
	}

	// A package that does not read its locator gets it as given, and no
	// directory for it.
	rec = record(&fake{})
	a = newAdapter(t, manifest(t, ""), rec.call, Options{Getenv: getenv})
	if id, err := a.Resolve("team/inbox", nil); err != nil || id.Locator != "team/inbox" {
		t.Fatalf("a plain locator: %+v %v", id, err)
	}
	if g := rec.grants[0]; len(g.Dirs)+len(g.Env)+len(g.Programs) != 0 || g.Network || g.MemoryMiB != pack.DefaultMemoryMiB {
		t.Fatalf("a package asking nothing got %+v", g)
	}
}

// Resolve takes the account the package answers; a package that reads
// its locator may not answer another one as its identity's.
func TestResolveIdentity(t *testing.T) {
	dir := t.TempDir()
	f := &fake{resolve: func(req *contract.Request) (*contract.Answer, error) {
		return &contract.Answer{Identity: &contract.Identity{Account: "me@example.org"}}, nil
	}}
	a := newAdapter(t, manifest(t, "[permissions]\nread = [\"locator\"]\n"), Native(f), Options{})
	id, err := a.Resolve(dir, nil)
	if err != nil || id != (store.SourceIdentity{Adapter: "notes", Account: "me@example.org", Locator: dir}) {
		t.Fatalf("identity %+v %v", id, err)
	}
	f.resolve = func(req *contract.Request) (*contract.Answer, error) {
		return &contract.Answer{Identity: &contract.Identity{Locator: "/etc"}}, nil
	}
	_, err = a.Resolve(dir, nil)
	mustFail(t, err, fault.SourceFailed, "keeps that directory as its identity's locator")
	f.resolve = func(req *contract.Request) (*contract.Answer, error) { return &contract.Answer{}, nil }
	_, err = a.Resolve(dir, nil)
	mustFail(t, err, fault.SourceFailed, "without an identity")
	f.resolve = func(req *contract.Request) (*contract.Answer, error) {
		return &contract.Answer{Identity: &contract.Identity{Locator: dir, Account: "a\x1b[2Jb"}}, nil
	}
	_, err = a.Resolve(dir, nil)
	mustFail(t, err, fault.SourceFailed, "control characters")
}

// Discovery pages: each call asks for at most the page and starts at the
// last item's cursor, while the package says more follow.
func TestDiscoverPages(t *testing.T) {
	rec := record(&fake{items: 20})
	a := newAdapter(t, manifest(t, ""), rec.call, Options{})
	a.page = 7
	run := sources.Run{ID: store.SourceIdentity{Adapter: "notes", Locator: "x"}, Options: map[string]string{"since": "2020-01-01"}}
	refs, err := a.Discover(t.Context(), run, nil)
	if err != nil || len(refs) != 20 {
		t.Fatalf("%d refs %v", len(refs), err)
	}
	for i, r := range refs {
		if r.ID != itemID(i+1) || string(r.Cursor) != string(cursorOf(i+1)) || r.Size != 10 || r.Doc != nil {
			t.Fatalf("ref %d: %+v", i, r)
		}
	}
	calls := rec.calls(contract.CallDiscover)
	if len(calls) != 3 {
		t.Fatalf("%d discover calls", len(calls))
	}
	for i, q := range calls {
		want := ""
		if i > 0 {
			want = string(cursorOf(7 * i))
		}
		if string(q.Cursor) != want || q.Limit != 7 || q.Options["since"] != "2020-01-01" {
			t.Fatalf("call %d: cursor %s limit %d options %v", i, q.Cursor, q.Limit, q.Options)
		}
	}
	// From a cursor: past it.
	refs, err = a.Discover(t.Context(), run, cursorOf(18))
	if err != nil || len(refs) != 2 || refs[0].ID != itemID(19) {
		t.Fatalf("past 18: %+v %v", refs, err)
	}
	// The default page is PageItems.
	if b := newAdapter(t, manifest(t, ""), rec.call, Options{}); b.page != PageItems || b.maxRefs != MaxRefs {
		t.Fatalf("page %d, cap %d", b.page, b.maxRefs)
	}
}

// An item carrying its document is a ref with Doc, checked like a read
// one; a filtered item carries none.
func TestDiscoverCarriesDocuments(t *testing.T) {
	f := &fake{discover: func(req *contract.Request) (*contract.Answer, error) {
		return &contract.Answer{Items: []contract.Item{
			{ID: "c1", Cursor: cursorOf(1), Document: &contract.Document{Name: "commit c1", Kind: "note", Meta: "m", Units: []string{"fix the lease"}, Origin: json.RawMessage(`{"sha":"c1"}`)}},
			{ID: "c2", Cursor: cursorOf(2), Filtered: "merge", Document: &contract.Document{Name: "c2", Units: []string{"x"}}},
			{ID: "c3\nwith a line break", Cursor: cursorOf(3)}, // its name is judged when it is filed
		}}, nil
	}}
	a := newAdapter(t, manifest(t, ""), Native(f), Options{})
	refs, err := a.Discover(t.Context(), sources.Run{ID: store.SourceIdentity{Locator: "x"}}, nil)
	if err != nil || len(refs) != 3 {
		t.Fatalf("%+v %v", refs, err)
	}
	d := refs[0].Doc
	if d == nil || d.ID != "c1" || d.Name != "commit c1" || d.Room != "notes" || d.Kind != "note" || d.Meta != "m" ||
		string(d.Origin) != `{"sha":"c1"}` || d.Bytes != int64(len("fix the lease")) || refs[0].Size != d.Bytes {
		t.Fatalf("the carried document: %+v", d)
	}
	if refs[1].Doc != nil || refs[1].Filtered != "merge" || refs[2].Doc != nil {
		t.Fatalf("refs %+v", refs[1:])
	}
	// A carried document failing its checks fails alone: the discovery
	// goes on without it (the mine job reads it, and the read fails that
	// document); a name cut to length with a space at its end is trimmed.
	f.discover = func(req *contract.Request) (*contract.Answer, error) {
		return &contract.Answer{Items: []contract.Item{
			{ID: "c1", Cursor: cursorOf(1), Document: &contract.Document{Name: "../up", Units: []string{"x"}}},
			{ID: "c2", Cursor: cursorOf(2), Document: &contract.Document{Name: "c2 cut here ", Units: []string{"x"}}},
		}}, nil
	}
	refs, err = a.Discover(t.Context(), sources.Run{ID: store.SourceIdentity{Locator: "x"}}, nil)
	if err != nil || len(refs) != 2 || refs[0].Doc != nil || refs[1].Doc == nil || refs[1].Doc.Name != "c2 cut here" {
		t.Fatalf("a bad carried document and a trimmed one: %+v %v", refs, err)
	}
	f.read = func(req *contract.Request) (*contract.Answer, error) {
		return &contract.Answer{Documents: []contract.ReadResult{{ID: "c1", Document: &contract.Document{Name: "../up", Units: []string{"x"}}}}}, nil
	}
	_, err = a.Read(t.Context(), sources.Run{ID: store.SourceIdentity{Locator: "x"}}, refs[0])
	mustFail(t, err, fault.SourceFailed, `the name "../up"`)
}

// A package that does not move past its cursor, or never stops, fails
// the discovery naming the source.
func TestDiscoverRefusesHostileAnswers(t *testing.T) {
	page := func(from, n int, more bool) *contract.Answer {
		a := &contract.Answer{More: more}
		for i := from; i < from+n; i++ {
			a.Items = append(a.Items, contract.Item{ID: itemID(i), Cursor: cursorOf(i)})
		}
		return a
	}
	cases := []struct {
		name   string
		answer func(req *contract.Request) *contract.Answer
		want   string
	}{
		{"endless empty pages", func(*contract.Request) *contract.Answer { return &contract.Answer{More: true} }, "listed no items and said more follow"},
		{"the same page again", func(*contract.Request) *contract.Answer { return page(1, 5, true) }, `listed the item "item-001" twice`},
		{"new items forever", func(req *contract.Request) *contract.Answer {
			n, _ := after(req)
			return page(n+1, 5, true)
		}, "listed more than 50 items in one discovery"},
		{"more than asked", func(*contract.Request) *contract.Answer { return page(1, 6, false) }, "listed 6 items to a discover call asking for at most 5"},
		{"an item at the cursor", func(req *contract.Request) *contract.Answer {
			if len(req.Cursor) == 0 {
				return page(1, 5, true)
			}
			return &contract.Answer{Items: []contract.Item{{ID: "other", Cursor: req.Cursor}}}
		}, `listed the item "other" at the cursor it was asked to list past`},
		{"no cursor", func(*contract.Request) *contract.Answer {
			return &contract.Answer{Items: []contract.Item{{ID: "a", Cursor: json.RawMessage(`7`)}}}
		}, `listed the item "a" without a cursor`},
		{"no id", func(*contract.Request) *contract.Answer {
			return &contract.Answer{Items: []contract.Item{{Cursor: cursorOf(1)}}}
		}, "listed an item whose id"},
		{"more bytes than a discovery holds", func(req *contract.Request) *contract.Answer {
			n, _ := after(req)
			a := page(n+1, 5, true)
			for i := range a.Items {
				a.Items[i].Document = &contract.Document{Name: a.Items[i].ID, Units: []string{strings.Repeat("x", 64<<10)}}
			}
			return a
		}, "listed more than 1 MiB in one discovery"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			f := &fake{discover: func(req *contract.Request) (*contract.Answer, error) {
				if calls++; calls > 1000 {
					t.Fatal("the adapter kept calling")
				}
				return tc.answer(req), nil
			}}
			a := newAdapter(t, manifest(t, ""), Native(f), Options{})
			a.page, a.maxRefs, a.maxBytes = 5, 50, 1<<20
			refs, err := a.Discover(t.Context(), sources.Run{ID: store.SourceIdentity{Locator: "x"}}, nil)
			if refs != nil {
				t.Fatalf("refs %v beside the error", refs)
			}
			mustFail(t, err, fault.SourceFailed, tc.want)
		})
	}
}

// A package's error kinds are loci's codes: invalid the user's input,
// cursor_invalid a cursor, anything else failed; every message names the
// source and never repeats the value of a variable it was granted.
func TestErrorKinds(t *testing.T) {
	kinds := []struct {
		kind string
		code fault.Code
		want string
	}{
		{contract.ErrInvalid, fault.InputInvalid, `the source notes: "no such team`},
		{contract.ErrCursor, fault.SourceCursorInvalid, "the stored cursor is not one it reads"},
		{contract.ErrFailed, fault.SourceFailed, "its discover call failed"},
		{contract.ErrNotFound, fault.SourceFailed, "an error of kind \"not_found\""},
		{"exploded", fault.SourceFailed, `an error of kind "exploded", which contract 1 does not know`},
	}
	p := manifest(t, "[permissions]\nenv = [\"NOTES_TOKEN\"]\n")
	getenv := func(k string) (string, bool) { return "tok-SECRET-42", k == "NOTES_TOKEN" }
	for _, k := range kinds {
		t.Run(k.kind, func(t *testing.T) {
			f := &fake{discover: func(req *contract.Request) (*contract.Answer, error) {
				return nil, contract.Errorf(k.kind, "no such team; the token tok-SECRET-42 was refused\x1b[2J")
			}}
			a := newAdapter(t, p, Native(f), Options{Getenv: getenv})
			_, err := a.Discover(t.Context(), sources.Run{ID: store.SourceIdentity{Locator: "x"}}, nil)
			mustFail(t, err, k.code, k.want)
			if msg := fault.As(err).Msg; strings.Contains(err.Error(), "tok-SECRET-42") || !strings.Contains(msg, "the token [$NOTES_TOKEN] was refused") || strings.ContainsRune(msg, 0x1b) {
				t.Fatalf("the message: %q", msg)
			}
		})
	}
	// The resolve call's invalid is the user's input too.
	f := &fake{resolve: func(*contract.Request) (*contract.Answer, error) {
		return nil, contract.Errorf(contract.ErrInvalid, "no such team")
	}}
	_, err := newAdapter(t, p, Native(f), Options{}).Resolve("x", nil)
	mustFail(t, err, fault.InputInvalid, "no such team")

	// A stored cursor that is no JSON object is refused before any call.
	a := newAdapter(t, p, Native(&fake{}), Options{})
	for _, c := range []string{`"x"`, `[1]`, `{`, `7`} {
		mustFail(t, a.ParseCursor(json.RawMessage(c)), fault.SourceCursorInvalid, "not a cursor it wrote")
	}
	for _, c := range []string{``, `null`, `{"anything":1}`} {
		if err := a.ParseCursor(json.RawMessage(c)); err != nil {
			t.Fatalf("cursor %q: %v", c, err)
		}
	}
	// A foreign object is the source's to refuse, when it discovers.
	_, err = a.Discover(t.Context(), sources.Run{ID: store.SourceIdentity{Locator: "x"}}, json.RawMessage(`{"foreign":1}`))
	mustFail(t, err, fault.SourceCursorInvalid, "not my cursor")
}

// Prepare (the daemon compiling the module) runs before each call's time
// limit starts: a preparation longer than the limit fails nothing; its
// error fails the call, named.
func TestPrepareOutsideTheTimeLimit(t *testing.T) {
	p := manifest(t, "")
	run := sources.Run{ID: store.SourceIdentity{Locator: "x"}}
	prepared := 0
	slowPrepare := func(ctx context.Context) error {
		prepared++
		time.Sleep(150 * time.Millisecond)
		return nil
	}
	native := Native(&fake{})
	checked := func(ctx context.Context, g sandbox.Grants, req *contract.Request) (*contract.Answer, error) {
		if err := ctx.Err(); err != nil {
			return nil, err // the preparation ate the call's time
		}
		return native(ctx, g, req)
	}
	a := newAdapter(t, p, checked, Options{Timeout: 50 * time.Millisecond, Prepare: slowPrepare})
	if _, err := a.Discover(t.Context(), run, nil); err != nil || prepared == 0 {
		t.Fatalf("a call after a preparation longer than its limit: %v (prepared %d)", err, prepared)
	}
	failing := func(context.Context) error { return errors.New("no space left on device") }
	_, err := newAdapter(t, p, Native(&fake{}), Options{Prepare: failing}).Discover(t.Context(), run, nil)
	mustFail(t, err, fault.SourceFailed, "the source notes: could not be prepared for its discover call: no space left on device")
}

// A call past its time limit is loci::source::timeout; a caller's own
// failure is loci::source::failed; the job's own cancellation is itself.
func TestCallFailures(t *testing.T) {
	p := manifest(t, "")
	run := sources.Run{ID: store.SourceIdentity{Locator: "x"}}
	slow := func(ctx context.Context, _ sandbox.Grants, _ *contract.Request) (*contract.Answer, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	a := newAdapter(t, p, slow, Options{Timeout: 50 * time.Millisecond})
	_, err := a.Discover(t.Context(), run, nil)
	mustFail(t, err, fault.SourceTimeout, "its discover call ran past its time limit of 50ms")
	// A caller that reports the end of its context its own way (the
	// sandbox: "stopped", as for a cancelled job) is still this call's
	// timeout.
	stopped := func(ctx context.Context, _ sandbox.Grants, _ *contract.Request) (*contract.Answer, error) {
		<-ctx.Done()
		return nil, fault.New(fault.SourceFailed, "the call of the source notes was stopped", "the job was cancelled")
	}
	_, err = newAdapter(t, p, stopped, Options{Timeout: 50 * time.Millisecond}).Discover(t.Context(), run, nil)
	mustFail(t, err, fault.SourceTimeout, "ran past its time limit")
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := a.Discover(ctx, run, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	broken := func(context.Context, sandbox.Grants, *contract.Request) (*contract.Answer, error) {
		return nil, errors.New("the module trapped")
	}
	_, err = newAdapter(t, p, broken, Options{}).Discover(t.Context(), run, nil)
	mustFail(t, err, fault.SourceFailed, `its discover call failed: "the module trapped"`)
	sandboxed := func(context.Context, sandbox.Grants, *contract.Request) (*contract.Answer, error) {
		return nil, fault.New(fault.SourcePermissionDenied, "ran the program sh, which it may not", "h")
	}
	_, err = newAdapter(t, p, sandboxed, Options{}).Discover(t.Context(), run, nil)
	mustFail(t, err, fault.SourcePermissionDenied, "the source notes: ran the program sh")
	needy := func(context.Context, sandbox.Grants, *contract.Request) (*contract.Answer, error) {
		return &contract.Answer{Needs: []contract.Need{{Kind: contract.NeedRun, Program: "git"}}}, nil
	}
	_, err = newAdapter(t, p, needy, Options{}).Discover(t.Context(), run, nil)
	mustFail(t, err, fault.SourceFailed, "needs the host did not do")
	silent := func(context.Context, sandbox.Grants, *contract.Request) (*contract.Answer, error) { return nil, nil }
	_, err = newAdapter(t, p, silent, Options{}).Discover(t.Context(), run, nil)
	mustFail(t, err, fault.SourceFailed, "gave no answer")
}

// A read's results map to what the mine job counts: a document, filtered,
// gone (not found, skipped), or failed naming the source and the item.
func TestReadResults(t *testing.T) {
	f := &fake{read: func(req *contract.Request) (*contract.Answer, error) {
		a := &contract.Answer{}
		for _, it := range req.Items {
			r := contract.ReadResult{ID: it.ID}
			switch it.ID {
			case "doc":
				r.Document = &contract.Document{Name: "Doc", Room: "inbox", Kind: "note", URI: "notes://doc", Origin: json.RawMessage(`{"n":1}`),
					Meta: "rev=2", Units: []string{"a", "b\xff"}, Bytes: 99}
			case "filtered":
				r.Error = contract.Errorf(contract.ErrFiltered, "binary")
			case "gone":
				r.Error = contract.Errorf(contract.ErrNotFound, "deleted")
			case "bad":
				r.Error = contract.Errorf(contract.ErrFailed, "cannot parse")
			case "weird":
				r.Error = contract.Errorf("odd", "hm")
			case "both":
				r.Error, r.Document = contract.Errorf(contract.ErrFailed, "x"), &contract.Document{Units: []string{"x"}}
			case "neither":
			case "room":
				r.Document = &contract.Document{Room: "a/b", Units: []string{"x"}}
			case "origin":
				r.Document = &contract.Document{Origin: json.RawMessage(`[1]`), Units: []string{"x"}}
			}
			a.Documents = append(a.Documents, r)
		}
		return a, nil
	}}
	rec := record(f)
	a := newAdapter(t, manifest(t, ""), rec.call, Options{})
	ids := []string{"doc", "filtered", "gone", "bad", "weird", "both", "neither", "room", "origin"}
	refs := make([]sources.Ref, len(ids))
	for i, id := range ids {
		refs[i] = sources.Ref{ID: id, Cursor: cursorOf(i)}
	}
	res := a.ReadBatch(t.Context(), sources.Run{ID: store.SourceIdentity{Locator: "x"}}, refs)
	if n := len(rec.calls(contract.CallRead)); n != 1 {
		t.Fatalf("%d read calls for %d items", n, len(ids))
	}
	d := res[0].Doc
	if res[0].Err != nil || d.ID != "doc" || d.Name != "Doc" || d.Room != "inbox" || d.Kind != "note" || d.URI != "notes://doc" ||
		string(d.Origin) != `{"n":1}` || d.Meta != "rev=2" || strings.Join(d.Units, "|") != "a|b\uFFFD" || d.Bytes != 99 {
		t.Fatalf("the document: %+v %v", d, res[0].Err)
	}
	if why, ok := sources.IsFiltered(res[1].Err); !ok || why != "binary" {
		t.Fatalf("filtered: %v", res[1].Err)
	}
	if !errors.Is(res[2].Err, fs.ErrNotExist) || fault.Is(res[2].Err, fault.SourceFailed) || !strings.Contains(res[2].Err.Error(), `the source notes: "gone" is gone`) {
		t.Fatalf("gone: %v", res[2].Err)
	}
	for i, want := range map[int]string{3: `could not read "bad": "cannot parse"`, 4: `could not read "weird"`, 5: "both a document and an error",
		6: "neither a document nor an error", 7: `the room "a/b"`, 8: "an origin that is not a JSON object"} {
		if res[i].Doc != nil {
			t.Fatalf("%s: a document beside the error", ids[i])
		}
		mustFail(t, res[i].Err, fault.SourceFailed, want)
	}
	// Read is a batch of one.
	doc, err := a.Read(t.Context(), sources.Run{ID: store.SourceIdentity{Locator: "x"}}, refs[0])
	if err != nil || doc.Name != "Doc" {
		t.Fatalf("read: %+v %v", doc, err)
	}
}

// A read answering the wrong count or order fails its items; a call
// failing as a whole is tried in halves, so one document the module
// cannot read fails alone.
func TestReadRefusesHostileAnswers(t *testing.T) {
	run := sources.Run{ID: store.SourceIdentity{Locator: "x"}}
	refs := []sources.Ref{{ID: "a", Cursor: cursorOf(1)}, {ID: "b", Cursor: cursorOf(2)}, {ID: "c", Cursor: cursorOf(3)}}
	answers := map[string]func(req *contract.Request) *contract.Answer{
		// One result short, whatever was asked.
		"answered 2 results to a read of 3 items": func(req *contract.Request) *contract.Answer {
			a := &contract.Answer{}
			for _, it := range req.Items[:len(req.Items)-1] {
				a.Documents = append(a.Documents, contract.ReadResult{ID: it.ID, Document: &contract.Document{Units: []string{"x"}}})
			}
			return a
		},
		// In reverse order.
		`answered the item "c" where "a" was asked`: func(req *contract.Request) *contract.Answer {
			a := &contract.Answer{}
			for i := range req.Items {
				it := req.Items[len(req.Items)-1-i]
				a.Documents = append(a.Documents, contract.ReadResult{ID: it.ID, Document: &contract.Document{Units: []string{"x"}}})
			}
			return a
		},
	}
	for want, answer := range answers {
		t.Run(want, func(t *testing.T) {
			f := &fake{read: func(req *contract.Request) (*contract.Answer, error) { return answer(req), nil }}
			rec := record(f)
			res := newAdapter(t, manifest(t, ""), rec.call, Options{}).ReadBatch(t.Context(), run, refs)
			for i, r := range res {
				if r.Doc != nil {
					t.Fatalf("%s read beside a wrong answer", refs[i].ID)
				}
				mustFail(t, r.Err, fault.SourceFailed, want)
			}
			if n := len(rec.calls(contract.CallRead)); n != 1 {
				t.Fatalf("a wrong answer was asked again: %d calls", n)
			}
		})
	}

	poison := func(req *contract.Request) (*contract.Answer, error) {
		a := &contract.Answer{}
		for _, it := range req.Items {
			if it.ID == "poison" {
				return nil, errors.New("the module trapped")
			}
			a.Documents = append(a.Documents, contract.ReadResult{ID: it.ID, Document: &contract.Document{Units: []string{"text " + it.ID}}})
		}
		return a, nil
	}
	var many []sources.Ref
	for i := range 40 {
		id := itemID(i)
		if i == 17 {
			id = "poison"
		}
		many = append(many, sources.Ref{ID: id, Cursor: cursorOf(i)})
	}
	rec := record(&fake{read: poison})
	res := newAdapter(t, manifest(t, ""), rec.call, Options{}).ReadBatch(t.Context(), run, many)
	for i, r := range res {
		if i == 17 {
			mustFail(t, r.Err, fault.SourceFailed, "the module trapped")
			continue
		}
		if r.Err != nil || r.Doc.Units[0] != "text "+many[i].ID {
			t.Fatalf("%s: %+v %v", many[i].ID, r.Doc, r.Err)
		}
	}
	if n := len(rec.calls(contract.CallRead)); n > 2*len(many) {
		t.Fatalf("%d read calls for %d items", n, len(many))
	}

	// A module that fails slowly is not asked again: its chunk fails.
	rec = record(&fake{read: poison})
	slowly := func(ctx context.Context, g sandbox.Grants, req *contract.Request) (*contract.Answer, error) {
		time.Sleep(60 * time.Millisecond)
		return rec.call(ctx, g, req)
	}
	res = newAdapter(t, manifest(t, ""), slowly, Options{Timeout: 200 * time.Millisecond}).ReadBatch(t.Context(), run, many)
	for _, r := range res {
		mustFail(t, r.Err, fault.SourceFailed, "the module trapped")
	}
	if n := len(rec.calls(contract.CallRead)); n != 1 {
		t.Fatalf("%d read calls of a slow failing module", n)
	}
}

// A batch is read in calls of at most BatchItems items and BatchBytes of
// their sizes.
func TestReadBatchChunks(t *testing.T) {
	run := sources.Run{ID: store.SourceIdentity{Locator: "x"}}
	rec := record(&fake{})
	a := newAdapter(t, manifest(t, ""), rec.call, Options{})
	var refs []sources.Ref
	for i := range 600 {
		refs = append(refs, sources.Ref{ID: itemID(i), Cursor: cursorOf(i), Size: 100})
	}
	big := int64(BatchBytes/2 + 1)
	for i := range 3 {
		refs = append(refs, sources.Ref{ID: fmt.Sprintf("big-%d", i), Cursor: cursorOf(1000 + i), Size: big})
	}
	res := a.ReadBatch(t.Context(), run, refs)
	for i, r := range res {
		if r.Err != nil || r.Doc.ID != refs[i].ID {
			t.Fatalf("%d: %+v %v", i, r.Doc, r.Err)
		}
	}
	var sizes []int
	for _, q := range rec.calls(contract.CallRead) {
		sizes = append(sizes, len(q.Items))
	}
	// 600 small: 256, 256, then 88 and the first big one; two big alone.
	if fmt.Sprint(sizes) != "[256 256 89 1 1]" {
		t.Fatalf("read calls of %v items", sizes)
	}
}

// The run's credential reaches the package as the request's token, in
// its discover and read calls only (resolve has no run), and whatever
// the package answers in an error never repeats it.
func TestTheRunsTokenReachesThePackageAndNoError(t *testing.T) {
	const tok = "at-0123456789-access"
	f := &fake{items: 2, read: func(req *contract.Request) (*contract.Answer, error) {
		a := &contract.Answer{}
		for _, it := range req.Items {
			a.Documents = append(a.Documents, contract.ReadResult{ID: it.ID, Error: contract.Errorf(contract.ErrFailed, "the service refused %s", req.Token)})
		}
		return a, nil
	}}
	rec := record(f)
	a := newAdapter(t, manifest(t, ""), rec.call, Options{})
	run := sources.Run{ID: store.SourceIdentity{Locator: "x"}, Credential: sources.NewCredential("oauth", []byte(tok))}
	if _, err := a.Resolve("x", nil); err != nil {
		t.Fatal(err)
	}
	refs, err := a.Discover(t.Context(), run, nil)
	if err != nil || len(refs) != 2 {
		t.Fatalf("discover: %v %v", refs, err)
	}
	res := a.ReadBatch(t.Context(), run, refs)
	for _, r := range res {
		if r.Err == nil || strings.Contains(r.Err.Error(), tok) || !strings.Contains(r.Err.Error(), "the service refused [credential]") {
			t.Fatalf("a read error: %v", r.Err)
		}
	}
	if q := rec.calls(contract.CallResolve); len(q) != 1 || q[0].Token != "" {
		t.Fatalf("resolve carried a token: %+v", q)
	}
	for _, call := range []string{contract.CallDiscover, contract.CallRead} {
		q := rec.calls(call)
		if len(q) == 0 || q[0].Token != tok {
			t.Fatalf("%s did not carry the run's token", call)
		}
	}
	// A discover failing with the token in its message: scrubbed too.
	f.discover = func(req *contract.Request) (*contract.Answer, error) {
		return nil, contract.Errorf(contract.ErrFailed, "bad token %s", req.Token)
	}
	_, err = a.Discover(t.Context(), run, nil)
	if err == nil || strings.Contains(err.Error(), tok) || !strings.Contains(err.Error(), "bad token [credential]") {
		t.Fatalf("discover's error: %v", err)
	}
	// No credential: no token.
	rec.reqs = nil
	f.discover = nil
	if _, err := a.Discover(t.Context(), sources.Run{ID: store.SourceIdentity{Locator: "x"}}, nil); err != nil {
		t.Fatal(err)
	}
	if q := rec.calls(contract.CallDiscover); len(q) == 0 || q[0].Token != "" {
		t.Fatal("a run without credential carried a token")
	}
}
